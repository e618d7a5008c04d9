"""What every step of the material import shares: formats, limits, aliases, report, errors."""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from django.db import IntegrityError, connection, transaction
from django.utils.translation import gettext as _

from taxonomy.models import Complexity

if TYPE_CHECKING:
    from material.readers import Table

Progress = Callable[[int, int], None]


FORMATS = ("csv", "jsonl", "xlsx", "parquet")


EXTENSIONS = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".xlsx": "xlsx",
    ".parquet": "parquet",
    ".pq": "parquet",
}


BATCH_SIZE = 2000


MAX_ERRORS = 50


# Progress is reported in per mille of the whole import: reading and checking the rows is most
# of the work, the bulk writes the rest.
PROGRESS_TOTAL = 1000


READ_SHARE = 850


# An XLSX is a zip of XML: a small file can unpack to gigabytes (a "zip bomb"). The members'
# declared sizes are checked before openpyxl opens anything.
XLSX_MAX_UNPACK_FACTOR = 10


XLSX_MAX_RATIO = 200


# Imports are serialised by this PostgreSQL advisory lock, so two uploads of the same file at
# once cannot both decide a row is new and then collide on a unique constraint.
ADVISORY_LOCK_KEY = 0x504F4C4C5558  # "POLLUX"


def advisory_lock() -> None:
    """Take the imports' lock until the transaction ends: every writer of material (the
    material import, the pairs import, the pairing) holds it, so none of them decides a row is
    new while another is writing it."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ADVISORY_LOCK_KEY])


def chunks(items: list[Any], size: int = BATCH_SIZE) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


# Canonical field -> accepted column names, our own first (it wins when both are present).
COLUMNS: dict[str, tuple[str, ...]] = {
    "instruction": ("instruction", "instruction_text"),
    "reference_answer": ("reference_answer", "reference"),
    "answer": ("answer", "answer_text"),
    "instruction_id": ("instruction_id",),
    "answer_id": ("answer_id",),
    "model_name": ("model_name", "model_id", "model"),
    "model_version": ("model_version",),
    "model_provider": ("model_provider",),
    "task_path": ("task_path",),
    "task_type": ("task_type",),
    "task_subtype": ("task_subtype",),
    "task_subsubtype": ("task_subsubtype",),
    "style": ("style", "domain"),
    "complexity": ("complexity", "difficulty"),
    "ethics_flag": ("ethics_flag", "is_provocative"),
    "author": ("author",),
    "source": ("source",),
    "generation_meta": ("generation_meta",),
    "criteria_name": ("criteria_name", "criterion"),
}


REQUIRED = ("instruction", "answer", "model_name")


# Everything that identifies a row's instruction and answer (all but the criterion).
SIGNATURE_FIELDS = tuple(name for name in COLUMNS if name != "criteria_name")


TEXT_FIELDS = ("instruction", "reference_answer", "answer")


MAX_LENGTHS = {
    "instruction_id": 128,
    "answer_id": 128,
    "model_name": 200,
    "model_version": 100,
    "model_provider": 200,
    "author": 200,
    "source": 200,
}


COMPLEXITY_ALIASES = {
    Complexity.EASY: ("easy", "лёгкая", "легкая", "лёгкий", "легкий", "простая", "простой"),
    Complexity.MEDIUM: ("medium", "средняя", "средний", "normal"),
    Complexity.HARD: ("hard", "сложная", "сложный", "трудная", "трудный", "difficult"),
}


# Parquet columns carry types: each field's accepted Arrow types (anything else is refused
# with the column named, never turned into "[1, 2]" or "4.5").
PARQUET_TYPES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(COLUMNS, ("string",)),
    "instruction_id": ("string", "integer"),
    "answer_id": ("string", "integer"),
    "ethics_flag": ("boolean", "integer", "string"),
    "generation_meta": ("string", "struct", "map"),
}


# JSON nested deeper than this (a JSONL line, generation_meta) is refused per row: nothing we
# import needs it, and very deep nesting breaks parsers and the database's JSON encoder.
MAX_JSON_DEPTH = 32


TRUE_WORDS = {"1", "true", "t", "yes", "y", "да", "истина"}


FALSE_WORDS = {"", "0", "false", "f", "no", "n", "нет", "ложь"}


@dataclass(frozen=True)
class RowError:
    """One problem of the input: row and column as the user sees them (None: the whole file)."""

    row: int | None
    column: str | None
    code: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"row": self.row, "column": self.column, "code": self.code, "message": self.message}


@dataclass
class ImportReport:
    rows: int = 0
    created: dict[str, int] = field(
        default_factory=lambda: {"instructions": 0, "models": 0, "answers": 0}
    )
    existing: dict[str, int] = field(
        default_factory=lambda: {"instructions": 0, "models": 0, "answers": 0}
    )
    errors: list[RowError] = field(default_factory=list)
    # True when reading stopped at MAX_ERRORS: there may be more problems further down.
    errors_truncated: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "created": dict(self.created),
            "existing": dict(self.existing),
            "errors": [e.as_dict() for e in self.errors],
            "errors_truncated": self.errors_truncated,
            "seconds": round(self.seconds, 3),
        }


class TooManyErrors(Exception):
    """Raised inside the reader loop once MAX_ERRORS are collected: reading further is waste."""


class Errors:
    def __init__(self, limit: int) -> None:
        self.items: list[RowError] = []
        self.limit = limit
        self.truncated = False

    def add(self, row: int | None, column: str | None, code: str, message: str) -> None:
        if len(self.items) >= self.limit:
            self.truncated = True
            raise TooManyErrors
        self.items.append(RowError(row, column, code, message))

    def __bool__(self) -> bool:
        return bool(self.items)


@functools.lru_cache(maxsize=1 << 16)
def norm(value: str) -> str:
    """Loose form of a name: case, ё/е, spaces and spacing around slashes do not matter."""
    value = value.replace("ё", "е").replace("Ё", "Е").casefold()
    value = re.sub(r"\s*/\s*", " / ", value)
    return re.sub(r"\s+", " ", value).strip()


def cell(value: Any) -> str:
    """A cell as text: None and NaN are empty; 70.0 from a spreadsheet is "70"."""
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if value.is_integer():
            return str(int(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Throttle:
    """Calls the progress callback only when the per mille value moves (jobs write to the DB)."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress
        self.last = -1

    def __call__(self, done: int, force: bool = False) -> None:
        if self.progress is None:
            return
        if force or done - self.last >= 10:
            self.last = done
            self.progress(min(done, PROGRESS_TOTAL), PROGRESS_TOTAL)


