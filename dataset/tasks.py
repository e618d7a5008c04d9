"""Celery tasks for the dataset: aggregation and export, each a Job (jobs.services).

The skeleton claims the job (a redelivered task of a finished job does nothing; one whose worker
died is taken over), runs the body and finishes; only the attempt that still owns the job may
finish it, so two deliveries never both publish a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from dataset.aggregation import AggregationSettings, aggregation_run
from dataset.export import ExportOptions, dataset_export
from jobs.models import Job, JobKind
from jobs.services import JobContext, JobOutcome, enqueue, job_task

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
    return enqueue(kind, params, user=user)


def export_relative_path(job: Job) -> str:
    ext = "xlsx" if job.params.get("format") == "xlsx" else "zip"
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return f"{EXPORT_DIR}/dataset-{job.pk}-{stamp}.{ext}"


# --------------------------------------------------------------------------------------------
# Tasks.
# --------------------------------------------------------------------------------------------


@job_task(JobKind.AGGREGATE, name="dataset.tasks.aggregate_job", caller_writes=False)
def aggregate_job(ctx: JobContext) -> dict[str, Any]:
    # The aggregation reports its progress itself (through a side connection: it reads a
    # snapshot).
    return aggregation_run(rules=AggregationSettings.from_params(ctx.job.params), job_id=ctx.job.pk)


# The export streams COPY on the task's connection: progress uses the side one only.
@job_task(JobKind.EXPORT, name="dataset.tasks.export_dataset_job", caller_writes=False)
def export_dataset_job(ctx: JobContext) -> JobOutcome:
    job = ctx.job
    params = job.params
    options = ExportOptions(
        fmt=params.get("format", "parquet"),
        rules=AggregationSettings.from_params(params),
        chunk_rows=int(params.get("chunk_rows", 50_000)),
    )
    relative = export_relative_path(job)
    out = Path(settings.PRIVATE_STORAGE_ROOT) / relative
    # The temporary name is fixed per job: a retry after a killed worker overwrites the
    # half-written file of the dead attempt instead of leaving it behind.
    report = dataset_export(out, options, progress=ctx.progress, temp_name=f".job-{job.pk}.part")
    return JobOutcome(
        result=report,
        fields={"file_path": relative},
        # Another attempt took the job over meanwhile: ours is not the published file.
        on_lost=lambda: out.unlink(missing_ok=True),
    )
