"""Reads of the scoring flow. Nothing here ever exposes the answer's model to an expert."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Case, Count, IntegerField, Q, QuerySet, Value, When

from annotation.models import (
    Assignment,
    AssignmentStatus,
    Estimate,
    EstimateStatus,
    Triple,
)
from panels.models import Expert
from taxonomy.models import GROUP_ORDER

OPEN = (AssignmentStatus.ASSIGNED, AssignmentStatus.IN_PROGRESS)


def expert_assignments(expert: Expert) -> QuerySet[Assignment]:
    return Assignment.objects.filter(expert=expert).exclude(status=AssignmentStatus.RELEASED)


def queue_counts(expert: Expert) -> dict[str, int]:
    counts = Assignment.objects.filter(expert=expert).aggregate(
        assigned=Count("id", filter=Q(status=AssignmentStatus.ASSIGNED)),
        in_progress=Count("id", filter=Q(status=AssignmentStatus.IN_PROGRESS)),
        submitted=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED)),
    )
    counts["total"] = counts["assigned"] + counts["in_progress"] + counts["submitted"]
    return counts


def queue_page(expert: Expert, status: str | None) -> QuerySet[Assignment]:
    qs = expert_assignments(expert).select_related("answer__instruction__task", "panel")
    if status in {s.value for s in AssignmentStatus}:
        qs = qs.filter(status=status)
    # Only the columns the queue shows: long texts are never loaded for the list.
    return qs.only(
        "id",
        "status",
        "kind",
        "reserved_until",
        "submitted_at",
        "critical_stop",
        "panel__number",
        "panel__name_en",
        "panel__name_ru",
        "answer__id",
        "answer__instruction__id",
        "answer__instruction__task__name_en",
        "answer__instruction__task__name_ru",
        "answer__instruction__task__path",
    ).order_by("status", "id")


def next_assignment(expert: Expert, after: int | None = None) -> Assignment | None:
    """The next open assignment: in-progress work first, then the oldest assigned one."""
    qs = expert_assignments(expert).filter(status__in=OPEN)
    if after is not None:
        qs = qs.exclude(pk=after)
    in_progress_first = Case(
        When(status=AssignmentStatus.IN_PROGRESS, then=Value(0)),
        default=Value(1),
        output_field=IntegerField(),
    )
    return qs.order_by(in_progress_first, "id").only("id").first()


@dataclass
class CriterionRow:
    estimate: Estimate
    errors: list[str]
    score: int | None
    is_na: bool
    rationale: str
    # Resolved once here (in the active language) rather than per level in the template.
    name: str = ""
    desc: str = ""
    top: int = 0
    levels: list[tuple[int, str]] = field(default_factory=list)


def scoring_rows(
    assignment: Assignment, posted: Mapping[int, Any] | None = None, errors: Any = None
) -> list[CriterionRow]:
    """Criteria of an assignment in scoring order (critical gates first) with current values.

    `posted` carries what the expert just sent, so a rejected form shows their text again.
    """
    estimates = list(
        assignment.estimates.select_related("triple__criterion", "triple__rubric").order_by(
            "triple__position"
        )
    )
    backup = assignment.drafts_backup or {}
    # A released reservation lost its open slots; what the expert typed there is still shown
    # (read-only) from the backup, as unsaved estimates.
    present = {e.triple_id for e in estimates}
    orphan_ids = [int(k) for k in backup if k.isdigit() and int(k) not in present]
    if orphan_ids:
        for triple in Triple.objects.filter(pk__in=orphan_ids).select_related(
            "criterion", "rubric"
        ):
            estimates.append(
                Estimate(triple=triple, assignment=assignment, status=EstimateStatus.DRAFT)
            )
    order: dict[str, int] = {str(g): i for i, g in enumerate(GROUP_ORDER)}
    estimates.sort(key=lambda e: (order.get(e.triple.group, 9), e.triple.position))
    rows = []
    for estimate in estimates:
        value = (posted or {}).get(estimate.triple_id) or backup.get(str(estimate.triple_id))
        if isinstance(value, dict):
            score, is_na, rationale = value.get("score"), value.get("is_na"), value.get("rationale")
        elif value is not None:
            score, is_na, rationale = value.score, value.is_na, value.rationale
        else:
            score, is_na, rationale = estimate.score, estimate.is_na, estimate.rationale
        rubric = estimate.triple.rubric
        criterion = estimate.triple.criterion
        values = rubric.values
        rows.append(
            CriterionRow(
                estimate=estimate,
                errors=(errors or {}).get(estimate.triple_id, []),
                score=score,
                is_na=bool(is_na),
                rationale=rationale or "",
                name=criterion.name,
                desc=criterion.desc,
                top=max(values),
                levels=[(v, rubric.level_text(v)) for v in values],
            )
        )
    return rows
