"""Job bookkeeping shared by every long Celery task: claim, progress, finish."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import F
from django.utils import timezone

from annotation.models import Job, JobStatus


def job_claim(job_id: int) -> Job | None:
    """Move a job to RUNNING unless it already finished (a redelivered task does nothing)."""
    updated = Job.objects.filter(
        pk=job_id, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]
    ).update(status=JobStatus.RUNNING, started_at=timezone.now(), attempts=F("attempts") + 1)
    if not updated:
        return None
    return Job.objects.get(pk=job_id)


def job_progress(job_id: int) -> Callable[[int, int], None]:
    def report(done: int, total: int) -> None:
        Job.objects.filter(pk=job_id).update(progress_done=done, progress_total=total)

    return report


def job_finish(job_id: int, *, result: dict[str, Any] | None = None, error: str = "") -> None:
    Job.objects.filter(pk=job_id).update(
        status=JobStatus.FAILED if error else JobStatus.DONE,
        message=error[:2000],
        result=result or {},
        finished_at=timezone.now(),
    )
