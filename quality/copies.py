"""Frozen copies of answers for exams and control items, scored like work, and score matching.

Every candidate attempt and every control delivery gets Answer rows of its own (listed in
ReservedAnswer), with triples of overlap 1 and the expert estimate in slot 1. Real work never
sees these answers and they never take real slots.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from material.models import Answer, AnswerPair
from panels.models import Expert, Panel
from taxonomy.models import ComparisonCriterion, Criterion, Rubric
from work.models import (
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    Estimate,
    ReservedAnswer,
    Triple,
    TripleKind,
)


def _deadline(kind: str) -> Any:
    """A copy's reservation deadline: control items are reserved (and expire) like real work,
    since a copy that never expires or carries no deadline would tell itself apart; exam items
    have none (the attempt is their frame)."""
    if kind != AssignmentKind.CONTROL:
        return None
    return timezone.now() + timedelta(hours=settings.POLLUX["ASSIGNMENT_RESERVATION_HOURS"])


def scores_match(
    *,
    ref_score: int | None,
    ref_na: bool,
    score: int | None,
    is_na: bool,
    scale: Sequence[int],
    tolerance: int = 0,
) -> bool:
    """Whether a candidate's value equals the reference one.

    NA is a value of its own (NA equals only NA). A missing score (a criterion skipped after a
    critical violation) matches nothing. The tolerance applies to 0..4 scales only: on binary
    and 0/1/2 scales a one-point slip is the whole difference between verdicts.
    """
    if ref_na or is_na:
        return ref_na and is_na
    if score is None or ref_score is None:
        return False
    wide = bool(scale) and max(scale) - min(scale) >= 4
    allowed = tolerance if wide else 0
    return abs(score - ref_score) <= allowed


def answers_copy(*, sources: Sequence[Any], purpose: str) -> list[Any]:
    """Frozen copies of answers (same instruction, model and text), listed as reserved."""

    copies = Answer.objects.bulk_create(
        [
            Answer(
                instruction_id=src.instruction_id,
                model_id=src.model_id,
                text=src.text,
                generation_meta=src.generation_meta,
                # Unique per copy: the natural-key constraint must not merge copies.
                text_hash=f"{purpose}-{uuid.uuid4().hex}",
            )
            for src in sources
        ]
    )
    ReservedAnswer.objects.bulk_create(
        [
            ReservedAnswer(
                answer_id=copy.pk,
                purpose=purpose,
                source_id=src.pk,
            )
            for copy, src in zip(copies, sources, strict=True)
        ]
    )
    return copies


def pairs_copy(*, sources: Sequence[AnswerPair], purpose: str) -> list[AnswerPair]:
    """Frozen copies of pairs: both answers copied (listed as reserved), same instruction,
    category and orientation, so a label of the copy means what it means on the source."""

    answers = answers_copy(
        sources=[a for p in sources for a in (p.answer_a, p.answer_b)], purpose=purpose
    )
    return AnswerPair.objects.bulk_create(
        [
            AnswerPair(
                instruction_id=src.instruction_id,
                answer_a_id=answers[2 * n].pk,
                answer_b_id=answers[2 * n + 1].pk,
                category=src.category,
                source=f"{purpose} copy of pair {src.pk}",
            )
            for n, src in enumerate(sources)
        ]
    )


@dataclass
class ScoringSpec:
    """What one copy is scored on: (criterion, rubric) pairs in scoring order."""

    criteria: list[tuple[Criterion, Rubric]]


def scoring_material_create(
    *,
    expert: Expert,
    panel: Panel,
    kind: str,
    copies: Sequence[Any],
    specs: Sequence[ScoringSpec],
) -> list[Any]:
    """Triples (overlap 1), one assignment per copy and the expert's slot-1 estimates."""

    triples: list[Triple] = []
    for copy, spec in zip(copies, specs, strict=True):
        for position, (criterion, rubric) in enumerate(spec.criteria):
            triples.append(
                Triple(
                    answer_id=copy.pk,
                    criterion_id=criterion.pk,
                    rubric_id=rubric.pk,
                    group=criterion.group,
                    panel_id=panel.pk,
                    required_overlap=1,
                    position=position,
                )
            )
    Triple.objects.bulk_create(triples)
    deadline = _deadline(kind)
    assignments = Assignment.objects.bulk_create(
        [
            Assignment(
                expert_id=expert.pk,
                answer_id=copy.pk,
                panel_id=panel.pk,
                kind=kind,
                status=AssignmentStatus.ASSIGNED,
                reserved_until=deadline,
            )
            for copy in copies
        ]
    )
    by_answer = {a.answer_id: a.pk for a in assignments}
    Estimate.objects.bulk_create(
        [
            Estimate(
                triple_id=t.pk,
                assignment_id=by_answer[t.answer_id],
                expert_id=expert.pk,
                slot=1,
            )
            for t in triples
        ]
    )
    return assignments


def comparison_material_create(
    *,
    expert: Expert,
    panel: Panel,
    kind: str,
    pairs: Sequence[AnswerPair],
    criteria: Sequence[Sequence[ComparisonCriterion]],
    rng: random.Random,
) -> list[Assignment]:
    """The side-by-side counterpart of `scoring_material_create`: per pair copy, pairwise
    triples of overlap 1 (one per comparison criterion), one assignment with the placement drawn
    from `rng` (as the work builder draws it) and the expert's slot-1 estimates."""

    triples = [
        Triple(
            kind=TripleKind.PAIRWISE,
            answer_id=pair.answer_a_id,
            pair_id=pair.pk,
            comparison_criterion=criterion,
            group="",
            panel_id=panel.pk,
            required_overlap=1,
            position=criterion.position,
        )
        for pair, pair_criteria in zip(pairs, criteria, strict=True)
        for criterion in pair_criteria
    ]
    Triple.objects.bulk_create(triples)
    deadline = _deadline(kind)
    assignments = Assignment.objects.bulk_create(
        [
            Assignment(
                expert_id=expert.pk,
                answer_id=pair.answer_a_id,
                pair_id=pair.pk,
                panel_id=panel.pk,
                kind=kind,
                status=AssignmentStatus.ASSIGNED,
                reserved_until=deadline,
                swapped=rng.random() < 0.5,
            )
            for pair in pairs
        ]
    )
    by_pair = {a.pair_id: a.pk for a in assignments}
    Estimate.objects.bulk_create(
        [
            Estimate(
                triple_id=t.pk,
                assignment_id=by_pair[t.pair_id],
                expert_id=expert.pk,
                slot=1,
            )
            for t in triples
        ]
    )
    return assignments
