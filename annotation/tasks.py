"""Celery tasks of the annotation app. Tasks take ids, services check state (safe to retry)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from annotation.assignments import assignments_build, assignments_release_expired
from annotation.jobs import JobContext, job_task
from annotation.models import JobKind


@job_task(JobKind.ASSIGNMENTS, name="annotation.tasks.build_assignments")
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


# Tasks defined next to their services register here, where Celery's autodiscovery looks.
from annotation.dataset_tasks import aggregate_job, export_dataset_job  # noqa: E402, F401
from annotation.import_tasks import import_material_job  # noqa: E402, F401
from annotation.jobs import requeue_stale_jobs  # noqa: E402, F401
