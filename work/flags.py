"""Skipping an answer and flagging a broken one: the expert's side and the supervisor's queue.

Both release the expert's assignment (the answer goes to another expert at the next build, never
back to this one: work.assignments._fill_slots reads the flags) and leave a Flag that the
panel's supervisors see in their console and resolve with a note.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from panels.models import Panel
from work import kinds
from work.assignments import OPEN_STATUSES, assignment_release
from work.entries import entry_of
from work.models import Assignment, AssignmentKind, Flag, FlagKind, FlagReason, FlagResolution
from work.services import ScoringClosed

COMMENT_MAX = 2000
NOTE_MAX = 2000


class FlagRefused(ValueError):
    """Input that cannot make a flag; `field` names the offending form field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _clean(kind: str, reason: str, comment: str) -> tuple[str, str, str]:
    if kind not in FlagKind.values:
        raise FlagRefused("kind", _("Choose skip or flag as broken."))
    if reason not in FlagReason.values:
        raise FlagRefused("reason", _("Choose a reason."))
    comment = comment.strip()
    if len(comment) > COMMENT_MAX:
        raise FlagRefused("comment", _("At most %(n)d characters.") % {"n": COMMENT_MAX})
    if reason == FlagReason.OTHER and not comment:
        raise FlagRefused("comment", _("Say in the comment what is wrong."))
    return kind, reason, comment


@transaction.atomic
def assignment_flag(*, assignment_id: int, kind: str, reason: str, comment: str = "") -> Flag:
    """Record a skip or a broken-item flag and release the assignment (its drafts are kept).

    Only open rubric work and control items can be skipped: an exam item must be answered, a
    kind may refuse it (a side-by-side pair has its own refusal, work.views_compare), and
    submitted work is done.
    """
    kind, reason, comment = _clean(kind, reason, comment)
    assignment = Assignment.objects.select_for_update().get(pk=assignment_id)
    if assignment.kind == AssignmentKind.EXAM:
        raise ScoringClosed(_("Exam items cannot be skipped."))
    refusal = kinds.of(assignment).flag_refusal()
    if refusal:
        raise ScoringClosed(refusal)
    if assignment.locked:
        raise ScoringClosed(_("The supervisor has locked this batch: scores can no longer change."))
    if assignment.status not in OPEN_STATUSES:
        raise ScoringClosed(_("This answer is no longer open in your queue."))
    flag = Flag.objects.create(
        assignment=assignment,
        expert_id=assignment.expert_id,
        kind=kind,
        reason=reason,
        comment=comment,
    )
    assignment_release(
        assignment=assignment, reason="skipped" if kind == FlagKind.SKIP else "flagged"
    )
    return flag


def panel_flags(panel: Panel, *, resolved: bool = False) -> QuerySet[Flag]:
    """The panel's flags, open ones (oldest first) or resolved ones (latest first)."""
    flags = Flag.objects.filter(assignment__panel=panel, resolved_at__isnull=not resolved)
    return flags.select_related(
        "expert", "assignment__answer__instruction__task", "resolved_by"
    ).order_by("-resolved_at" if resolved else "created_at", "pk")


@transaction.atomic
def flag_resolve(*, flag: Flag, user: Any, resolution: str, note: str = "") -> Flag:
    """Close a flag with the supervisor's verdict (fixed or ignored) and note."""
    if resolution not in FlagResolution.values:
        raise FlagRefused("resolution", _("Choose fixed or ignored."))
    note = note.strip()
    if len(note) > NOTE_MAX:
        raise FlagRefused("note", _("At most %(n)d characters.") % {"n": NOTE_MAX})
    locked = Flag.objects.select_for_update().get(pk=flag.pk)
    if locked.resolved_at is not None:
        raise FlagRefused("resolution", _("This flag is already resolved."))
    locked.resolution = resolution
    locked.resolution_note = note
    locked.resolved_by = user
    locked.resolved_at = timezone.now()
    locked.save(update_fields=["resolution", "resolution_note", "resolved_by", "resolved_at"])
    return locked


@transaction.atomic
def entry_flag(*, assignment_id: int, kind: str, reason: str, comment: str = "") -> Flag:
    """Skip or flag the answer of a whole entry (work.entries): the expert's work on it for
    every panel leaves his queue together, and a broken-item flag reaches each panel's
    supervisor. Returns the lead assignment's flag; any refusal leaves nothing written."""
    # Read before the lead is released: a released lead is an entry of one.
    others = list(
        entry_of(assignment_id)
        .exclude(pk=assignment_id)
        .filter(status__in=OPEN_STATUSES)
        .values_list("pk", flat=True)
    )
    lead = assignment_flag(assignment_id=assignment_id, kind=kind, reason=reason, comment=comment)
    for other in others:
        assignment_flag(assignment_id=other, kind=kind, reason=reason, comment=comment)
    return lead
