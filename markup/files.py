"""Span markups in and out as files: the contest's JSON and inline markup in, all-or-nothing;
the submitted markups out as tables (Parquet, XLSX) and as the contest's JSON, one file each.

Import (`markups_import`): every file is read and validated before anything is stored, then all
are stored in one transaction; a refusal names the file and the field (`selections[3].type`,
`meta.subject`, `text`) and leaves the database as it was. A `.json` file is the contest JSON;
any other file is inline markup, read with the regulations' eight error-handling rules, whose
warnings come back with the report.

Export (`markup_tables`, `markups_contest_zip`): submitted markups only (a draft is work in
progress). The tables name each markup's author as stored (the expert's pseudonym or the
system's name): the export is an admin's, as the dataset's is.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

import pyarrow as pa
from django.db import transaction
from django.db.models import Q

from dataset.markup import markup_schemas
from lib import bounded_json
from markup.models import Markup, MarkupSource, MarkupStatus, MarkupText
from markup.services import MarkupInvalid, markup_document, markup_store, text_external_id
from markup.work import independent_agreement
from panels.models import Expert
from protocol.markup_classifier import load_classifier
from protocol.markup_format import MarkupDocument, MarkupFormatError, parse_markup
from protocol.markup_json import read_json, write_json

# Django refuses a request of more than DATA_UPLOAD_MAX_NUMBER_FILES (100) files; a markup file
# is a few kilobytes, so 20 MB is hundreds of essays.
MAX_FILES = 100
MAX_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class FileError:
    """Why one file is refused: `field` is where in it (empty: the file as a whole)."""

    file: str
    field: str
    message: str


@dataclass
class ImportReport:
    stored: list[tuple[str, Markup]] = field(default_factory=list)  # (file, markup)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (file, parser warning)
    errors: list[FileError] = field(default_factory=list)


def read_document(
    name: str, data: bytes, classifier_name: str, version: str
) -> tuple[MarkupDocument, list[str]]:
    """The document of one file and the inline parser's warnings (rule, line:column, text).
    Raises UnicodeDecodeError or MarkupFormatError (naming the field)."""
    source = data.decode("utf-8-sig")
    if PurePath(name).suffix.lower() == ".json":
        # Read here with the bounded reader (the protocol imports no lib): a file nested 50,000
        # deep or holding a 5,000-digit number is refused naming the limit, not a 500.
        try:
            value = bounded_json.loads(source, max_bytes=MAX_BYTES)
        except bounded_json.JSONLimitError as error:
            raise MarkupFormatError("(document)", str(error)) from error
        return read_json(value), []
    parsed = parse_markup(source, load_classifier(classifier_name, version))
    notes = [f"rule {w.rule} at {w.line}:{w.column}: {w.message}" for w in parsed.warnings]
    return parsed.document, notes


def expert_named(author: str) -> Expert | None:
    """The expert a file's author label names (his pseudonym or login), if any."""
    if not author:
        return None
    return Expert.objects.filter(Q(pseudonym=author) | Q(user__username=author)).first()


def markups_import(
    files: Sequence[tuple[str, bytes]],
    *,
    source: str = MarkupSource.EXPERT,
    author: str = "",
    classifier_name: str = "prochtenie",
    classifier_version: str = "2020",
) -> ImportReport:
    """Store one markup per file, all or none. `author` overrides each file's `expert` field;
    an expert markup whose author is an expert's pseudonym or login is linked to him."""
    report = ImportReport()
    if len(files) > MAX_FILES:
        report.errors.append(FileError("", "files", f"at most {MAX_FILES} files at once"))
        return report
    if sum(len(data) for _name, data in files) > MAX_BYTES:
        report.errors.append(FileError("", "files", f"more than {MAX_BYTES // 2**20} MB at once"))
        return report
    documents: list[tuple[str, MarkupDocument]] = []
    texts: dict[str, tuple[str, str]] = {}  # external id → (file, text) within this upload
    for name, data in files:
        try:
            document, notes = read_document(name, data, classifier_name, classifier_version)
        except UnicodeDecodeError:
            report.errors.append(FileError(name, "", "not UTF-8 text"))
            continue
        except MarkupFormatError as error:
            report.errors.append(FileError(name, error.field, error.message))
            continue
        key = text_external_id(document)
        earlier = texts.setdefault(key, (name, document.text))
        if earlier[1] != document.text:
            report.errors.append(
                FileError(name, "text", f"text {key!r} differs from the one in {earlier[0]}")
            )
            continue
        report.notes.extend((name, note) for note in notes)
        documents.append((name, document))
    if report.errors:
        return report
    try:
        with transaction.atomic():
            for name, document in documents:
                label = author or str(document.meta.get("expert") or "").strip()
                expert = expert_named(label) if source == MarkupSource.EXPERT else None
                try:
                    markup = markup_store(
                        document,
                        source=source,
                        author=label,
                        expert=expert,
                        classifier_name=classifier_name,
                        classifier_version=classifier_version,
                    )
                except MarkupInvalid as error:
                    report.errors.append(FileError(name, error.field, error.message))
                    continue
                report.stored.append((name, markup))
            if report.errors:
                # Every refusal is reported, then nothing of the upload stays.
                transaction.set_rollback(True)
    finally:
        if report.errors:
            report.stored = []
    return report


