"""The human baseline (POLLUX Appendix N): experts of a panel answer a sample of instructions;
"The answers to the instructions were written by panel experts and scored by non-overlapping
expert groups." A submitted answer enters the pool as the answer of the "Human baseline" model;
its author gets no work on it (registered in work.hooks.excluded_experts), whichever panel it
is routed to.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from authoring.models import BaselineAnswer
from authoring.services import AuthoringError
from material.import_common import sha256_hex
from material.models import Answer, Instruction, LanguageModel
from panels.models import Expert, Membership, Panel
from protocol import authoring as rules

HUMAN_MODEL = ("Human baseline", "experts")
MAX_SAMPLE = 10_000


def human_model() -> LanguageModel:
    model, _created = LanguageModel.objects.get_or_create(
        name=HUMAN_MODEL[0], version=HUMAN_MODEL[1], defaults={"provider": "panel experts"}
    )
    return model


def panel_writers(panel: Panel) -> list[Expert]:
    return [
        m.expert
        for m in Membership.objects.filter(panel=panel, can_author=True, is_paused=False)
        .select_related("expert")
        .order_by("expert__pseudonym")
    ]


@transaction.atomic
def baseline_sample(*, panel: Panel, size: int, user: Any, seed: int = 0) -> list[BaselineAnswer]:
    """Give `size` instructions of the panel's task groups, not yet in the baseline, to the
    panel's writers in turn — never an instruction to its own author."""
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_SAMPLE:
        raise AuthoringError(
            _("a sample of 1 to %(max_sample)s instructions")
            % {"max_sample": format(MAX_SAMPLE, ",")},
            "size",
        )
    writers = panel_writers(panel)
    if not writers:
        raise AuthoringError(_("the panel has no expert who writes"), "size", status=409)
    groups = list(panel.tasks.filter(level=0).values_list("path", flat=True))
    taken = BaselineAnswer.objects.values("instruction_id")
    pool = [
        (pk, author)
        for pk, path, author in Instruction.objects.filter(task__isnull=False)
        .exclude(pk__in=taken)
        .values_list("pk", "task__path", "author")
        .order_by("pk")
        if any(path == g or path.startswith(g + " / ") for g in groups)
    ]
    random.Random(seed).shuffle(pool)  # noqa: S311  (a reproducible sample, not a secret)
    made: list[BaselineAnswer] = []
    turn = 0
    for pk, author in pool:
        if len(made) >= size:
            break
        for step in range(len(writers)):
            expert = writers[(turn + step) % len(writers)]
            if expert.pseudonym != author:
                made.append(
                    BaselineAnswer(panel=panel, instruction_id=pk, expert=expert, created_by=user)
                )
                turn = (turn + step + 1) % len(writers)
                break
    BaselineAnswer.objects.bulk_create(made)
    return made


def _check_text(text: Any, *, submitting: bool) -> str:
    if not isinstance(text, str):
        raise AuthoringError(_("must be text"), "text")
    if len(text) > rules.MAX_TEXT_CHARS:
        raise AuthoringError(
            _("at most %(max)s characters") % {"max": format(rules.MAX_TEXT_CHARS, ",")},
            "text",
        )
    if "\x00" in text:
        raise AuthoringError(_("contains a NUL character"), "text")
    if submitting and not text.strip():
        raise AuthoringError(_("is required to submit"), "text")
    return text


@transaction.atomic
def baseline_save(*, item: BaselineAnswer, text: Any, submit: bool, user: Any) -> BaselineAnswer:
    item = BaselineAnswer.objects.select_for_update().get(pk=item.pk)
    if item.state != BaselineAnswer.State.DRAFT:
        raise AuthoringError(_("the answer is submitted already"), status=409)
    item.text = _check_text(text, submitting=submit)
    if submit:
        answer, _created = Answer.objects.get_or_create(
            instruction_id=item.instruction_id,
            model=human_model(),
            text_hash=sha256_hex(item.text),
            defaults={
                "text": item.text,
                "external_id": f"human-{item.pk}",
                "generation_meta": {"human_baseline": True, "author": item.expert.pseudonym},
            },
        )
        item.answer = answer
        item.state = BaselineAnswer.State.SUBMITTED
    item.save()
    return item


def authored_answers(answer_ids: Sequence[int] | None) -> set[tuple[int, int]]:
    """(answer, expert) pairs of the baseline: its author never scores it."""
    rows = BaselineAnswer.objects.filter(answer__isnull=False)
    if answer_ids is not None:
        rows = rows.filter(answer_id__in=answer_ids)
    return {(a, e) for a, e in rows.values_list("answer_id", "expert_id")}
