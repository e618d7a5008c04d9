"""Files in and out of instruction writing: reference corpora uploaded for the originality
check (the material import's readers: CSV, JSONL, XLSX, Parquet with a `text` column), and the
export of accepted instructions under the public POLLUX column names."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from django.conf import settings
from django.db.models import Count, Q
from django.utils.translation import gettext as _

from authoring.models import ReferenceCorpus, Slot, SlotState
from authoring.rules import review_panel_ids
from authoring.selectors import visible_panels
from authoring.services import AuthoringError, corpus_upload
from dataset.instructions import instruction_notes, instruction_schema
from lib.uploads import upload_spooled
from lib.xlsx import workbook_bytes
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


def _devices_cell(devices: dict[str, int]) -> str:
    return "; ".join(f"{k}: {v}" for k, v in sorted(devices.items()))


def instruction_rows(campaign: Any, user: Any) -> list[dict[str, Any]]:
    slots = (
        Slot.objects.filter(
            campaign=campaign,
            state=SlotState.ACCEPTED,
            instruction__isnull=False,
            panel__in=visible_panels(user),
        )
        .select_related("instruction", "task", "task__group", "style", "author", "panel")
        .annotate(
            n_returns=Count("events", filter=Q(events__state_to=SlotState.RETURNED), distinct=True),
            n_edits=Count("revisions", filter=Q(revisions__kind="edit"), distinct=True),
        )
        .order_by("instruction_id")
    )
    closest = dict(
        Slot.objects.filter(campaign=campaign, checks__verdict="original").values_list(
            "pk", "checks__matches"
        )
    )
    # Blind review (authoring.see_author): a reviewer of the panel gets its rows without authors.
    blind = review_panel_ids(user)
    out = []
    for slot in slots:
        instruction = slot.instruction
        assert instruction is not None  # filtered above
        names = [node.name_en for node in slot.task.lineage()]
        matches = closest.get(slot.pk) or []
        out.append(
            {
                "instruction_id": instruction.external_id or str(instruction.pk),
                "instruction": instruction.text,
                "reference_answer": instruction.reference_answer,
                "task_type": names[0] if names else "",
                "task_subtype": names[1] if len(names) > 1 else "",
                "task_subsubtype": names[2] if len(names) > 2 else "",
                "task_path": slot.task.path,
                "difficulty": slot.complexity,
                "domain": slot.style.name_en if slot.style else "",
                "is_provocative": slot.ethics_flag,
                "stylistic_devices": _devices_cell(slot.devices),
                "author": "" if slot.panel_id in blind else slot.author.pseudonym,
                "panel": slot.panel.key,
                "review_rounds": slot.round,
                "returned": slot.n_returns,
                "editorial_edits": slot.n_edits,
                "closest_similarity": float(matches[0]["similarity"]) if matches else 0.0,
                "writing_minutes": round(slot.seconds_spent / 60, 1),
            }
        )
    return out


def instructions_file(campaign: Any, user: Any, fmt: str) -> tuple[bytes, str]:
    rows = instruction_rows(campaign, user)
    if fmt == "jsonl":
        body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
        return body, "application/x-ndjson; charset=utf-8"
    schema = instruction_schema()
    table = pa.Table.from_pylist(rows, schema=schema)
    body = workbook_bytes({"instructions": table}, notes=instruction_notes())
    return body, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
