"""Reference corpora for the originality check: a file (CSV, JSONL, XLSX or Parquet with a
`text` column, read by the material import's readers) stored whole or not at all, each error
naming its row and column."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Count
from django.utils.translation import gettext as _

from authoring.models import ReferenceCorpus
from authoring.services import AuthoringError, corpus_upload
from lib.uploads import upload_spooled
from material.import_common import Errors, TooManyErrors, cell
from material.readers import Table, open_table
from protocol import authoring as rules

CORPUS_COLUMNS: dict[str, tuple[str, ...]] = {
    "text": ("text", "instruction", "content"),
    "id": ("id", "external_id", "instruction_id"),
}
CORPUS_TYPES: dict[str, tuple[str, ...]] = {"text": ("string",), "id": ("string", "integer")}
MAX_ERRORS = 50


def _field(row: dict[str, Any], aliases: tuple[str, ...]) -> Any:
    for name in aliases:
        if name in row:
            return row[name]
    return None


def corpora_list() -> list[ReferenceCorpus]:
    return list(ReferenceCorpus.objects.annotate(n=Count("texts")).order_by("name"))


def corpus_from_upload(*, name: str, upload: Any, user: Any) -> ReferenceCorpus:
    """Store a reference corpus from an uploaded file, whole or not at all (errors name the
    row and column)."""
    name = (name or "").strip()
    if not name:
        raise AuthoringError(_("a corpus needs a name"), "name")
    if len(name) > 200:
        raise AuthoringError(_("at most 200 characters"), "name")
    if upload is None:
        raise AuthoringError(_("choose a file"), "file")
    max_bytes = int(settings.IMPORT_MAX_BYTES)
    if upload.size and upload.size > max_bytes:
        raise AuthoringError(
            _("the file is larger than %(max_bytes)s bytes")
            % {"max_bytes": format(max_bytes, ",")},
            "file",
            status=413,
        )
    errors = Errors(limit=MAX_ERRORS)
    rows: list[tuple[str, str]] = []
    try:
        with (
            upload_spooled(upload) as path,
            open_table(
                path, None, max_bytes, errors, aliases=CORPUS_COLUMNS, types=CORPUS_TYPES
            ) as table,
        ):
            if table is not None:
                rows = _corpus_rows(table, errors)
    except TooManyErrors:
        pass
    if errors:
        shown = "; ".join(
            f"row {e.row}, {e.column}: {e.message}"
            if e.row
            else f"{e.column or 'file'}: {e.message}"
            for e in errors.items
        )
        raise AuthoringError(shown, "file", status=422)
    return corpus_upload(name=name, rows=rows, user=user)


def _corpus_rows(table: Table, errors: Errors) -> list[tuple[str, str]]:
    """(id, text) of every row of an opened corpus file; each bad row is an error."""
    rows: list[tuple[str, str]] = []
    if not table.dynamic and not set(CORPUS_COLUMNS["text"]) & set(table.columns):
        errors.add(table.header_row, "text", "missing_column", "The column is missing.")
    if errors:
        return rows
    for number, row in table.rows:
        text = cell(_field(row, CORPUS_COLUMNS["text"])).strip()
        if not text:
            errors.add(number, "text", "empty", "The text is empty.")
        elif "\x00" in text:
            errors.add(number, "text", "nul", "The text contains a NUL character.")
        elif len(text) > rules.MAX_TEXT_CHARS:
            errors.add(number, "text", "too_long", "The text is too long.")
        else:
            rows.append((cell(_field(row, CORPUS_COLUMNS["id"])).strip(), text))
    if not rows and not errors:
        errors.add(None, None, "empty_file", "The file has no data rows.")
    return rows
