"""Answer pairs for the side-by-side (REPA) kind: imported from a file, or made on the platform.

:func:`pairs_import` reads a CSV, JSONL, XLSX or Parquet file with the public REPA dataset's
columns (``query``, ``query_category``, ``model_name_1``, ``model_name_2``, ``model_output_1``,
``model_output_2``; optional ``id`` and ``source``) or our synonyms, through the material
import's readers and cell checks. For each row it finds or creates the instruction (by its text,
or by ``instruction_id``; no POLLUX task), the two models (by name), the two answers (by the
natural key: instruction, model, text hash) and the pair, "A" being model 1. Every row is checked
before anything is written; with any error nothing is written, and each error names the data row
and the column. Importing the same file again creates nothing.

Pairs made from the answers already on the platform (random or all) are `material.pairing`'s.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import MD5
from django.utils.translation import gettext as _

from jobs.models import Job, JobKind
from jobs.services import enqueue
from material.import_common import (
    BATCH_SIZE,
    MAX_ERRORS,
    MAX_LENGTHS,
    PROGRESS_TOTAL,
    READ_SHARE,
    Errors,
    ImportReport,
    Progress,
    RowError,
    Throttle,
    TooManyErrors,
    chunks,
    errors_summary,
    rows_validated,
    sha256_hex,
    write_all_or_nothing,
)
from material.importing import store_upload, stored_import_path, upload_params
from material.models import Answer, AnswerPair, Instruction, LanguageModel
from material.readers import Table, open_table
from material.validation import FieldReader

# Canonical field -> accepted column names; REPA's first (it wins when both are present).
PAIR_COLUMNS: dict[str, tuple[str, ...]] = {
    "instruction": ("query", "instruction"),
    "category": ("query_category", "category"),
    "model_a": ("model_name_1", "model_a"),
    "model_b": ("model_name_2", "model_b"),
    "answer_a": ("model_output_1", "answer_a"),
    "answer_b": ("model_output_2", "answer_b"),
    "pair_id": ("id", "pair_id"),
    "instruction_id": ("instruction_id",),
    "source": ("source",),
}


PAIR_REQUIRED = ("instruction", "model_a", "model_b", "answer_a", "answer_b")


# The short fields' limits: the material import's where the field is the same, the model's own
# column width for the pair's.
PAIR_MAX_LENGTHS = {
    "model_a": MAX_LENGTHS["model_name"],
    "model_b": MAX_LENGTHS["model_name"],
    "instruction_id": MAX_LENGTHS["instruction_id"],
    "source": MAX_LENGTHS["source"],
    "pair_id": AnswerPair._meta.get_field("external_id").max_length or 128,
    "category": AnswerPair._meta.get_field("category").max_length or 100,
}


PAIR_PARQUET_TYPES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(PAIR_COLUMNS, ("string",)),
    "pair_id": ("string", "integer"),
    "instruction_id": ("string", "integer"),
}


def _pk(pk: int | None) -> int:
    """A row's pk where it must be set: everything is found or written before it is used."""
    assert pk is not None
    return pk


# --------------------------------------------------------------------------- validation


@dataclass
class _InstructionItem:
    row: int
    text: str
    external_id: str | None
    source: str
    pk: int | None = None


@dataclass
class _AnswerItem:
    row: int
    instruction_key: str
    model: str
    text: str
    text_hash: str
    pk: int | None = None


# An answer in the file: (instruction key, model name, text hash).
AnswerKey = tuple[str, str, str]


@dataclass
class _PairItem:
    row: int
    external_id: str | None
    instruction_key: str
    answer_a: AnswerKey
    answer_b: AnswerKey
    category: str
    source: str


