"""Pairing: answer pairs made from the answers already on the platform.

:func:`pairs_make` takes, for each instruction with answers of at least two models, one random
pair ("random", as REPA) or every pair of models ("all"), placed A/B at random, drawn from a seed
the result records; a pair that exists, in either order, is not made again. Imported pairs are
`material.pairs`'.
"""

from __future__ import annotations

import itertools
import random
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from jobs.models import Job, JobKind
from jobs.services import enqueue
from material.import_common import (
    BATCH_SIZE,
    PROGRESS_TOTAL,
    READ_SHARE,
    Progress,
    Throttle,
    advisory_lock,
    chunks,
)
from material.models import Answer, AnswerPair

SCHEMES = ("random", "all")


@dataclass
class PairMakeReport:
    scheme: str
    seed: int
    # Instructions with answers of at least two models (the ones that can be paired).
    instructions: int = 0
    created: int = 0
    # Pairs the scheme drew that were stored already, in either order.
    existing: int = 0
    # "random": instructions left alone because they have a pair already.
    already_paired: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "scheme": self.scheme,
            "seed": self.seed,
            "instructions": self.instructions,
            "created": self.created,
            "existing": self.existing,
            "already_paired": self.already_paired,
            "seconds": round(self.seconds, 3),
        }


def pairs_make(
    *,
    scheme: str,
    instruction_ids: Iterable[int] | None = None,
    seed: int | None = None,
    progress: Progress | None = None,
) -> PairMakeReport:
    """Pair the answers on the platform, per instruction with answers of ≥ 2 distinct models.

    "random": one pair of two distinct models drawn at random, A/B placement random (REPA's
    design); an instruction that has a pair already (imported or made) gets none, so running
    it again, with any seed, adds nothing. "all": every unordered pair of its models once,
    each placed A/B at random; a pair stored in either order is not made again. A model with
    several answers to one instruction takes part with its earliest.

    Draws come from `seed` (a random one when None; the report carries it) mixed with the
    instruction's id, so an instruction gets the same pair whichever others are paired with it.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown pairing scheme {scheme!r}")
    started = time.monotonic()
    seed = secrets.randbelow(2**31) if seed is None else seed
    report = PairMakeReport(scheme=scheme, seed=seed)
    notify = Throttle(progress)
    notify(0, force=True)
    with transaction.atomic():
        advisory_lock()
        # Exam and control copies (work.ReservedAnswer, reached by its reverse name; material
        # imports nothing of work) are frozen material, never paired as work.
        answers = Answer.objects.filter(reserved__isnull=True).order_by(
            "instruction_id", "model_id", "pk"
        )
        if instruction_ids is not None:
            answers = answers.filter(instruction_id__in=list(instruction_ids))
        # instruction -> {model: its earliest answer}
        by_instruction: dict[int, dict[int, int]] = {}
        for pk, instruction_id, model_id in answers.values_list("pk", "instruction_id", "model_id"):
            by_instruction.setdefault(instruction_id, {}).setdefault(model_id, pk)
        eligible = {i: m for i, m in by_instruction.items() if len(m) >= 2}
        report.instructions = len(eligible)
        notify(READ_SHARE // 2, force=True)

        paired: set[int] = set()
        stored: set[frozenset[int]] = set()
        for chunk in chunks(sorted(eligible)):
            for instruction_id, a, b in AnswerPair.objects.filter(
                instruction_id__in=chunk
            ).values_list("instruction_id", "answer_a_id", "answer_b_id"):
                paired.add(instruction_id)
                stored.add(frozenset((a, b)))
        new: list[AnswerPair] = []
        source = f"pairs_make:{scheme}:seed={seed}"
        for instruction_id in sorted(eligible):
            if scheme == "random" and instruction_id in paired:
                report.already_paired += 1
                continue
            rng = random.Random(f"{seed}:{instruction_id}")  # noqa: S311 -- reproducible draws
            models = eligible[instruction_id]
            ordered = [models[m] for m in sorted(models)]
            if scheme == "random":
                # sample() returns the two in a random order: that order is the placement.
                drawn = [tuple(rng.sample(ordered, 2))]
            else:
                drawn = [
                    (a, b) if rng.random() < 0.5 else (b, a)
                    for a, b in itertools.combinations(ordered, 2)
                ]
            for a, b in drawn:
                if frozenset((a, b)) in stored:
                    report.existing += 1
                    continue
                stored.add(frozenset((a, b)))
                new.append(
                    AnswerPair(
                        instruction_id=instruction_id, answer_a_id=a, answer_b_id=b, source=source
                    )
                )
        notify(READ_SHARE, force=True)
        AnswerPair.objects.bulk_create(new, batch_size=BATCH_SIZE)
        report.created = len(new)
    report.seconds = time.monotonic() - started
    notify(PROGRESS_TOTAL, force=True)
    return report


def pairs_make_summary(report: PairMakeReport) -> str:
    return _(
        "Scheme %(scheme)s, seed %(seed)s: %(n)s instructions with answers of two or more "
        "models; created %(created)s pairs, %(existing)s already present, %(paired)s "
        "instructions already paired."
    ) % {
        "scheme": report.scheme,
        "seed": report.seed,
        "n": report.instructions,
        "created": report.created,
        "existing": report.existing,
        "paired": report.already_paired,
    }


def pairs_make_job_create(*, scheme: str, seed: int | None, user_id: int | None) -> Job:
    """Queue a pairing Job. The seed is drawn here when not given, so the job's params hold
    the one it runs with (a redelivered task draws the same pairs)."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown pairing scheme {scheme!r}")
    seed = secrets.randbelow(2**31) if seed is None else seed
    return enqueue(
        JobKind.PAIR_MAKE,
        {"scheme": scheme, "seed": seed},
        progress_total=PROGRESS_TOTAL,
        created_by_id=user_id,
    )
