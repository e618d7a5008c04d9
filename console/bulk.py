"""The data browser's bulk actions on a selection of work assignments: reassign, reopen, send to
review.

A selection is a list of assignment ids from the browser's form. The view checks every selected
row against `console.act_on_work` before anything is written (a row of a panel the user does
not supervise: 404, nothing changes); each action then runs in one transaction and moves the
rows it can, saying per refused row why. Refusals are about a row's state (submitted, locked,
the target expert already holds the answer); bad input (no selection, an unknown action, an id
that is not a number, an expert outside the panel) is a `BulkInputError` naming its field.

- reassign: an open assignment's unsubmitted slots go to another active, qualified expert of the
  same panel, in the same slots (the overlap does not change). The old expert's drafts are kept
  on his released assignment (work.assignments.assignment_release), as a console reassign does;
  the new expert starts from an empty form.
- reopen: each submitted estimate of a submitted assignment goes back to its expert
  (work.review.estimate_return): the assignment is open work in his queue again, what he wrote
  stays on the page, and his resubmission keeps the previous values as a revision.
- send to review: the submitted estimates go into the panel's "sent to review" queue
  (console.queues), until a supervisor returns or accepts them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from console.browser import PAGE_SIZE
from console.models import ReviewRequest
from panels.models import Expert, Membership, Panel, SupervisorAction
from panels.selectors import eligible_memberships
from panels.services import actor_or_none, audit
from work import hooks
from work.assignments import assignment_release
from work.forms import parse_id
from work.models import (
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    Estimate,
    EstimateStatus,
    TripleKind,
)
from work.review import COMMENT_MAX, estimate_return

REASSIGN = "reassign"
REOPEN = "reopen"
REVIEW = "review"
ACTIONS = {
    REASSIGN: gettext_lazy("Reassign"),
    REOPEN: gettext_lazy("Reopen"),
    REVIEW: gettext_lazy("Send to review"),
}
# A selection is made on one page of the browser; reopen returns each estimate through
# work.review (a few queries each), so a selection stays page-sized.
MAX_SELECTION = PAGE_SIZE
OPEN = (AssignmentStatus.ASSIGNED, AssignmentStatus.IN_PROGRESS)
_OPEN_ESTIMATES = (EstimateStatus.PENDING, EstimateStatus.DRAFT)

# The form's own words for its fields, so an error names what the person sees.
FIELD_LABELS = {
    "action": gettext_lazy("Action"),
    "ids": gettext_lazy("Selection"),
    "expert": gettext_lazy("To expert"),
    "comment": gettext_lazy("Comment for the expert"),
}


class BulkInputError(ValueError):
    """A field of the bulk form that cannot be acted on (the view answers 400)."""

    def __init__(self, field_name: str, message: str) -> None:
        self.field = field_name
        label = str(FIELD_LABELS.get(field_name, field_name))
        super().__init__(f"{label}: {message}")


@dataclass(frozen=True)
class Refusal:
    assignment_id: int
    reason: str


@dataclass
class BulkResult:
    action: str
    done: int = 0
    # Reassign: the pseudonym of the expert who took the work.
    target: str = ""
    refused: list[Refusal] = field(default_factory=list)


@dataclass(frozen=True)
class BulkInput:
    action: str
    ids: list[int]
    expert_id: int | None = None
    comment: str = ""


def parse_input(data: Any) -> BulkInput:
    """The action, the selected ids and the action's own field from a POST (a QueryDict)."""
    action = str(data.get("action", "") or "").strip()
    if action not in ACTIONS:
        raise BulkInputError("action", _("unknown action."))
    raw_ids = [str(v).strip() for v in data.getlist("ids") if str(v).strip()]
    if not raw_ids:
        raise BulkInputError("ids", _("select at least one row."))
    if len(raw_ids) > MAX_SELECTION:
        raise BulkInputError("ids", _("at most %(n)d rows at once.") % {"n": MAX_SELECTION})
    ids: list[int] = []
    for raw in raw_ids:
        pk = parse_id(raw)
        if pk is None:
            raise BulkInputError("ids", _("%(value)s is not an id.") % {"value": raw[:20]})
        if pk not in ids:
            ids.append(pk)
    expert_id = None
    comment = ""
    if action == REASSIGN:
        raw = str(data.get("expert", "") or "").strip()
        if not raw:
            raise BulkInputError("expert", _("choose the expert who takes the work."))
        expert_id = parse_id(raw)
        if expert_id is None:
            raise BulkInputError("expert", _("not an id."))
    elif action == REOPEN:
        comment = str(data.get("comment", "") or "").strip()
        if not comment:
            raise BulkInputError("comment", _("write what the expert should look at again."))
        if len(comment) > COMMENT_MAX:
            raise BulkInputError("comment", _("longer than %(n)d characters.") % {"n": COMMENT_MAX})
    return BulkInput(action=action, ids=ids, expert_id=expert_id, comment=comment)