class PairValidator(FieldReader):
    """Turns rows into unique instructions, models, answers and pairs, collecting errors."""

    def __init__(
        self, columns: Iterable[str], max_text: int, errors: Errors, dynamic: bool = False
    ) -> None:
        super().__init__(columns, PAIR_COLUMNS, PAIR_MAX_LENGTHS, max_text, errors, dynamic)
        # Instructions by the SHA-256 of their text: a pair's query has no task to key on.
        self.instructions: dict[str, _InstructionItem] = {}
        self.instruction_ids: dict[str, str] = {}
        self.models: set[str] = set()
        self.answers: dict[AnswerKey, _AnswerItem] = {}
        self.pairs: list[_PairItem] = []
        self.pair_rows: dict[frozenset[AnswerKey], int] = {}
        self.pair_ids: dict[str, int] = {}

    def missing_columns(self) -> list[str]:
        return [PAIR_COLUMNS[f][0] for f in PAIR_REQUIRED if f not in self.col]

    def add(self, number: int, row: dict[str, Any]) -> None:
        before = len(self.errors.items)
        text = self._text(number, row, "instruction", required=True)
        text_a = self._text(number, row, "answer_a", required=True)
        text_b = self._text(number, row, "answer_b", required=True)
        model_a = self._short(number, row, "model_a")
        model_b = self._short(number, row, "model_b")
        category = self._short(number, row, "category")
        source = self._short(number, row, "source")
        pair_id = self._short(number, row, "pair_id")
        instruction_id = self._short(number, row, "instruction_id")
        for name, value in (("model_a", model_a), ("model_b", model_b)):
            if value == "":
                self.errors.add(number, self._name(name), "empty_text", _("No model named."))
        if model_a and model_a == model_b:
            self.errors.add(
                number,
                self._name("model_b"),
                "same_model",
                _("Both answers are by the same model “%s”: a pair compares two models.") % model_a,
            )
        if len(self.errors.items) > before:
            return
        # Only a clean row gets here; the asserts narrow the types.
        assert text is not None and text_a is not None and text_b is not None
        assert model_a and model_b and category is not None and source is not None

        ikey = sha256_hex(text)
        if not self._instruction(number, ikey, text, instruction_id or None, source):
            return
        keys: list[AnswerKey] = []
        for model, answer_text in ((model_a, text_a), (model_b, text_b)):
            self.models.add(model)
            akey = (ikey, model, sha256_hex(answer_text))
            self.answers.setdefault(akey, _AnswerItem(number, ikey, model, answer_text, akey[2]))
            keys.append(akey)

        both = frozenset(keys)
        seen = self.pair_rows.get(both)
        if seen is not None:
            self.errors.add(
                number,
                self._name("instruction"),
                "duplicate_pair",
                _("The same pair (query, both models and answers) is on row %(row)s.")
                % {"row": seen},
            )
            return
        if pair_id:
            seen = self.pair_ids.get(pair_id)
            if seen is not None:
                self.errors.add(
                    number,
                    self._name("pair_id"),
                    "duplicate_id",
                    _("The id “%(id)s” is on row %(row)s too.") % {"id": pair_id, "row": seen},
                )
                return
            self.pair_ids[pair_id] = number
        self.pair_rows[both] = number
        self.pairs.append(
            _PairItem(number, pair_id or None, ikey, keys[0], keys[1], category, source)
        )

    def _instruction(
        self, number: int, ikey: str, text: str, external_id: str | None, source: str
    ) -> bool:
        """Record the row's instruction; False (with the error) when its id contradicts."""
        if external_id:
            other = self.instruction_ids.get(external_id)
            if other is not None and other != ikey:
                self.errors.add(
                    number,
                    self._name("instruction_id"),
                    "duplicate_id",
                    _("instruction_id “%(id)s” is given on row %(row)s with another query.")
                    % {"id": external_id, "row": self.instructions[other].row},
                )
                return False
        seen = self.instructions.get(ikey)
        if seen is None:
            self.instructions[ikey] = _InstructionItem(number, text, external_id, source)
        elif external_id and seen.external_id and seen.external_id != external_id:
            self.errors.add(
                number,
                self._name("instruction_id"),
                "duplicate_id",
                _("The same query is on row %(row)s under instruction_id “%(id)s”.")
                % {"row": seen.row, "id": seen.external_id},
            )
            return False
        elif external_id and not seen.external_id:
            seen.external_id = external_id
        if external_id:
            self.instruction_ids[external_id] = ikey
        return True


# --------------------------------------------------------------------------- writing


