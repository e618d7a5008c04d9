"""Importing the material to be evaluated: instructions, models and answers from a file.

One service, :func:`material_import`, reads a CSV, JSONL, XLSX or Parquet file, validates every
row in memory (the catalogue is loaded once, never a query per row), and writes the new
instructions, models and answers with a few bulk inserts inside one transaction. If any row is
wrong nothing is written, and every error names the row and column as the user sees them in
the file. Re-importing a file finds what it already wrote (by external id, or by the natural
keys: instruction text + task, answer instruction + model + text hash) and creates nothing.

Column names of the public POLLUX dataset (``instruction``, ``reference_answer``, ``answer``,
``model_id``, ``task_type``, ``task_subtype``, ``task_subsubtype``, ``difficulty``, ``domain``,
``criteria_name``...) are accepted next to our own. POLLUX has one row per (answer, criterion),
so the same instruction and answer repeat across rows; they are merged into one of each.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils.translation import gettext as _

from jobs.models import Job, JobKind
from jobs.services import enqueue
from lib.uploads import upload_write
from material.import_common import (
    EXTENSIONS,
    MAX_ERRORS,
    PROGRESS_TOTAL,
    Errors,
    ImportReport,
    Progress,
    Throttle,
    TooManyErrors,
    errors_summary,
    rows_validated,
)
from material.readers import Table, open_table
from material.validation import Catalogue, Validator
from material.writers import write_material


def material_import(
    *,
    path: Path,
    fmt: str | None = None,
    max_bytes: int | None = None,
    max_text_chars: int | None = None,
    max_errors: int = MAX_ERRORS,
    progress: Progress | None = None,
) -> ImportReport:
    """Import one file; returns the report. With any error nothing is written.

    ``progress(done, total)`` is called now and then with per mille of the whole import.
    """
    started = time.monotonic()
    max_bytes = settings.IMPORT_MAX_BYTES if max_bytes is None else max_bytes
    max_text = settings.IMPORT_MAX_TEXT_CHARS if max_text_chars is None else max_text_chars
    report = ImportReport()
    errors = Errors(max_errors)
    notify = Throttle(progress)
    notify(0, force=True)
    try:
        with open_table(path, fmt, max_bytes, errors) as table:
            validator = _read(table, max_text, errors, report, notify)
        if validator is not None and not errors:
            write_material(validator, errors, report, notify)
    except TooManyErrors:
        pass
    report.errors = errors.items
    report.errors_truncated = errors.truncated
    if report.errors:
        report.created = dict.fromkeys(report.created, 0)
        report.existing = dict.fromkeys(report.existing, 0)
    report.seconds = time.monotonic() - started
    notify(PROGRESS_TOTAL, force=True)
    return report


def _read(
    table: Table | None,
    max_text: int,
    errors: Errors,
    report: ImportReport,
    notify: Throttle,
) -> Validator | None:
    """Every row of the opened file validated (nothing written yet)."""
    if table is None:
        return None
    validator = Validator(table.columns, Catalogue(), max_text, errors, table.dynamic)
    for column in validator.missing_columns():
        errors.add(table.header_row, column, "missing_column", _("The column is missing."))
    if errors:
        return None
    rows_validated(table, validator, errors, report, notify)
    return validator


def import_summary(report: ImportReport) -> str:
    """One line for the command's output and the job's message."""
    failed = errors_summary(report)
    if failed is not None:
        return failed
    created, existing = report.created, report.existing
    return _(
        "%(rows)s rows: created %(ci)s instructions, %(cm)s models, %(ca)s answers; "
        "already present %(ei)s instructions, %(em)s models, %(ea)s answers."
    ) % {
        "rows": report.rows,
        "ci": created["instructions"],
        "cm": created["models"],
        "ca": created["answers"],
        "ei": existing["instructions"],
        "em": existing["models"],
        "ea": existing["answers"],
    }


def store_upload(upload: UploadedFile) -> str:
    """Store an uploaded file under PRIVATE_STORAGE_ROOT/imports/; returns its relative path.

    The stored name is random: the user's file name is kept only as a label. The import tasks
    read only files under that folder.
    """
    suffix = Path(upload.name or "").suffix.lower()
    relative = f"imports/{uuid.uuid4().hex}{suffix}"
    target = Path(settings.PRIVATE_STORAGE_ROOT) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    upload_write(upload, target)
    return relative


def stored_import_path(relative: str) -> Path | None:
    """The stored upload a job's params name, or None for a path outside imports/ (only files
    the upload views stored may be read, never a path smuggled into params)."""
    root = Path(settings.PRIVATE_STORAGE_ROOT).resolve()
    path = (root / relative).resolve()
    return path if path.is_relative_to(root / "imports") else None


def upload_params(upload: UploadedFile, relative: str, language: str) -> dict[str, Any]:
    """A job's params for a stored upload: its path, the user's file name (a label), format."""
    suffix = Path(upload.name or "").suffix.lower()
    return {
        "path": relative,
        "name": Path(upload.name or "").name[:200],
        "format": EXTENSIONS.get(suffix, ""),
        "size": upload.size,
        "language": language,
    }


@transaction.atomic
def import_job_create(*, upload: UploadedFile, user_id: int | None, language: str) -> Job:
    """Store an uploaded file (store_upload) and queue an import Job for it."""
    relative = store_upload(upload)
    # Sent after the commit, so the worker finds the job row. With eager tasks (local settings)
    # the import runs right there, before the view redirects.
    return enqueue(
        JobKind.IMPORT,
        upload_params(upload, relative, language),
        progress_total=PROGRESS_TOTAL,
        created_by_id=user_id,
    )
