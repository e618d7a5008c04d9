"""Reads of the scoring flow. Nothing here ever exposes the answer's model to an expert."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Case, Count, Exists, IntegerField, OuterRef, Q, QuerySet, Value, When
from django.utils.translation import get_language

from panels.models import Expert, Membership
from taxonomy.models import GROUP_ORDER, CriterionGroup, best_of
from work import entries
from work.models import (
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    Estimate,
    EstimateStatus,
    Triple,
    TripleKind,
)

OPEN = (AssignmentStatus.ASSIGNED, AssignmentStatus.IN_PROGRESS)


# The one order of an expert's work, for the queue list and "open the next answer": what they
# started first, then what waits for them, then what is done (the status names' alphabetical
# order would put "assigned" before "in progress").
_WORK_ORDER = Case(
    When(status=AssignmentStatus.IN_PROGRESS, then=Value(0)),
    When(status=AssignmentStatus.ASSIGNED, then=Value(1)),
    When(status=AssignmentStatus.SUBMITTED, then=Value(2)),
    default=Value(3),
    output_field=IntegerField(),
)


def kind_shown_to_expert(kind: str) -> str:
    """What an expert is told of an assignment's kind: exams are announced (their own flow),
    a control item is silent, so it is "work" like the real work it must be mistaken for."""
    return AssignmentKind.EXAM if kind == AssignmentKind.EXAM else AssignmentKind.WORK


def blind_answer_ids(user: Any) -> QuerySet[Assignment, Any]:
    """Answers the user holds open as an expert (any panel): other experts' scores of them stay
    hidden from him wherever he could see scores (the console), until his own are submitted.

    Blindness holds for every combination of roles: a supervisor who is also an expert, in the
    same panel or another, scores blind like everyone else.
    """
    return Assignment.objects.filter(expert__user_id=user.pk, status__in=OPEN).values("answer_id")


def expert_assignments(expert: Expert) -> QuerySet[Assignment]:
    return Assignment.objects.filter(expert=expert).exclude(status=AssignmentStatus.RELEASED)


def queue_counts(expert: Expert) -> dict[str, int]:
    """Entries by status: an answer scored for several panels on one page counts once."""
    entries_only = entries.with_state_class(Assignment.objects.filter(expert=expert)).exclude(
        entries.not_entry_lead()
    )
    counts = entries_only.aggregate(
        assigned=Count("id", filter=Q(status=AssignmentStatus.ASSIGNED)),
        in_progress=Count("id", filter=Q(status=AssignmentStatus.IN_PROGRESS)),
        submitted=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED)),
    )
    counts["total"] = counts["assigned"] + counts["in_progress"] + counts["submitted"]
    return counts


def queue_page(expert: Expert, status: str | None) -> QuerySet[Assignment]:
    """The expert's queue, one row per entry (work.entries: an answer's work for several panels
    is scored on one page); `entries.entry_panels` names the panels of a page's rows."""
    qs = (
        entries.with_state_class(expert_assignments(expert))
        .exclude(entries.not_entry_lead())
        .select_related("answer__instruction__task", "panel")
    )
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
        "pair",
        "expert",
        "locked",
        "panel__number",
        "panel__name_en",
        "panel__name_ru",
        "answer__id",
        "answer__instruction__id",
        "answer__instruction__task__name_en",
        "answer__instruction__task__name_ru",
        "answer__instruction__task__path",
    ).order_by(_WORK_ORDER, "id")


def paused_panels(expert: Expert) -> list[Any]:
    """Panels where the expert is paused (their work cannot be opened): for the queue's note."""
    return [
        m.panel
        for m in Membership.objects.filter(expert=expert, is_paused=True).select_related("panel")
    ]


def next_assignment_id(
    user_id: int, after: int | None = None, *, pairs_only: bool = False
) -> int | None:
    """The user's next open assignment: in-progress work first, then the oldest assigned one;
    with `pairs_only`, only side-by-side pairs (the side-by-side page's "next pair").

    None when there is none, or when the user has no expert profile: "open the next answer"
    runs this after every submission, so it is one query through the expert's user (ids only),
    and a caller that finds nothing checks the role itself. Work of panels where the expert is
    paused is skipped (it cannot be opened).
    """
    # An exam is its own flow (panels.selectors.exam_position): regular work never opens one.
    paused = Membership.objects.filter(
        expert_id=OuterRef("expert_id"), panel_id=OuterRef("panel_id"), is_paused=True
    )
    qs = (
        Assignment.objects.filter(expert__user_id=user_id, status__in=OPEN)
        .exclude(kind=AssignmentKind.EXAM)
        .exclude(Exists(paused))
    )
    if after is not None:
        qs = qs.exclude(pk=after)
    if pairs_only:
        qs = qs.filter(pair__isnull=False)
    return qs.order_by(_WORK_ORDER, "id").values_list("id", flat=True).first()