def _write(
    validator: PairValidator, errors: Errors, report: ImportReport, notify: Throttle
) -> None:
    """Find what exists, check it agrees, bulk-insert the rest: all in one transaction."""
    write_all_or_nothing(lambda: _write_locked(validator, errors, report, notify), errors)


def _write_locked(
    validator: PairValidator, errors: Errors, report: ImportReport, notify: Throttle
) -> None:
    model_pk = {
        m.name: m.pk
        for m in LanguageModel.objects.filter(name__in=validator.models, version="").only("name")
    }
    new_models = [LanguageModel(name=name) for name in sorted(validator.models - set(model_pk))]
    instructions = list(validator.instructions.values())
    _find_instructions(validator, instructions, errors)
    answers = list(validator.answers.values())
    _find_answers(validator, answers, model_pk)
    if errors:
        return
    notify(READ_SHARE + 30, force=True)

    LanguageModel.objects.bulk_create(new_models, batch_size=BATCH_SIZE)
    model_pk.update({m.name: m.pk for m in new_models})
    new_instructions = [i for i in instructions if i.pk is None]
    for chunk in chunks(new_instructions):
        objs = [
            Instruction(external_id=i.external_id, text=i.text, task=None, source=i.source)
            for i in chunk
        ]
        Instruction.objects.bulk_create(objs)
        for item, obj in zip(chunk, objs, strict=True):
            item.pk = obj.pk
    new_answers = [a for a in answers if a.pk is None]
    for chunk in chunks(new_answers):
        answer_objs = [
            Answer(
                instruction_id=_pk(validator.instructions[a.instruction_key].pk),
                model_id=model_pk[a.model],
                text=a.text,
                text_hash=a.text_hash,
            )
            for a in chunk
        ]
        Answer.objects.bulk_create(answer_objs)
        for answer_item, answer_obj in zip(chunk, answer_objs, strict=True):
            answer_item.pk = answer_obj.pk
    notify(READ_SHARE + 80, force=True)

    new_pairs = _new_pairs(validator, errors)
    if errors:
        return
    AnswerPair.objects.bulk_create(new_pairs, batch_size=BATCH_SIZE)
    report.created = {
        "instructions": len(new_instructions),
        "models": len(new_models),
        "answers": len(new_answers),
        "pairs": len(new_pairs),
    }
    report.existing = {
        "instructions": len(instructions) - len(new_instructions),
        "models": len(model_pk) - len(new_models),
        "answers": len(answers) - len(new_answers),
        "pairs": len(validator.pairs) - len(new_pairs),
    }


def _find_instructions(
    validator: PairValidator, instructions: list[_InstructionItem], errors: Errors
) -> None:
    """Set .pk on the file's instructions that exist: by instruction_id, else by exact text
    (one without a POLLUX task first, as a previous pair import made it, then the oldest)."""
    by_id = {i.external_id: i for i in instructions if i.external_id}
    for chunk in chunks(list(by_id)):
        stored = Instruction.objects.filter(external_id__in=chunk).values_list(
            "external_id", "pk", "text"
        )
        for external_id, pk, text in stored:
            item = by_id[external_id or ""]
            if text != item.text:
                # Material under evaluation is never silently rewritten by a later file.
                errors.add(
                    item.row,
                    validator._name("instruction"),
                    "conflict",
                    _("instruction_id “%s” already exists with a different text.") % external_id,
                )
            item.pk = pk
    by_text = {i.text: i for i in instructions if i.pk is None}
    # The database compares MD5s of the texts (one scan per chunk), Python the exact text.
    wanted = {
        hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest() for text in by_text
    }
    for chunk in chunks(sorted(wanted)):
        candidates = (
            Instruction.objects.annotate(text_md5=MD5("text"))
            .filter(text_md5__in=chunk)
            .order_by(F("task_id").asc(nulls_first=True), "pk")
            .values_list("pk", "text", "external_id")
        )
        for pk, text, external_id in candidates:
            match = by_text.get(text)
            if match is None or match.pk is not None:
                continue
            if match.external_id and external_id and external_id != match.external_id:
                errors.add(
                    match.row,
                    validator._name("instruction_id"),
                    "conflict",
                    _("This query already exists under instruction_id “%s”.") % external_id,
                )
            match.pk = pk


