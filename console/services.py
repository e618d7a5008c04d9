"""Supervisors' writes over work (reassign, lock, reopen, build) and the stats snapshot."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from jobs.models import JobKind
from jobs.services import enqueue
from panels.models import Expert, Panel
from panels.services import actor_or_none, audit
from protocol.overlap import MAX_OVERLAP, MIN_OVERLAP, can_add_slot
from quality.exams import ExamError
from quality.tasks import distribute_control_items
from work.assignments import assignments_reassign
from work.models import Assignment, AssignmentStatus, Triple, TripleKind


def expert_reassign(*, expert: Expert, panel: Panel, user: Any) -> Any:
    """Release the expert's open work of this panel (only; work.assignments.assignments_reassign)
    and queue a build job of the panel that hands it to other experts."""

    with transaction.atomic():
        released = assignments_reassign(expert_id=expert.pk, panel_id=panel.pk)
        audit(
            action="reassign",
            actor=user,
            panel=panel,
            expert=expert,
            data={"released": released.released},
        )
        return _build_job(panel=panel, user=user, answer_ids=released.answer_ids, action="reassign")


@transaction.atomic
def assignments_lock_batch(
    *,
    panel: Panel,
    user: Any,
    submitted_from: Any = None,
    submitted_to: Any = None,
    task_id: int | None = None,
) -> int:
    """Lock submitted work of a panel (optionally a date range and task): scores become final."""

    qs = Assignment.objects.filter(
        panel=panel, kind="work", status=AssignmentStatus.SUBMITTED, locked=False
    )
    if submitted_from:
        qs = qs.filter(submitted_at__gte=submitted_from)
    if submitted_to:
        qs = qs.filter(submitted_at__lt=submitted_to)
    if task_id:
        qs = qs.filter(answer__instruction__task_id=task_id)
    count = qs.update(locked=True)
    audit(
        action="lock_batch",
        actor=user,
        panel=panel,
        data={
            "locked": count,
            "from": str(submitted_from or ""),
            "to": str(submitted_to or ""),
            "task": task_id,
        },
    )
    return count


def triple_reopen(*, triple: Any, user: Any, note: str) -> Any:
    """Reopen a triple for rescoring: one more estimate slot, given to a fresh expert.

    Submitted scores stay (they are evidence); the required overlap grows by one (at most
    protocol.overlap.MAX_OVERLAP) and a build job of the triple's panel hands the new slot to a
    qualified expert who has not scored the answer. Returns the job.
    """

    note = (note or "").strip()
    if not note:
        raise ExamError(_("Say why the triple is reopened."))
    with transaction.atomic():
        locked = Triple.objects.select_for_update().select_related("panel").get(pk=triple.pk)
        if locked.kind != TripleKind.POINTWISE:
            # The rubric builder this queues never fills a side-by-side slot (one assignment
            # holds every criterion of a pair), so the new slot would stay empty forever.
            raise ExamError(
                _("Triple %(id)s is a side-by-side comparison: only rubric triples are reopened.")
                % {"id": locked.pk}
            )
        if not can_add_slot(locked.required_overlap):
            raise ExamError(_("This triple already has the maximum number of slots."))
        locked.required_overlap += 1
        locked.reopened_note = note
        locked.save(update_fields=["required_overlap", "reopened_note"])
        audit(
            action="reopen_triple",
            actor=user,
            panel=locked.panel,
            note=note,
            data={"triple": locked.pk, "overlap": locked.required_overlap},
        )
        return _build_job(
            panel=locked.panel, user=user, answer_ids=[locked.answer_id], action="reopen"
        )


def _build_job(
    *,
    panel: Panel,
    user: Any,
    answer_ids: list[int] | None,
    action: str,
    control: bool = False,
    pairs: dict[str, Any] | None = None,
) -> Any:
    """A build job scoped to the panel (jobs.services: progress, retries), queued on commit.

    `answer_ids` narrows it further (a reassign, a reopen); None means every answer of the
    panel, and the builder itself leaves reserved copies and the panel's gold answers out.
    Reassign and reopen stay build jobs of the panel (params["action"] says which): their
    synchronous part touches one expert's open work or one triple; the build, which may touch
    many rows, is the job.
    """
    params: dict[str, Any] = {"panel_id": panel.pk, "action": action}
    if answer_ids is not None:
        params["answer_ids"] = answer_ids
    if pairs is not None:
        params["pairs"] = pairs
    then = distribute_control_items.si(panel.pk) if control else None
    return enqueue(JobKind.ASSIGNMENTS, params, user=actor_or_none(user), then=then)


@transaction.atomic
def pairs_route_enqueue(*, panel: Panel, user: Any, overlap: int) -> Any:
    """Route every side-by-side pair not routed yet to the panel with `overlap` annotators per
    pair (REPA: 3), and hand them out: the panel's build job with its "pairs" part."""
    if not MIN_OVERLAP <= overlap <= MAX_OVERLAP:
        raise ValueError(
            _("overlap: must be between %(lo)s and %(hi)s") % {"lo": MIN_OVERLAP, "hi": MAX_OVERLAP}
        )
    job = _build_job(
        panel=panel, user=user, answer_ids=None, action="route_pairs", pairs={"overlap": overlap}
    )
    audit(action="route_pairs", actor=user, panel=panel, data={"job": job.pk, "overlap": overlap})
    return job


@transaction.atomic
def assignments_build_enqueue(*, panel: Panel, user: Any) -> Any:
    """Queue the panel's assignment builder (then its control items) as a Job with progress."""
    job = _build_job(panel=panel, user=user, answer_ids=None, action="build", control=True)
    audit(action="build", actor=user, panel=panel, data={"job": job.pk})
    return job
