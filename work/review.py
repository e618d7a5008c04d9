"""A supervisor's review of submitted estimates: send one back to its expert, or accept it.

Returning reopens the estimate's assignment for its expert (it is open work again: the queue
and "next" show it, and blindness hides the answer's other scores from him until he submits);
the estimate stays submitted, so the resubmission goes through `assignment_submit`, which keeps
the previous values as an `EstimateRevision` and calls `resubmitted` to clear the return.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from panels.models import SupervisorAction
from panels.services import actor_or_none, audit
from work.entries import entry_of
from work.models import (
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    Estimate,
    EstimateStatus,
    ReviewStatus,
)

# The longest comment a supervisor may send back (the form says so before the service does).
COMMENT_MAX = 2000


class ReviewRefused(Exception):
    """The estimate cannot be reviewed now (locked batch, not submitted); the message says why.

    `status` is the HTTP status a view answers with (409: the state forbids it; 400: the input).
    """

    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.status = status


def _locked_estimate(estimate: Estimate) -> tuple[Estimate, Assignment]:
    """The estimate and its assignment, row-locked, checked to be reviewable."""
    assignment = Assignment.objects.select_for_update().get(pk=estimate.assignment_id)
    locked = Estimate.objects.select_for_update().get(pk=estimate.pk)
    if assignment.locked:
        raise ReviewRefused(_("The batch is locked: its estimates can no longer change."))
    if assignment.kind != AssignmentKind.WORK:
        raise ReviewRefused(_("Only work estimates are reviewed (not exams or control items)."))
    if locked.status != EstimateStatus.SUBMITTED:
        raise ReviewRefused(_("Only a submitted estimate can be reviewed."))
    return locked, assignment


@transaction.atomic
def estimate_return(*, estimate: Estimate, user: Any, comment: str) -> Estimate:
    """Send a submitted estimate back to its expert with a comment.

    The assignment becomes open work of the expert again (in progress, a fresh reservation, no
    remembered submission key, so the next submission is a real one).
    """
    comment = (comment or "").strip()
    if not comment:
        raise ReviewRefused(_("Write what the expert should look at again."), status=400)
    if len(comment) > COMMENT_MAX:
        raise ReviewRefused(
            _("The comment is longer than %(n)d characters.") % {"n": COMMENT_MAX}, status=400
        )
    estimate, assignment = _locked_estimate(estimate)
    if assignment.status == AssignmentStatus.RELEASED:
        raise ReviewRefused(_("The assignment was released: there is nobody to return it to."))
    now = timezone.now()
    estimate.review_status = ReviewStatus.RETURNED
    estimate.review_comment = comment
    estimate.reviewed_by = actor_or_none(user)
    estimate.reviewed_at = now
    estimate.save(update_fields=["review_status", "review_comment", "reviewed_by", "reviewed_at"])
    hours = settings.POLLUX["ASSIGNMENT_RESERVATION_HOURS"]
    assignment.status = AssignmentStatus.IN_PROGRESS
    assignment.reserved_until = now + timedelta(hours=hours)
    assignment.submission_key = ""
    assignment.save(update_fields=["status", "reserved_until", "submission_key"])
    audit(
        action=SupervisorAction.Kind.ESTIMATE_RETURN,
        actor=user,
        panel=assignment.panel,
        expert=assignment.expert,
        note=comment,
        data={"estimate": estimate.pk, "assignment": assignment.pk},
    )
    return estimate


@transaction.atomic
def estimate_accept(*, estimate: Estimate, user: Any) -> Estimate:
    """Mark a submitted estimate as reviewed and accepted (a returned one is accepted as is:
    its assignment stays open until the expert submits, which clears nothing accepted)."""
    estimate, assignment = _locked_estimate(estimate)
    estimate.review_status = ReviewStatus.ACCEPTED
    estimate.reviewed_by = actor_or_none(user)
    estimate.reviewed_at = timezone.now()
    estimate.save(update_fields=["review_status", "reviewed_by", "reviewed_at"])
    audit(
        action=SupervisorAction.Kind.ESTIMATE_ACCEPT,
        actor=user,
        panel=assignment.panel,
        expert=assignment.expert,
        data={"estimate": estimate.pk, "assignment": assignment.pk},
    )
    return estimate


def resubmitted(assignment: Assignment) -> int:
    """Clear the returns of an assignment just submitted again (inside its transaction); the
    comment stays as the record of what was asked. The number of estimates cleared."""
    return Estimate.objects.filter(
        assignment=assignment, review_status=ReviewStatus.RETURNED
    ).update(review_status=ReviewStatus.NONE)


def returned_for(assignment_id: int, user_id: int) -> list[dict[str, Any]]:
    """The returned estimates of the user's own assignment, for the notice on its page: the
    criterion and the supervisor's comment (never who wrote it)."""
    rows = (
        Estimate.objects.filter(
            # Every panel's work scored on the page (work.entries), in the same query.
            assignment__in=entry_of(assignment_id),
            assignment__expert__user_id=user_id,
            review_status=ReviewStatus.RETURNED,
        )
        .order_by("triple__position", "triple_id")
        .values("triple_id", "triple__criterion__key", "review_comment")
    )
    return [dict(row) for row in rows]