class RowValidator(Protocol):
    def add(self, number: int, row: dict[str, Any]) -> None: ...


def rows_validated(
    table: Table, validator: RowValidator, errors: Errors, report: ImportReport, notify: Throttle
) -> None:
    """Every row of the opened file through the validator (nothing written), the progress
    within the read's share; a file without a data row is an error."""
    for i, (number, row) in enumerate(table.rows, start=1):
        report.rows += 1
        validator.add(number, row)
        if i % 500 == 0:
            notify(int(READ_SHARE * table.fraction()))
    if report.rows == 0 and not errors:
        errors.add(None, None, "empty_file", _("The file has no data rows."))


def write_all_or_nothing(write_locked: Callable[[], None], errors: Errors) -> None:
    """Run an import's writer under the import lock in one transaction: when it found conflicts
    with stored rows (in `errors`), or the database refused a row, nothing stays written."""
    try:
        with transaction.atomic():
            advisory_lock()
            write_locked()
            if errors:
                # Conflicts with stored rows were found: leave without writing anything.
                transaction.set_rollback(True)
    except IntegrityError as exc:
        errors.add(
            None,
            None,
            "conflict",
            _("The database refused the import (%s); nothing was written.") % exc,
        )


def errors_summary(report: ImportReport) -> str | None:
    """The summary line of an import that failed (None when it had no errors)."""
    if not report.errors:
        return None
    more = ""
    if report.errors_truncated:
        more = _(" (stopped at the first %s)") % len(report.errors)
    return _("%(n)s errors%(more)s; nothing was imported.") % {
        "n": len(report.errors),
        "more": more,
    }
