"""The Celery task that runs an import job (the admin page's upload) with progress."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.utils import translation

from jobs.models import JobKind
from jobs.services import JobContext, JobOutcome, job_task
from material.importing import import_summary, material_import


@job_task(JobKind.IMPORT, name="material.tasks.import_material", reraise=False)
def import_material_job(ctx: JobContext) -> JobOutcome:
    """Import the job's uploaded file. A crash is recorded on the job, not raised: the import
    page shows it.

    A worker killed mid-import is harmless: the import is one transaction, so a redelivered
    task starts from a clean slate and re-imports the file.
    """
    params = ctx.job.params
    root = Path(settings.PRIVATE_STORAGE_ROOT).resolve()
    path = (root / str(params.get("path", ""))).resolve()
    if not path.is_relative_to(root / "imports"):
        # Only files the upload view stored may be read, never a path smuggled into params.
        return JobOutcome(error="invalid import path")
    language = params.get("language") or settings.LANGUAGE_CODE
    with translation.override(language):
        report = material_import(path=path, fmt=params.get("format") or None, progress=ctx.progress)
        summary = import_summary(report)
    return JobOutcome(result=report.as_dict(), error="" if report.ok else summary)
