"""Reads of instruction writing: the author's, reviewer's and editor's queues, the dashboard
against the plan, return rate and reviewer agreement."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.db.models.functions import Length
from django.urls import reverse
from django.utils.translation import gettext as _

from authoring.models import BaselineAnswer, Campaign, Review, Slot, SlotEvent, SlotState
from authoring.services import current_plan
from panels.models import Expert, Panel
from protocol import authoring as rules

# States counted as "in review" on the dashboard: written, not yet accepted.
IN_REVIEW = (SlotState.SUBMITTED, SlotState.RETURNED, SlotState.EDITING, SlotState.ORIGINALITY)


def visible_panels(user: Any) -> QuerySet[Panel]:
    """The panels whose writing a user oversees (admins: all; supervisors: theirs)."""
    if user.is_staff or user.is_superuser:
        return Panel.objects.all()
    return Panel.objects.filter(supervisors=user)


def my_slots(expert: Expert) -> QuerySet[Slot]:
    return (
        Slot.objects.filter(author=expert)
        .select_related("campaign", "panel", "task", "task__group")
        .order_by("-saved_at")
    )


def review_queue(expert: Expert) -> QuerySet[Slot]:
    """Submitted instructions of the panels the expert reviews, not his, not reviewed by him
    in their current round. The author is not shown (reviews are of the text)."""
    mine = Review.objects.filter(slot=OuterRef("pk"), round=OuterRef("round"), reviewer=expert)
    return (
        Slot.objects.filter(
            state=SlotState.SUBMITTED,
            panel__memberships__expert=expert,
            panel__memberships__can_review=True,
            panel__memberships__is_paused=False,
        )
        .exclude(author=expert)
        .exclude(Exists(mine))
        .select_related("panel", "task", "task__group")
        .order_by("saved_at")
    )


def editing_queue(expert: Expert) -> QuerySet[Slot]:
    return (
        Slot.objects.filter(
            state=SlotState.EDITING,
            panel__memberships__expert=expert,
            panel__memberships__can_edit=True,
            panel__memberships__is_paused=False,
        )
        .exclude(author=expert)
        .select_related("panel", "task", "task__group")
        .order_by("saved_at")
    )


def originality_queue(user: Any) -> QuerySet[Slot]:
    return (
        Slot.objects.filter(state=SlotState.ORIGINALITY, panel__in=visible_panels(user))
        .select_related("panel", "task", "task__group")
        .prefetch_related("checks")
        .order_by("saved_at")
    )


@dataclass
class Cell:
    quota: int = 0
    drafting: int = 0
    in_review: int = 0
    accepted: int = 0

    @property
    def written(self) -> int:
        return self.in_review + self.accepted

    def pct(self, n: int) -> int:
        return min(100, round(100 * n / self.quota)) if self.quota else 0

    @property
    def accepted_pct(self) -> int:
        return self.pct(self.accepted)

    @property
    def review_pct(self) -> int:
        return min(100 - self.accepted_pct, self.pct(self.in_review))

    @property
    def drafting_pct(self) -> int:
        return min(100 - self.accepted_pct - self.review_pct, self.pct(self.drafting))


@dataclass
class GroupRow:
    panel: Panel
    group: Any
    levels: dict[str, Cell] = field(default_factory=dict)
    subtypes: list[tuple[Any, dict[str, Cell]]] = field(default_factory=list)

    @property
    def total(self) -> Cell:
        out = Cell()
        for c in self.levels.values():
            out.quota += c.quota
            out.drafting += c.drafting
            out.in_review += c.in_review
            out.accepted += c.accepted
        return out


def dashboard(campaign: Campaign, user: Any) -> list[GroupRow]:
    """Written / in review / accepted against quota per panel, task group, subtype and level
    (the current plan), for the panels the user oversees."""
    plan = current_plan(campaign)
    if plan is None:
        return []
    panels = visible_panels(user)
    counts: dict[tuple[int, int, str], Cell] = defaultdict(Cell)
    for row in (
        Slot.objects.filter(campaign=campaign, panel__in=panels)
        .values("panel_id", "task_id", "complexity", "state")
        .annotate(n=Count("pk"))
    ):
        cell = counts[(row["panel_id"], row["task_id"], row["complexity"])]
        if row["state"] == SlotState.ACCEPTED:
            cell.accepted += row["n"]
        elif row["state"] == SlotState.DRAFT:
            cell.drafting += row["n"]
        else:
            cell.in_review += row["n"]
    rows: dict[tuple[int, int], GroupRow] = {}
    subtypes: dict[tuple[int, int], dict[int, tuple[Any, dict[str, Cell]]]] = defaultdict(dict)
    for q in (
        plan.quotas.filter(panel__in=panels)
        .select_related("panel", "group", "task")
        .order_by("panel__number", "group__position", "task__position")
    ):
        key = (q.panel_id, q.group_id)
        group_row = rows.setdefault(key, GroupRow(q.panel, q.group))
        got = counts.get((q.panel_id, q.task_id, q.complexity), Cell())
        cell = Cell(q.count, got.drafting, got.in_review, got.accepted)
        total = group_row.levels.setdefault(q.complexity, Cell())
        total.quota += cell.quota
        total.drafting += cell.drafting
        total.in_review += cell.in_review
        total.accepted += cell.accepted
        subtypes[key].setdefault(q.task_id, (q.task, {}))[1][q.complexity] = cell
    for key, group_row in rows.items():
        group_row.levels = {lv: group_row.levels.get(lv, Cell()) for lv in rules.COMPLEXITIES}
        group_row.subtypes = list(subtypes[key].values())
    return list(rows.values())


def return_rate(campaign: Campaign, user: Any) -> dict[str, Any]:
    """Share of first submissions returned by review (POLLUX: 16 %), over decided ones."""
    first = SlotEvent.objects.filter(
        slot__campaign=campaign,
        slot__panel__in=visible_panels(user),
        state_from=SlotState.SUBMITTED,
        action__in=("accept", "return"),
    ).order_by("slot_id", "at", "pk")
    seen: dict[int, str] = {}
    for slot_id, action in first.values_list("slot_id", "action"):
        seen.setdefault(slot_id, action)
    decided = len(seen)
    returned = sum(1 for a in seen.values() if a == "return")
    return {
        "decided": decided,
        "returned": returned,
        "rate": returned / decided if decided else None,
    }


def reviewer_agreement(campaign: Campaign, user: Any) -> Any:
    """Agreement of the two reviewers of the double-reviewed rounds (the authoring kind's
    agreement slot, filled by quality)."""
    by_round: dict[tuple[int, int], list[str]] = defaultdict(list)
    for slot_id, rnd, verdict in (
        Review.objects.filter(
            slot__campaign=campaign, slot__panel__in=visible_panels(user), slot__double_review=True
        )
        .order_by("slot_id", "round", "created_at", "pk")
        .values_list("slot_id", "round", "verdict")
    ):
        by_round[(slot_id, rnd)].append(verdict)
    pairs = [(v[0], v[1]) for v in by_round.values() if len(v) >= 2]
    return rules.review_agreement(pairs)


def writing_time(campaign: Campaign, user: Any) -> dict[str, Any]:
    """Mean minutes spent per submitted instruction, short and long (POLLUX: 120 and 150)."""
    short: list[int] = []
    long: list[int] = []
    for text_len, seconds in (
        Slot.objects.filter(campaign=campaign, panel__in=visible_panels(user), round__gt=0)
        .annotate(n=Length("text"))
        .values_list("n", "seconds_spent")
    ):
        (long if (text_len or 0) > rules.LONG_TEXT_CHARS else short).append(seconds)

    def mean(xs: list[int]) -> float | None:
        return sum(xs) / len(xs) / 60 if xs else None

    return {"short": mean(short), "long": mean(long), "n_short": len(short), "n_long": len(long)}


def states_of(slots: QuerySet[Slot]) -> dict[str, int]:
    return dict(slots.values_list("state").annotate(n=Count("pk")).order_by())


@dataclass(frozen=True)
class WritingQueueSection:
    title: str
    open: int
    done: int
    url: str


def queue_section(expert_id: int) -> WritingQueueSection | None:
    """The expert's writing work on his queue page (work.hooks.queue_sections): his slots and
    baseline answers still open, the instructions waiting for his review or proofreading, and
    what he got accepted. None when he holds no writing role and no slot."""
    expert = Expert.objects.filter(pk=expert_id).first()
    if expert is None:
        return None
    roles = expert.memberships.filter(is_paused=False).filter(
        Q(can_author=True) | Q(can_review=True) | Q(can_edit=True)
    )
    mine = states_of(Slot.objects.filter(author=expert))
    if not mine and not roles.exists():
        return None
    open_own = mine.get(SlotState.DRAFT, 0) + mine.get(SlotState.RETURNED, 0)
    baseline_open = BaselineAnswer.objects.filter(
        expert=expert, state=BaselineAnswer.State.DRAFT
    ).count()
    waiting = review_queue(expert).count() + editing_queue(expert).count()
    return WritingQueueSection(
        title=str(_("Writing the benchmark")),
        open=open_own + baseline_open + waiting,
        done=mine.get(SlotState.ACCEPTED, 0),
        url=reverse("authoring_home"),
    )
