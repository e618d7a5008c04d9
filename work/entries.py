"""One entry per answer: an expert's rubric work on one answer for several panels, scored on one
page and listed once in his queue (issue #18).

The unit of work stays the assignment (expert × answer × panel): each criterion is still counted
for its panel, reserved, released, reviewed and locked with its own assignment. An *entry* only
groups, for the expert's eyes, the assignments that belong together:

- the same expert, the same answer, the same kind (work with work, a control item with control
  items: a control item is scored and counted apart, and a critical stop is per kind already,
  see work.services._same_answer_work);
- rubric work only: an exam item is its own sequence and a side-by-side pair its own page, so
  either makes an entry of one;
- the same state class: open (assigned or in progress) with open, submitted with submitted, and
  locked with locked; a supervisor's return reopens only the returned assignment, which then is
  an entry of its own until it is submitted again;
- not of a panel where the expert is paused (that work is not opened at all).

The rule is written once, as a query built from the lead assignment's key alone (scalar
subqueries): the page, the submission, drafts, the supervisor's return notice and the queue all
read the entry in the same statement that reads their rows, so a page of one panel costs no
query more than before.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import (
    Case,
    CharField,
    Exists,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.utils import timezone

from panels.models import Membership, Panel
from work import kinds
from work.models import Assignment, AssignmentKind, AssignmentStatus

OPEN = (AssignmentStatus.ASSIGNED, AssignmentStatus.IN_PROGRESS)


def _state_class() -> Case:
    # Assigned and in progress are one class: opening an entry starts all of it, but a sibling
    # may still be "assigned" when the lead was opened before it arrived.
    return Case(
        When(status__in=OPEN, then=Value("open")),
        default=F("status"),
        output_field=CharField(),
    )


def _paused() -> Exists:
    return Exists(
        Membership.objects.filter(
            expert_id=OuterRef("expert_id"), panel_id=OuterRef("panel_id"), is_paused=True
        )
    )


# The fields an assignment shares with the others of its entry (`state_class` annotated).
ENTRY_KEY = ("expert_id", "answer_id", "kind", "locked", "state_class")


def _candidates() -> QuerySet[Assignment]:
    """Assignments that can be grouped at all: rubric work, not released, not paused."""
    return (
        Assignment.objects.annotate(state_class=_state_class())
        .filter(pair__isnull=True)
        .exclude(kind=AssignmentKind.EXAM)
        .exclude(status=AssignmentStatus.RELEASED)
        .exclude(_paused())
    )


def _grouped(lead: Callable[[str], Any]) -> QuerySet[Assignment]:
    """The rule itself: the assignments grouped with a lead whose fields `lead(name)` gives (a
    scalar subquery of a lead read by key, or an OuterRef of an enclosing query annotated with
    `state_class`). The lead's being rubric work (no pair) is its caller's condition."""
    return _candidates().filter(**{name: lead(name) for name in ENTRY_KEY})


def entry_panels(expert_id: int, leads: Iterable[Assignment]) -> dict[int, list[str]]:
    """The panels of each listed lead's entry (by the lead's key), "number · name" in the active
    language, in one query: the queue shows one row per entry and names every panel the answer
    is scored for there, as it names the one panel of a single-panel row."""
    leads = [a for a in leads if kinds.of(a).in_entry and a.kind != AssignmentKind.EXAM]
    if not leads:
        return {}
    panels: dict[tuple[Any, ...], set[tuple[int, str, str]]] = defaultdict(set)
    for *key, number, name_en, name_ru in (
        _candidates()
        .filter(expert_id=expert_id, answer_id__in={a.answer_id for a in leads})
        .values_list(*ENTRY_KEY, "panel__number", "panel__name_en", "panel__name_ru")
    ):
        panels[tuple(key)].add((number, name_en, name_ru))
    return {
        a.pk: [
            f"{number} · {Panel(name_en=en, name_ru=ru).name}"
            for number, en, ru in sorted(panels.get(tuple(getattr(a, n) for n in ENTRY_KEY), ()))
        ]
        for a in leads
    }


def state_class_of(status: str) -> str:
    """The state class of a status in Python: what `_state_class` computes in SQL."""
    return "open" if status in OPEN else status


def entry_of(lead: int | Assignment) -> QuerySet[Assignment]:
    """The assignments that make one entry with the lead (the lead included), as one query.

    A lead that is an exam item, a side-by-side pair or released is an entry of one. Given by
    key, the lead's fields are read in the same statement (scalar subqueries); given as a loaded
    assignment (the scoring page has it), they are plain values, a query PostgreSQL plans and
    Django compiles several times faster.
    """
    if isinstance(lead, Assignment):
        if not kinds.of(lead).in_entry:
            # A pair's "answer" is its first text: its comparison is no part of the pointwise
            # work on that text.
            return Assignment.objects.filter(pk=lead.pk)
        values = {
            "expert_id": lead.expert_id,
            "answer_id": lead.answer_id,
            "kind": lead.kind,
            "locked": lead.locked,
            "state_class": state_class_of(lead.status),
        }
        grouped = _grouped(values.__getitem__)
        return Assignment.objects.filter(
            Q(pk=lead.pk) | Q(pk__in=grouped.values("pk")),
            expert_id=lead.expert_id,
            answer_id=lead.answer_id,
        )
    row = Assignment.objects.filter(pk=lead).annotate(state_class=_state_class())
    grouped = _grouped(lambda name: Subquery(row.values(name)[:1])).filter(
        # The lead must itself be rubric work (as above).
        Exists(row.filter(pair__isnull=True))
    )
    # The lead's expert and answer narrow the rows first (the unique (expert, answer, panel,
    # kind) index): without them PostgreSQL read every assignment to test the OR (420 ms at
    # POLLUX scale instead of under 1 ms).
    return Assignment.objects.filter(
        Q(pk=lead) | Q(pk__in=grouped.values("pk")),
        expert_id=Subquery(row.values("expert_id")[:1]),
        answer_id=Subquery(row.values("answer_id")[:1]),
    )


def not_entry_lead() -> Q:
    """Filter: the assignment is not the first (lowest key) of its entry, so a list that shows
    one row per entry leaves it out. The list's query must be annotated with `state_class`
    (`with_state_class`)."""
    earlier = _grouped(OuterRef).filter(pk__lt=OuterRef("pk"))
    return Q(pair__isnull=True) & ~Q(kind=AssignmentKind.EXAM) & Q(Exists(earlier))


def with_state_class(qs: QuerySet[Assignment]) -> QuerySet[Assignment]:
    return qs.annotate(state_class=_state_class())


def entry_open(lead: Assignment, assigned_ids: Iterable[int]) -> None:
    """Start the entry's other assignments still waiting ("assigned") with the lead: the expert
    opened their answer (work.services.assignment_open starts the lead itself)."""
    ids = [pk for pk in assigned_ids if pk != lead.pk]
    if not ids:
        return
    Assignment.objects.filter(pk__in=ids, status=AssignmentStatus.ASSIGNED).update(
        status=AssignmentStatus.IN_PROGRESS,
        started_at=timezone.now(),
        reserved_until=lead.reserved_until,
    )


@dataclass(frozen=True)
class EntryPart:
    """One assignment of an entry with its criteria (triple ids), as the submission reads it."""

    assignment_id: int
    triple_ids: list[int]
    has_gates: bool


def split_items(parts: list[EntryPart], items: list[Any]) -> list[tuple[EntryPart, list[Any]]]:
    """The submitted items of each assignment, the one holding the critical gates first: its
    stop (a violation) then carries to the others (work.services._carry_critical_stop), which
    are submitted after it exactly as if the expert had scored them on their own pages."""
    owner = {tid: part.assignment_id for part in parts for tid in part.triple_ids}
    by_assignment: dict[int, list[Any]] = defaultdict(list)
    for item in items:
        by_assignment[owner[item.triple_id]].append(item)
    ordered = sorted(parts, key=lambda p: (not p.has_gates, p.assignment_id))
    return [(part, by_assignment.get(part.assignment_id, [])) for part in ordered]


def time_shares(parts: list[EntryPart], total_ms: int) -> dict[int, int]:
    """The page's time split over the entry's assignments by their number of criteria: each
    panel's statistics count the time spent on its own criteria, and the sum is the page's."""
    criteria = sum(len(p.triple_ids) for p in parts) or 1
    return {p.assignment_id: total_ms * len(p.triple_ids) // criteria for p in parts}