def _find_answers(
    validator: PairValidator, answers: list[_AnswerItem], model_pk: dict[str, int]
) -> None:
    """Set .pk on the file's answers that exist, by their natural key (instruction, model,
    text hash): only answers whose instruction and model both exist can exist themselves."""
    natural: dict[tuple[int, int, str], _AnswerItem] = {}
    for a in answers:
        instruction_pk = validator.instructions[a.instruction_key].pk
        if instruction_pk is not None and a.model in model_pk:
            natural[(instruction_pk, model_pk[a.model], a.text_hash)] = a
    old_instructions = sorted({key[0] for key in natural})
    for chunk in chunks(sorted({key[2] for key in natural})):
        found = Answer.objects.filter(
            instruction_id__in=old_instructions, text_hash__in=chunk
        ).values_list("instruction_id", "model_id", "text_hash", "pk")
        for instruction_id, model_id, text_hash, pk in found:
            answer = natural.get((instruction_id, model_id, text_hash))
            if answer is not None:
                answer.pk = pk


def _new_pairs(validator: PairValidator, errors: Errors) -> list[AnswerPair]:
    """The file's pairs not stored yet. A stored pair is found by its id, or by its two
    answers in either order (A/B is only the placement); an id that names other answers, or
    a pair stored under another id, is a conflict."""
    answer_pk = {key: _pk(a.pk) for key, a in validator.answers.items()}
    by_id = {p.external_id: p for p in validator.pairs if p.external_id}
    stored: set[int] = set()
    for chunk in chunks(list(by_id)):
        for external_id, a, b in AnswerPair.objects.filter(external_id__in=chunk).values_list(
            "external_id", "answer_a_id", "answer_b_id"
        ):
            item = by_id[external_id or ""]
            if {a, b} != {answer_pk[item.answer_a], answer_pk[item.answer_b]}:
                errors.add(
                    item.row,
                    validator._name("pair_id"),
                    "conflict",
                    _("The pair id “%s” already exists with other answers.") % external_id,
                )
            stored.add(item.row)
    rest = {
        frozenset((answer_pk[p.answer_a], answer_pk[p.answer_b])): p
        for p in validator.pairs
        if p.row not in stored
    }
    answer_ids = sorted({pk for both in rest for pk in both})
    for chunk in chunks(answer_ids):
        found = AnswerPair.objects.filter(
            Q(answer_a_id__in=chunk) | Q(answer_b_id__in=chunk)
        ).values_list("answer_a_id", "answer_b_id", "external_id")
        for a, b, external_id in found:
            twin = rest.get(frozenset((a, b)))
            if twin is None or twin.row in stored:
                continue
            if twin.external_id and external_id and external_id != twin.external_id:
                errors.add(
                    twin.row,
                    validator._name("pair_id"),
                    "conflict",
                    _("This pair already exists under the id “%s”.") % external_id,
                )
            stored.add(twin.row)
    return [
        AnswerPair(
            external_id=p.external_id,
            instruction_id=_pk(validator.instructions[p.instruction_key].pk),
            answer_a_id=answer_pk[p.answer_a],
            answer_b_id=answer_pk[p.answer_b],
            category=p.category,
            source=p.source,
        )
        for p in validator.pairs
        if p.row not in stored
    ]


# --------------------------------------------------------------------------- the import


def _empty_counts() -> dict[str, int]:
    return {"instructions": 0, "models": 0, "answers": 0, "pairs": 0}


def _open(
    path: Path, fmt: str | None, max_bytes: int, errors: Errors
) -> AbstractContextManager[Table | None]:
    """open_table with the pairs' columns and the kinds they accept."""
    return open_table(path, fmt, max_bytes, errors, aliases=PAIR_COLUMNS, types=PAIR_PARQUET_TYPES)


