"""The Celery tasks of the material jobs: an import (the admin page's upload), an import of
answer pairs and a pairing, each with progress."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.utils import translation

from jobs.models import JobKind
from jobs.services import JobContext, JobOutcome, job_task
from material.import_common import ImportReport
from material.importing import import_summary, material_import, stored_import_path
from material.pairing import SCHEMES, pairs_make
from material.pairs import pairs_import, pairs_import_summary


def _run_import(
    ctx: JobContext,
    run: Callable[..., ImportReport],
    summarise: Callable[[ImportReport], str],
) -> JobOutcome:
    """An upload import as a job: the stored file, in the uploader's language; a crash is
    recorded on the job, not raised (the page shows it)."""
    params = ctx.job.params
    path = stored_import_path(str(params.get("path", "")))
    if path is None:
        return JobOutcome(error="invalid import path")
    language = params.get("language") or settings.LANGUAGE_CODE
    with translation.override(language):
        report = run(path=path, fmt=params.get("format") or None, progress=ctx.progress)
        summary = summarise(report)
    return JobOutcome(result=report.as_dict(), error="" if report.ok else summary)


@job_task(JobKind.IMPORT, name="material.tasks.import_material", reraise=False)
def import_material_job(ctx: JobContext) -> JobOutcome:
    """Import the job's uploaded file of instructions and answers.

    A worker killed mid-import is harmless: the import is one transaction, so a redelivered
    task starts from a clean slate and re-imports the file.
    """
    return _run_import(ctx, material_import, import_summary)


@job_task(JobKind.PAIR_IMPORT, name="material.tasks.import_pairs", reraise=False)
def import_pairs_job(ctx: JobContext) -> JobOutcome:
    """Import the job's uploaded file of answer pairs (one transaction, as the material
    import: a redelivered task starts from a clean slate)."""
    return _run_import(ctx, pairs_import, pairs_import_summary)


@job_task(JobKind.PAIR_MAKE, name="material.tasks.make_pairs", reraise=False)
def make_pairs_job(ctx: JobContext) -> JobOutcome:
    """Pair the platform's answers by the job's scheme and seed (one transaction; the seed is
    in the params, so a redelivered task draws the same pairs)."""
    params = ctx.job.params
    scheme = str(params.get("scheme", ""))
    if scheme not in SCHEMES:
        return JobOutcome(error=f"unknown pairing scheme {scheme!r}")
    seed = params.get("seed")
    report = pairs_make(
        scheme=scheme, seed=int(seed) if seed is not None else None, progress=ctx.progress
    )
    return JobOutcome(result=report.as_dict())
