"""Celery tasks for the dataset: aggregation and export, each driven by a Job row.

Tasks take a Job id. A job is claimed by compare-and-set on (status, attempts): a redelivered or
re-sent task either takes over a job whose worker died (status running, stale heartbeat) or does
nothing (the job is done). Only the attempt that still owns the job may finish it, so two
deliveries never both publish a file.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from annotation.aggregation import AggregationSettings, JobProgress, aggregation_run
from annotation.export import ExportOptions, dataset_export
from annotation.models import Job, JobKind, JobStatus

log = logging.getLogger(__name__)

EXPORT_DIR = "exports"
# A running job whose heartbeat is older than this is taken to have lost its worker.
STALE_AFTER = timedelta(minutes=10)


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


def job_claim(job_id: int, *, stale_after: timedelta = STALE_AFTER) -> int | None:
    """Take the job for this attempt; returns the attempt number, or None when not ours.

    Queued jobs are taken at once; a running job only when its heartbeat is stale (its worker
    died). The UPDATE matches the attempt count we read, so concurrent deliveries cannot both win.
    """
    job = Job.objects.filter(pk=job_id).values("status", "attempts", "result", "started_at").first()
    if job is None or job["status"] in (JobStatus.DONE, JobStatus.CANCELLED, JobStatus.FAILED):
        return None
    if job["status"] == JobStatus.RUNNING and not _is_stale(dict(job), stale_after):
        return None
    attempt = job["attempts"] + 1
    won = Job.objects.filter(pk=job_id, status=job["status"], attempts=job["attempts"]).update(
        status=JobStatus.RUNNING,
        attempts=attempt,
        started_at=timezone.now(),
        progress_done=0,
        message="",
        result={"heartbeat": timezone.now().isoformat()},
    )
    return attempt if won == 1 else None


def _is_stale(job: dict[str, Any], stale_after: timedelta) -> bool:
    beat = (job.get("result") or {}).get("heartbeat")
    last = datetime.fromisoformat(beat) if beat else job.get("started_at")
    return last is None or timezone.now() - last > stale_after


def _finish(job_id: int, attempt: int, **fields: Any) -> bool:
    """Finish the job only if this attempt still owns it."""
    fields.setdefault("finished_at", timezone.now())
    return (
        Job.objects.filter(pk=job_id, attempts=attempt, status=JobStatus.RUNNING).update(**fields)
        == 1
    )


def export_relative_path(job: Job) -> str:
    ext = "xlsx" if job.params.get("format") == "xlsx" else "zip"
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return f"{EXPORT_DIR}/dataset-{job.pk}-{stamp}.{ext}"


def jobs_requeue_stale(*, stale_after: timedelta = STALE_AFTER) -> list[int]:
    """Re-send dataset jobs whose worker died (running with a stale heartbeat).

    Redis redelivers an unacknowledged task only after the broker's visibility timeout (hours);
    this sweeper (run by beat) gets such jobs going again within minutes. A duplicate delivery
    is harmless: job_claim lets one attempt own the job.
    """
    cutoff = timezone.now() - stale_after
    sent: list[int] = []
    running = Job.objects.filter(
        kind__in=[JobKind.AGGREGATE, JobKind.EXPORT], status=JobStatus.RUNNING
    ).filter(Q(started_at__lt=cutoff) | Q(started_at__isnull=True))
    for job in running.only("pk", "kind", "result", "started_at"):
        if not _is_stale({"result": job.result, "started_at": job.started_at}, stale_after):
            continue
        task = export_dataset_job if job.kind == JobKind.EXPORT else aggregate_job
        task.apply_async(args=(job.pk,), kwargs={"stale_after_s": stale_after.total_seconds()})
        sent.append(job.pk)
    return sent


# --------------------------------------------------------------------------------------------
# Tasks.
# --------------------------------------------------------------------------------------------


@shared_task(acks_late=True, name="annotation.dataset_tasks.aggregate_job")
def aggregate_job(job_id: int, stale_after_s: float | None = None) -> None:
    stale = timedelta(seconds=stale_after_s) if stale_after_s is not None else STALE_AFTER
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


@shared_task(acks_late=True, name="annotation.dataset_tasks.export_dataset_job")
def export_dataset_job(job_id: int, stale_after_s: float | None = None) -> None:
    stale = timedelta(seconds=stale_after_s) if stale_after_s is not None else STALE_AFTER
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
        with JobProgress(job_id) as progress:
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


@shared_task(name="annotation.dataset_tasks.requeue_stale_dataset_jobs")
def requeue_stale_dataset_jobs() -> list[int]:
    return jobs_requeue_stale()