# --------------------------------------------------------------------------------------------
# Export.
# --------------------------------------------------------------------------------------------


def _submitted(texts: Iterable[MarkupText]) -> list[tuple[MarkupText, list[Markup]]]:
    ids = [t.pk for t in texts]
    loaded = (
        MarkupText.objects.filter(pk__in=ids)
        .order_by("external_id")
        .prefetch_related("markups", "markups__panel")
    )
    return [
        (text, [m for m in text.markups.all() if m.status == MarkupStatus.SUBMITTED])
        for text in loaded
    ]


def markup_tables(texts: Iterable[MarkupText] | None = None) -> dict[str, pa.Table]:
    """The texts, their submitted markups and the markups' fragments as three tables."""
    if texts is None:
        texts = MarkupText.objects.all()
    text_rows: list[dict[str, object]] = []
    markup_rows: list[dict[str, object]] = []
    fragment_rows: list[dict[str, object]] = []
    for text, markups in _submitted(texts):
        text_rows.append(
            {
                "text_id": text.external_id,
                "subject": text.subject,
                "classifier": f"{text.classifier_name} {text.classifier_version}",
                "characters": len(text.text),
                "markups": len(markups),
                "agreement": independent_agreement(text),
                "text": text.text,
            }
        )
        for markup in markups:
            fragments = markup_document(markup).fragments
            markup_rows.append(
                {
                    "markup_id": markup.pk,
                    "text_id": text.external_id,
                    "source": markup.source,
                    "author": markup.author,
                    "panel": markup.panel.number if markup.panel else None,
                    "role": markup.role,
                    "submitted_at": markup.submitted_at.isoformat() if markup.submitted_at else "",
                    "time_spent_ms": markup.time_spent_ms,
                    "fragments": len(fragments),
                    "criteria": json.dumps(markup.criteria, ensure_ascii=False),
                    "rationales": json.dumps(markup.rationales, ensure_ascii=False),
                }
            )
            for position, f in enumerate(fragments, start=1):
                span = text.text[f.start : f.end] if f.located else ""
                fragment_rows.append(
                    {
                        "markup_id": markup.pk,
                        "text_id": text.external_id,
                        "position": position,
                        "start": f.start,
                        "end": f.end,
                        "group": f.group,
                        "type": f.code,
                        "subtype": f.subtype,
                        "comment": f.comment,
                        "explanation": f.explanation,
                        "correction": f.correction,
                        "tag": f.tag,
                        "fragment": span,
                    }
                )
    # The kind's export tables (the dataset app's schema of the markup kind).
    schemas = markup_schemas()
    rows = {"texts": text_rows, "markups": markup_rows, "fragments": fragment_rows}
    return {name: pa.Table.from_pylist(rows[name], schema=schemas[name]) for name in schemas}


def contest_files(texts: Iterable[MarkupText] | None = None) -> dict[str, bytes]:
    """Each submitted markup as the contest's JSON: `json/<text id>/<markup id>.json`."""
    if texts is None:
        texts = MarkupText.objects.all()
    files: dict[str, bytes] = {}
    for text, markups in _submitted(texts):
        # The text id goes into a zip member name: keep it to one safe path segment.
        folder = "".join(c if c.isalnum() or c in "-_." else "_" for c in text.external_id)
        for markup in markups:
            files[f"json/{folder}/{markup.pk}.json"] = write_json(markup_document(markup)).encode()
    return files


def markups_contest_zip(texts: Iterable[MarkupText] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in contest_files(texts).items():
            archive.writestr(name, data)
    return buffer.getvalue()


README = [
    ("Pollux Studio span markups", "Submitted markups (ПРО//ЧТЕНИЕ format), drafts excluded."),
    (
        "Sheet texts",
        "One row per text; agreement: min(M(X,Y), M(Y,X)) of the first two "
        "independent expert markups (docs/spans.md).",
    ),
    ("Sheet markups", "One row per markup; criteria and rationales as JSON."),
    (
        "Sheet fragments",
        "One row per fragment; start/end 0-based, end-exclusive character "
        "offsets; empty start/end: a whole-text error.",
    ),
]