def _validator(table: Table | None, max_text: int, errors: Errors) -> PairValidator | None:
    """The opened file's header checked: every required column present."""
    if table is None:
        return None
    validator = PairValidator(table.columns, max_text, errors, table.dynamic)
    for column in validator.missing_columns():
        errors.add(table.header_row, column, "missing_column", _("The column is missing."))
    return None if errors else validator


def pairs_import(
    *,
    path: Path,
    fmt: str | None = None,
    max_bytes: int | None = None,
    max_text_chars: int | None = None,
    max_errors: int = MAX_ERRORS,
    progress: Progress | None = None,
) -> ImportReport:
    """Import a file of answer pairs; returns the report. With any error nothing is written.

    The limits are the material import's (settings.IMPORT_MAX_BYTES, IMPORT_MAX_TEXT_CHARS).
    ``progress(done, total)`` is called now and then with per mille of the whole import.
    """
    started = time.monotonic()
    max_bytes = settings.IMPORT_MAX_BYTES if max_bytes is None else max_bytes
    max_text = settings.IMPORT_MAX_TEXT_CHARS if max_text_chars is None else max_text_chars
    report = ImportReport(created=_empty_counts(), existing=_empty_counts())
    errors = Errors(max_errors)
    notify = Throttle(progress)
    notify(0, force=True)
    try:
        with _open(path, fmt, max_bytes, errors) as table:
            validator = _validator(table, max_text, errors)
            if table is not None and validator is not None:
                rows_validated(table, validator, errors, report, notify)
                if not errors:
                    _write(validator, errors, report, notify)
    except TooManyErrors:
        pass
    report.errors = errors.items
    report.errors_truncated = errors.truncated
    if report.errors:
        report.created, report.existing = _empty_counts(), _empty_counts()
    report.seconds = time.monotonic() - started
    notify(PROGRESS_TOTAL, force=True)
    return report


def pairs_header_errors(
    *, path: Path, fmt: str | None = None, max_bytes: int | None = None
) -> list[RowError]:
    """What is wrong with the file before its rows are read (format, size, encoding, a
    missing column): the upload page refuses such a file at once instead of queueing it."""
    max_bytes = settings.IMPORT_MAX_BYTES if max_bytes is None else max_bytes
    errors = Errors(MAX_ERRORS)
    try:
        with _open(path, fmt, max_bytes, errors) as table:
            _validator(table, settings.IMPORT_MAX_TEXT_CHARS, errors)
    except TooManyErrors:
        pass
    return errors.items


def pairs_import_summary(report: ImportReport) -> str:
    """One line for the command's output and the job's message."""
    failed = errors_summary(report)
    if failed is not None:
        return failed
    created, existing = report.created, report.existing
    return _(
        "%(rows)s rows: created %(cp)s pairs, %(ci)s instructions, %(cm)s models, "
        "%(ca)s answers; already present %(ep)s pairs, %(ei)s instructions, %(em)s models, "
        "%(ea)s answers."
    ) % {
        "rows": report.rows,
        "cp": created["pairs"],
        "ci": created["instructions"],
        "cm": created["models"],
        "ca": created["answers"],
        "ep": existing["pairs"],
        "ei": existing["instructions"],
        "em": existing["models"],
        "ea": existing["answers"],
    }


@dataclass
class PairUpload:
    """An upload of a pairs file: the queued job, or what is wrong with the file's header."""

    job: Job | None
    errors: list[RowError] = field(default_factory=list)


@transaction.atomic
def pairs_upload(*, upload: UploadedFile, user_id: int | None, language: str) -> PairUpload:
    """Store the uploaded file, check its header, and queue a pair import Job for it.

    A file that cannot be opened or lacks a column is refused here, with the errors, and not
    kept; its rows are checked by the job.
    """
    relative = store_upload(upload)
    path = stored_import_path(relative)
    assert path is not None  # store_upload writes under imports/
    params = upload_params(upload, relative, language)
    errors = pairs_header_errors(path=path, fmt=params["format"] or None)
    if errors:
        path.unlink(missing_ok=True)
        return PairUpload(job=None, errors=errors)
    job = enqueue(JobKind.PAIR_IMPORT, params, progress_total=PROGRESS_TOTAL, created_by_id=user_id)
    return PairUpload(job=job)
