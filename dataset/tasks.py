"""Celery tasks for the dataset: aggregation and export, each driven by a Job row.

Tasks take a Job id. A job is claimed by compare-and-set on (status, attempts): a redelivered or
re-sent task either takes over a job whose worker died (status running, stale heartbeat) or does
nothing (the job is done). Only the attempt that still owns the job may finish it, so two
deliveries never both publish a file.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from dataset.aggregation import AggregationSettings, aggregation_run
from dataset.export import ExportOptions, dataset_export
from jobs.models import Job, JobKind, JobStatus
from jobs.services import job_claim, job_progress, jobs_requeue_stale
from jobs.services import job_finish_attempt as _finish

log = logging.getLogger(__name__)

EXPORT_DIR = "exports"


# --------------------------------------------------------------------------------------------
# Services.
# --------------------------------------------------------------------------------------------


@transaction.atomic
def dataset_job_create(*, kind: str, user: Any, params: dict[str, Any]) -> Job:
    """Create an aggregation or export job and enqueue its task once the row is committed."""
    if kind not in (JobKind.AGGREGATE, JobKind.EXPORT):
        raise ValueError(f"not a dataset job: {kind}")
    if kind == JobKind.EXPORT and params.get("format") not in ("parquet", "xlsx"):
        raise ValueError("format must be parquet or xlsx")
    job = Job.objects.create(
        kind=kind, params=params, created_by=user if getattr(user, "pk", None) else None
    )
    task = export_dataset_job if kind == JobKind.EXPORT else aggregate_job
    job_id = job.pk
    transaction.on_commit(lambda: task.delay(job_id))
    return job


def export_relative_path(job: Job) -> str:
    ext = "xlsx" if job.params.get("format") == "xlsx" else "zip"
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return f"{EXPORT_DIR}/dataset-{job.pk}-{stamp}.{ext}"


# --------------------------------------------------------------------------------------------
# Tasks.
# --------------------------------------------------------------------------------------------


@shared_task(acks_late=True, name="dataset.tasks.aggregate_job")
def aggregate_job(job_id: int, stale_after_s: float | None = None) -> None:
    stale = timedelta(seconds=stale_after_s) if stale_after_s is not None else None
    attempt = job_claim(job_id, stale_after=stale)
    if attempt is None:
        return
    job = Job.objects.get(pk=job_id)
    try:
        report = aggregation_run(rules=AggregationSettings.from_params(job.params), job_id=job_id)
    except Exception as exc:
        log.exception("aggregation job %s failed", job_id)
        _finish(job_id, attempt, status=JobStatus.FAILED, message=str(exc)[:2000])
        raise
    _finish(
        job_id,
        attempt,
        status=JobStatus.DONE,
        result=report,
        progress_done=F("progress_total"),
        message="",
    )


@shared_task(acks_late=True, name="dataset.tasks.export_dataset_job")
def export_dataset_job(job_id: int, stale_after_s: float | None = None) -> None:
    stale = timedelta(seconds=stale_after_s) if stale_after_s is not None else None
    attempt = job_claim(job_id, stale_after=stale)
    if attempt is None:
        return
    job = Job.objects.get(pk=job_id)
    params = job.params
    options = ExportOptions(
        fmt=params.get("format", "parquet"),
        rules=AggregationSettings.from_params(params),
        # Test-only knob (never offered by the form): slows the export down so a test can kill
        # the worker in the middle. Capped so it cannot hold a worker for long.
        chunk_delay=min(float(params.get("chunk_delay", 0.0)), 5.0),
        chunk_rows=int(params.get("chunk_rows", 50_000)),
    )
    relative = export_relative_path(job)
    root = Path(settings.PRIVATE_STORAGE_ROOT)
    out = root / relative
    try:
        # The export streams COPY on the task's connection: progress uses the side one only.
        with job_progress(job_id, caller_writes=False) as progress:
            # The temporary name is fixed per job: a retry after a killed worker overwrites the
            # half-written file of the dead attempt instead of leaving it behind.
            report = dataset_export(
                out, options, progress=progress, temp_name=f".job-{job_id}.part"
            )
    except Exception as exc:
        log.exception("export job %s failed", job_id)
        _finish(job_id, attempt, status=JobStatus.FAILED, message=str(exc)[:2000])
        raise
    if not _finish(
        job_id,
        attempt,
        status=JobStatus.DONE,
        result=report,
        file_path=relative,
        progress_done=F("progress_total"),
        message="",
    ):
        # Another attempt took the job over meanwhile: ours is not the published file.
        out.unlink(missing_ok=True)


@shared_task(name="dataset.tasks.requeue_stale_dataset_jobs")
def requeue_stale_dataset_jobs() -> list[int]:
    """Beat: re-send every kind of job whose worker died (builds and imports too)."""
    return jobs_requeue_stale()