# The columns the scoring page shows of an estimate, its triple, criterion and rubric version.
_PAGE_ESTIMATE_COLUMNS = (
    "triple_id",
    "status",
    "score",
    "is_na",
    "rationale",
    "time_spent_ms",
)
_PAGE_TRIPLE_COLUMNS = (
    "group",
    "position",
    "criterion__key",
    "criterion__name_ru",
    "criterion__name_en",
    "criterion__desc_ru",
    "criterion__desc_en",
    "criterion__allows_na",
    "rubric__levels",
    "rubric__best_end",
)


def _pick(lang: str, ru: str, en: str) -> str:
    # The same choice as BilingualMixin and Rubric.level_text: Russian unless English is active.
    return (en or ru) if lang == "en" else (ru or en)


# Whose criterion it is, on a page that shows an entry of several panels (work.entries).
_PAGE_OWNER_COLUMNS = (
    "assignment_id",
    "assignment__status",
    "assignment__panel__number",
    "assignment__panel_id",
)


def scoring_rows(
    assignment: Assignment,
    posted: Mapping[int, Any] | None = None,
    errors: Any = None,
    *,
    entry: bool = False,
) -> list[dict[str, Any]]:
    """Criteria of an assignment in scoring order (critical gates first) with current values:
    the one builder of the scoring page and the scoring API (work.api shapes its JSON from it).

    `posted` carries what the expert just sent, so a rejected form shows their text again.
    Read with one values_list query (a second one only for drafts orphaned by a released
    reservation), without model instances, and resolved to display strings here, so that the
    template needs no attribute lookups, number formatting or further queries; the raw values
    the API needs (`triple_id`, `key`, `score`) ride along.
    """
    # Rubric rows only: a side-by-side assignment's triples have no criterion or rubric (its
    # page reads work.comparisons.comparison_rows), so it has no rows here.
    # `entry`: the criteria of the expert's other panels on this answer too (the page scores
    # them together, work.entries), read in the same query; the API keeps one assignment.
    scope = Q(assignment__in=entries.entry_of(assignment)) if entry else Q(assignment=assignment)
    records: list[tuple[Any, ...]] = list(
        Estimate.objects.filter(scope, triple__kind=TripleKind.POINTWISE).values_list(
            *_PAGE_ESTIMATE_COLUMNS,
            *(f"triple__{c}" for c in _PAGE_TRIPLE_COLUMNS),
            *_PAGE_OWNER_COLUMNS,
        )
    )
    backup = assignment.drafts_backup or {}
    # A released reservation lost its open slots; what the expert typed there is still shown
    # (read-only) from the backup, as unsaved drafts.
    present = {r[0] for r in records}
    orphan_ids = [int(k) for k in backup if k.isdigit() and int(k) not in present]
    if orphan_ids:
        owner = (assignment.pk, assignment.status, assignment.panel.number, assignment.panel_id)
        for triple in Triple.objects.filter(
            pk__in=orphan_ids, kind=TripleKind.POINTWISE
        ).values_list("id", *_PAGE_TRIPLE_COLUMNS):
            records.append(
                (triple[0], EstimateStatus.DRAFT, None, False, "", 0, *triple[1:], *owner)
            )
    order: dict[str, int] = {str(g): i for i, g in enumerate(GROUP_ORDER)}
    records.sort(key=lambda r: (order.get(r[6], 9), r[7], r[0]))
    lang = (get_language() or "ru")[:2]
    group_labels = {str(value): str(label) for value, label in CriterionGroup.choices}
    posted = posted or {}
    errors = errors or {}
    rows = []
    for record in records:
        (triple_id, status, score, is_na, rationale, time_spent_ms, group, _position) = record[:8]
        key, name_ru, name_en, desc_ru, desc_en, allows_na, levels, best_end = record[8:16]
        owner_id, owner_status, panel_number, panel_id = record[16:]
        value = posted.get(triple_id) or backup.get(str(triple_id))
        if isinstance(value, dict):
            score, is_na, rationale = value.get("score"), value.get("is_na"), value.get("rationale")
        elif value is not None:
            score, is_na, rationale = value.score, value.is_na, value.rationale
        is_na = bool(is_na)
        values = [int(level["value"]) for level in levels]
        rows.append(
            {
                "triple_id": triple_id,
                "key": key,
                "score": score,
                "tid": str(triple_id),
                "group": group,
                "group_label": group_labels.get(group, group),
                "status": status,
                "name": _pick(lang, name_ru, name_en),
                "desc": _pick(lang, desc_ru, desc_en),
                "top": str(max(values)),
                # The score a one-word rationale may justify (0 on the critical gates).
                "best": str(best_of(values, best_end)),
                "levels": [
                    {
                        "value": str(v),
                        "text": str(_pick(lang, level.get("ru") or "", level.get("en") or "")),
                        "on": score == v and not is_na,
                    }
                    for v, level in zip(values, levels, strict=True)
                ],
                "allows_na": allows_na,
                "is_na": is_na,
                "rationale": rationale or "",
                "time": str(time_spent_ms),
                "errors": errors.get(triple_id, []),
                "assignment_id": owner_id,
                "assignment_status": owner_status,
                "panel": panel_number,
                "panel_id": panel_id,
            }
        )
    return rows