def selection(ids: Sequence[int]) -> list[Assignment]:
    """The selected assignments with their panels, in the order given (missing ids left out:
    the view compares the count, an unknown id is a 404 like another panel's)."""
    rows = Assignment.objects.filter(pk__in=list(ids)).select_related("panel", "expert")
    by_id = {a.pk: a for a in rows}
    return [by_id[pk] for pk in ids if pk in by_id]


def panel_experts(panel_ids: Iterable[int]) -> list[Membership]:
    """The active, qualified experts of these panels: who may take reassigned work."""
    return list(
        eligible_memberships()
        .filter(panel_id__in=list(panel_ids))
        .select_related("expert", "panel")
        .order_by("panel__number", "expert__pseudonym")
    )


def bulk_apply(*, data: BulkInput, assignments: Sequence[Assignment], user: Any) -> BulkResult:
    """Run the action on the (already permitted) selection in one transaction."""
    with transaction.atomic():
        locked = list(
            Assignment.objects.select_for_update()
            .filter(pk__in=[a.pk for a in assignments])
            .select_related("panel", "expert")
            .order_by("pk")
        )
        if data.action == REASSIGN:
            assert data.expert_id is not None, "parse_input requires the expert"
            return _reassign(locked, data.expert_id, user)
        if data.action == REOPEN:
            return _reopen(locked, data.comment, user)
        return _send_to_review(locked, user)


def _common_refusal(a: Assignment) -> str:
    """Why no bulk action applies to this row at all ("" when one may)."""
    if a.kind != AssignmentKind.WORK:
        return _("an exam or control copy, not work.")
    if a.locked:
        return _("its batch is locked.")
    if a.status == AssignmentStatus.RELEASED:
        return _("released: nobody holds it.")
    return ""


# --- reassign -------------------------------------------------------------------------------


def _target(expert_id: int, panel_ids: set[int]) -> tuple[Expert, dict[int, Membership]]:
    """The expert who takes the work, eligible in every panel of the selection."""
    memberships = {
        m.panel_id: m
        for m in eligible_memberships()
        .filter(expert_id=expert_id, panel_id__in=panel_ids)
        .select_related("expert", "panel")
    }
    missing = sorted(panel_ids - set(memberships))
    if missing:
        numbers = sorted(Panel.objects.filter(pk__in=missing).values_list("number", flat=True))
        raise BulkInputError(
            "expert",
            _("not an active, qualified expert of panel %(panels)s.")
            % {"panels": ", ".join(str(n) for n in numbers)},
        )
    return next(iter(memberships.values())).expert, memberships


def _reassign(rows: list[Assignment], expert_id: int, user: Any) -> BulkResult:
    result = BulkResult(action=REASSIGN)
    target, memberships = _target(expert_id, {a.panel_id for a in rows})
    result.target = target.pseudonym
    answer_ids = [a.answer_id for a in rows]
    # Whatever the target already holds or held on these answers (any panel, any state: a
    # released or flagged one included, as the builder never gives such work back).
    pair_ids = {a.pair_id for a in rows} - {None}
    held = Assignment.objects.filter(expert=target).filter(
        Q(answer_id__in=answer_ids) | Q(pair_id__in=pair_ids)
    )
    held_answers = set(held.values_list("answer_id", flat=True))
    held_pairs = set(held.exclude(pair_id=None).values_list("pair_id", flat=True))
    authored: dict[int, set[int]] = defaultdict(set)
    for provider in hooks.excluded_experts:
        for answer_id, author_id in provider(answer_ids):
            authored[answer_id].add(author_id)
    estimates: dict[int, list[Estimate]] = defaultdict(list)
    for e in Estimate.objects.filter(assignment__in=rows).select_related("triple"):
        estimates[e.assignment_id].append(e)
    deadline = timezone.now() + timedelta(hours=settings.POLLUX["ASSIGNMENT_RESERVATION_HOURS"])
    for a in rows:
        reason = _reassign_refusal(a, target, estimates[a.pk], memberships[a.panel_id])
        if not reason and (
            a.answer_id in held_answers
            or a.pair_id in held_pairs
            or target.pk in authored[a.answer_id]
        ):
            reason = _("%(expert)s already has work on this answer.") % {"expert": target.pseudonym}
        if reason:
            result.refused.append(Refusal(a.pk, reason))
            continue
        slots = [(e.triple_id, e.slot) for e in estimates[a.pk]]
        assignment_release(assignment=a, reason="reassigned")
        moved = Assignment.objects.create(
            expert=target,
            answer_id=a.answer_id,
            panel_id=a.panel_id,
            kind=AssignmentKind.WORK,
            pair_id=a.pair_id,
            swapped=a.swapped,
            reserved_until=deadline,
        )
        # The same slots: the triples keep their overlap, one estimate per (triple, expert).
        Estimate.objects.bulk_create(
            Estimate(triple_id=t, assignment=moved, expert=target, slot=s) for t, s in slots
        )
        held_answers.add(a.answer_id)
        audit(
            action=SupervisorAction.Kind.REASSIGN,
            actor=user,
            panel=a.panel,
            expert=a.expert,
            data={"assignment": a.pk, "to_expert": target.pk, "to_assignment": moved.pk},
        )
        result.done += 1
    return result


