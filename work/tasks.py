"""Celery tasks of work. Tasks take ids, services check state (safe to retry)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from jobs.models import Job
from jobs.services import job_claim, job_finish, job_progress
from work.assignments import assignments_build, assignments_release_expired


@shared_task(bind=True, max_retries=3, acks_late=True)
def build_assignments(self: Any, job_id: int) -> None:
    """Build triples and assignments; the builder is idempotent, so a retry only fills gaps."""
    attempt = job_claim(job_id)
    if attempt is None:
        return
    job = Job.objects.get(pk=job_id)
    try:
        with job_progress(job_id) as progress:
            report = assignments_build(
                answer_ids=job.params.get("answer_ids"),
                panel_id=job.params.get("panel_id"),
                progress=progress,
            )
    except Exception as exc:
        job_finish(job_id, attempt, error=str(exc))
        raise
    job_finish(job_id, attempt, result=report)


@shared_task
def release_expired_assignments() -> int:
    return assignments_release_expired()
