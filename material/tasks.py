"""The Celery task that runs an import job (the admin page's upload) with progress."""

from __future__ import annotations

import logging
from pathlib import Path

from celery import shared_task
from django.conf import settings
from django.utils import translation

from jobs.models import Job
from jobs.services import job_claim, job_finish, job_progress
from material.importing import import_summary, material_import

logger = logging.getLogger(__name__)


@shared_task(name="material.tasks.import_material", acks_late=True)
def import_material_job(job_id: int) -> None:
    """Import the job's uploaded file. A job that already finished is left alone (retry-safe).

    A worker killed mid-import is harmless: the import is one transaction, so a redelivered
    task starts from a clean slate and re-imports the file.
    """
    attempt = job_claim(job_id)
    if attempt is None:
        return
    job = Job.objects.get(pk=job_id)
    root = Path(settings.PRIVATE_STORAGE_ROOT).resolve()
    path = (root / str(job.params.get("path", ""))).resolve()
    if not path.is_relative_to(root / "imports"):
        # Only files the upload view stored may be read, never a path smuggled into params.
        job_finish(job_id, attempt, error="invalid import path")
        return
    language = job.params.get("language") or settings.LANGUAGE_CODE
    with translation.override(language):
        try:
            with job_progress(job_id) as progress:
                report = material_import(
                    path=path, fmt=job.params.get("format") or None, progress=progress
                )
        except Exception as exc:
            logger.exception("import job %s crashed", job_id)
            job_finish(job_id, attempt, error=f"{type(exc).__name__}: {exc}")
            return
        summary = import_summary(report)
    if report.ok:
        job_finish(job_id, attempt, result=report.as_dict())
    else:
        job_finish(job_id, attempt, result=report.as_dict(), error=summary)
