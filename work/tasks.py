"""Celery tasks of work. Tasks take ids, services check state (safe to retry)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from jobs.models import JobKind
from jobs.services import JobContext, job_task
from work.assignments import assignments_build, assignments_release_expired


@job_task(JobKind.ASSIGNMENTS, name="work.tasks.build_assignments")
def build_assignments(ctx: JobContext) -> dict[str, Any]:
    """Build triples and assignments (a panel's, or some answers' for a reassign or a reopen);
    the builder is idempotent, so a retry only fills gaps."""
    return assignments_build(
        answer_ids=ctx.job.params.get("answer_ids"),
        panel_id=ctx.job.params.get("panel_id"),
        progress=ctx.progress,
    )


@shared_task
def release_expired_assignments() -> int:
    return assignments_release_expired()