def _reassign_refusal(
    a: Assignment, target: Expert, estimates: list[Estimate], membership: Membership
) -> str:
    reason = _common_refusal(a)
    if reason:
        return reason
    if a.status not in OPEN:
        return _("already submitted: reopen it instead.")
    if a.expert_id == target.pk:
        return _("already his.")
    if any(e.status not in _OPEN_ESTIMATES for e in estimates):
        # Returned for rework: the submitted scores are the expert's own.
        return _("it holds submitted scores of its expert.")
    if not estimates:
        return _("nothing left to score.")
    groups = list(membership.qualified_groups or [])
    if groups and any(e.triple.group and e.triple.group not in groups for e in estimates):
        return _("%(expert)s is not qualified for all of its criteria.") % {
            "expert": target.pseudonym
        }
    return ""


# --- reopen ---------------------------------------------------------------------------------


def _reopen(rows: list[Assignment], comment: str, user: Any) -> BulkResult:
    result = BulkResult(action=REOPEN)
    submitted: dict[int, list[Estimate]] = defaultdict(list)
    for e in Estimate.objects.filter(assignment__in=rows, status=EstimateStatus.SUBMITTED):
        submitted[e.assignment_id].append(e)
    for a in rows:
        reason = _common_refusal(a)
        if not reason and a.status != AssignmentStatus.SUBMITTED:
            reason = _("not submitted yet: it is still open for its expert.")
        if not reason and not submitted[a.pk]:
            reason = _("no submitted score to send back.")
        if reason:
            result.refused.append(Refusal(a.pk, reason))
            continue
        for estimate in submitted[a.pk]:
            estimate_return(estimate=estimate, user=user, comment=comment)
        result.done += 1
    return result


# --- send to review -------------------------------------------------------------------------


def _send_to_review(rows: list[Assignment], user: Any) -> BulkResult:
    result = BulkResult(action=REVIEW)
    submitted: dict[int, list[Estimate]] = defaultdict(list)
    # Rubric scores of the assignment's own panel: what the panel's review queues show (a
    # critical gate of another panel is that panel's to review).
    for e in Estimate.objects.filter(
        assignment__in=rows,
        status=EstimateStatus.SUBMITTED,
        triple__kind=TripleKind.POINTWISE,
        triple__panel_id=F("assignment__panel_id"),
    ):
        submitted[e.assignment_id].append(e)
    pending = set(
        ReviewRequest.objects.filter(estimate__assignment__in=rows)
        .filter(ReviewRequest.pending())
        .values_list("estimate_id", flat=True)
    )
    now = timezone.now()
    actor = actor_or_none(user)
    sent: list[ReviewRequest] = []
    for a in rows:
        reason = _common_refusal(a)
        if not reason and not submitted[a.pk]:
            reason = _("nothing submitted to review.")
        fresh = [e for e in submitted[a.pk] if e.pk not in pending]
        if not reason and not fresh:
            reason = _("already in the review queue.")
        if reason:
            result.refused.append(Refusal(a.pk, reason))
            continue
        sent += [
            ReviewRequest(estimate=e, panel_id=a.panel_id, requested_by=actor, requested_at=now)
            for e in fresh
        ]
        result.done += 1
    # A request already answered is renewed: one row per estimate, written in two queries.
    ReviewRequest.objects.filter(estimate_id__in=[r.estimate_id for r in sent]).delete()
    ReviewRequest.objects.bulk_create(sent)
    return result
