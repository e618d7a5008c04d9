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

import codecs
import csv
import functools
import hashlib
import io
import json
import math
import re
import time
import uuid
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, connection, transaction
from django.db.models.functions import MD5
from django.utils import timezone
from django.utils.translation import gettext as _

from jobs.models import Job, JobKind
from material.models import Answer, Instruction, LanguageModel
from taxonomy.models import Complexity, Criterion, FunctionalStyle, Task

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


class _Errors:
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


# --------------------------------------------------------------------------- name matching


@functools.lru_cache(maxsize=1 << 16)
def _norm(value: str) -> str:
    """Loose form of a name: case, ё/е, spaces and spacing around slashes do not matter."""
    value = value.replace("ё", "е").replace("Ё", "Е").casefold()
    value = re.sub(r"\s*/\s*", " / ", value)
    return re.sub(r"\s+", " ", value).strip()


class Catalogue:
    """Everything a row is checked against, loaded with a handful of queries."""

    def __init__(self) -> None:
        leaves = list(
            Task.objects.filter(is_leaf=True).select_related("group", "parent", "parent__parent")
        )
        self.leaf_style: dict[int, int | None] = {t.pk: t.style_id for t in leaves}
        self.by_names: dict[tuple[str, ...], set[int]] = {}
        self.by_path: dict[str, set[int]] = {}
        for leaf in leaves:
            lineage: list[Task] = []
            node: Task | None = leaf
            while node is not None:
                lineage.append(node)
                node = node.parent
            lineage.reverse()
            # Every combination of English and Russian names per level (at most 2**3).
            combos: list[tuple[str, ...]] = [()]
            for node in lineage:
                names = {_norm(node.name_en), _norm(node.name_ru)} - {""}
                combos = [(*c, n) for c in combos for n in names]
            for combo in combos:
                self.by_names.setdefault(combo, set()).add(leaf.pk)
            for lang in ("en", "ru"):
                parts = [getattr(leaf.group, f"name_{lang}")] + [
                    getattr(n, f"name_{lang}") for n in lineage
                ]
                for i in range(len(parts)):
                    suffix = _norm(" / ".join(p for p in parts[i:] if p))
                    if suffix:
                        self.by_path.setdefault(suffix, set()).add(leaf.pk)
            self.by_path.setdefault(_norm(leaf.path), set()).add(leaf.pk)

        self.styles: dict[str, int] = {}
        for style in FunctionalStyle.objects.all():
            for alias in _style_aliases(style):
                self.styles.setdefault(alias, style.pk)
        self.criteria: set[str] = set()
        for key, name_en, name_ru in Criterion.objects.values_list("key", "name_en", "name_ru"):
            self.criteria.update(_norm(n) for n in (key, name_en, name_ru) if n)
        self.complexity = {
            _norm(alias): level
            for level, aliases in COMPLEXITY_ALIASES.items()
            for alias in aliases
        }

    def task_by_path(self, value: str) -> tuple[int | None, str | None]:
        found = self.by_path.get(_norm(value), set())
        if len(found) == 1:
            return next(iter(found)), None
        return None, ("ambiguous" if found else "unknown")

    def task_by_names(self, parts: list[str]) -> tuple[int | None, str | None]:
        """The leaf named by (task, subtask, subsubtask).

        POLLUX's own taxonomy is finer than the catalogue's 152 leaves in places, so when the
        whole path names no leaf, the longest leading part that does is taken (the extra level
        is a finer split of that leaf).
        """
        key = tuple(_norm(p) for p in parts)
        for n in range(len(key), 0, -1):
            found = self.by_names.get(key[:n], set())
            if len(found) == 1:
                return next(iter(found)), None
            if found:
                return None, "ambiguous"
        return None, "unknown"


def _style_aliases(style: FunctionalStyle) -> set[str]:
    names = {style.key, style.name_en, style.name_ru}
    # POLLUX writes the domain as "Научный текст", "Написать научный текст" or "Научный".
    for name in list(names):
        short = re.sub(r"(?i)^написать\s+", "", name)
        names.add(short)
        names.add(re.sub(r"(?i)\s+(text|текст)$", "", short))
    return {_norm(n) for n in names if n}


# --------------------------------------------------------------------------- readers


@dataclass
class _Source:
    """A parsed file: its columns and an iterator of (row number, {column: value})."""

    columns: list[str]
    rows: Iterator[tuple[int, dict[str, Any]]]
    # Share of the input consumed so far, 0..1, for progress.
    fraction: Callable[[], float]
    # Row number of the header line, for errors about columns (None: no header line).
    header_row: int | None
    # Rows may differ in their keys (JSON lines): look each field up by all its names.
    dynamic: bool = False


class _CountingReader(io.RawIOBase):
    """Counts the bytes read through it, so progress of a streamed text file is known."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.count = 0

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.raw.close()
        super().close()

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self.count += n
        return n


def _looks_utf16(head: bytes) -> bool:
    """A UTF-16 file: by its byte order mark, or (without one) by the NUL byte of every
    other position that UTF-16 gives ASCII and most punctuation; UTF-8 text has none."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return True
    sample = head[: len(head) - len(head) % 2]
    if len(sample) < 4:
        return False
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    return max(even, odd) >= len(sample) // 8 and min(even, odd) == 0


def _check_utf8(path: Path, errors: _Errors) -> bool:
    """Stream the file through a strict UTF-8 decoder; on failure name the line and byte."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    lines = 0
    with path.open("rb") as f:
        if _looks_utf16(f.read(4096)):
            errors.add(
                1,
                None,
                "encoding",
                _("The file is not valid UTF-8.")
                + " "
                + _("It looks like UTF-16 (“Unicode” in Excel): save it as UTF-8."),
            )
            return False
        f.seek(0)
        while chunk := f.read(1 << 20):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                pending = len(exc.object) - len(chunk)
                bad = offset - pending + exc.start
                line = lines + exc.object[: exc.start].count(b"\n") + 1
                hint = ""
                f.seek(max(0, bad - 200))
                sample = f.read(400)
                if re.search(r"[а-яА-Я]{3}", sample.decode("cp1251", errors="ignore")):
                    hint = " " + _("It looks like Windows-1251 (cp1251): save it as UTF-8.")
                errors.add(
                    line,
                    None,
                    "encoding",
                    _("The file is not valid UTF-8 at line %(line)s (byte %(byte)s).")
                    % {"line": line, "byte": bad}
                    + hint,
                )
                return False
            offset += len(chunk)
            lines += chunk.count(b"\n")
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            errors.add(lines + 1, None, "encoding", _("The file ends inside a UTF-8 character."))
            return False
    return True


def _open_csv(path: Path, errors: _Errors, stack: list[Any]) -> _Source | None:
    if not _check_utf8(path, errors):
        return None
    # Texts are long (answers of tens of thousands of characters); the csv module's default
    # field limit (128 KiB) would cut them.
    csv.field_size_limit(max(csv.field_size_limit(), 64 * 1024 * 1024))
    size = max(path.stat().st_size, 1)
    counter = _CountingReader(path.open("rb"))
    text = io.TextIOWrapper(io.BufferedReader(counter), encoding="utf-8-sig", newline="")
    stack.append(text)
    reader = csv.reader(text)
    try:
        header = next(reader)
    except StopIteration:
        header = []
    except csv.Error as exc:
        errors.add(1, None, "bad_csv", _("The header line cannot be read: %s") % exc)
        return None
    columns = [h.strip().lower() for h in header]

    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        number = 1
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                errors.add(number + 1, None, "bad_csv", _("Malformed CSV: %s") % exc)
                return
            number += 1
            if not any(c.strip() for c in cells):
                continue
            if len(cells) > len(columns):
                errors.add(
                    number,
                    None,
                    "bad_csv",
                    _("The row has %(n)s cells, the header has %(m)s columns.")
                    % {"n": len(cells), "m": len(columns)},
                )
                continue
            yield number, dict(zip(columns, cells, strict=False))

    return _Source(columns, rows(), lambda: counter.count / size, header_row=1)


def _open_jsonl(path: Path, errors: _Errors, stack: list[Any]) -> _Source | None:
    if not _check_utf8(path, errors):
        return None
    size = max(path.stat().st_size, 1)
    counter = _CountingReader(path.open("rb"))
    text = io.TextIOWrapper(io.BufferedReader(counter), encoding="utf-8-sig")
    stack.append(text)
    lines = enumerate(text, start=1)

    def parse(number: int, line: str) -> dict[str, Any] | None:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.add(number, None, "bad_json", _("Not valid JSON: %s") % exc.msg)
            return None
        except RecursionError:
            errors.add(number, None, "bad_json", _too_deep_message())
            return None
        if _json_too_deep(obj):
            errors.add(number, None, "bad_json", _too_deep_message())
            return None
        if not isinstance(obj, dict):
            errors.add(number, None, "bad_json", _("Each line must be a JSON object."))
            return None
        return {str(k).strip().lower(): v for k, v in obj.items()}

    # JSON lines have no header: the first object's keys stand for it (rows are streamed, and
    # a later row may still use another accepted name of a column: see _Validator.dynamic).
    first: tuple[int, dict[str, Any]] | None = None
    for number, line in lines:
        if line.strip():
            row = parse(number, line)
            if row is None:
                return None
            first = (number, row)
            break

    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        if first is not None:
            yield first
        for number, line in lines:
            if line.strip():
                row = parse(number, line)
                if row is not None:
                    yield number, row

    columns = list(first[1]) if first else []
    return _Source(columns, rows(), lambda: counter.count / size, header_row=None, dynamic=True)


def _json_too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether lists and objects nest deeper than `limit` (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        elif not isinstance(node, list):
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in node)
    return False


def _too_deep_message() -> str:
    return _("The JSON is nested more than %(n)s levels deep.") % {"n": MAX_JSON_DEPTH}


def xlsx_unpack_error(source: Path | IO[bytes], max_bytes: int) -> tuple[str, str] | None:
    """(code, message) when an XLSX is no zip or would unpack into a decompression bomb.

    Checked on the zip directory before openpyxl inflates anything; every XLSX reader of the
    platform (material import, exam import) calls this first.
    """
    try:
        with zipfile.ZipFile(source) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError):
        return "bad_xlsx", _("The file is not a valid XLSX workbook.")
    unpacked = sum(i.file_size for i in infos)
    limit = max_bytes * XLSX_MAX_UNPACK_FACTOR
    worst = max(
        (i.file_size / max(i.compress_size, 1) for i in infos if i.file_size > 1 << 20),
        default=0.0,
    )
    if unpacked > limit or worst > XLSX_MAX_RATIO:
        return "too_large", _(
            "The workbook is too large: it unpacks to %(size)s bytes, "
            "more than allowed (%(limit)s)."
        ) % {"size": unpacked, "limit": limit}
    return None


def _check_xlsx_zip(path: Path, max_bytes: int, errors: _Errors) -> bool:
    problem = xlsx_unpack_error(path, max_bytes)
    if problem is not None:
        errors.add(None, None, *problem)
        return False
    return True


def _open_xlsx(path: Path, max_bytes: int, errors: _Errors, stack: list[Any]) -> _Source | None:
    if not _check_xlsx_zip(path, max_bytes, errors):
        return None
    # Imported here: heavy, and only XLSX imports need it.
    import openpyxl

    try:
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds for a broken workbook
        errors.add(None, None, "bad_xlsx", _("The workbook cannot be opened: %s") % exc)
        return None
    stack.append(workbook)
    sheet = workbook.worksheets[0]
    it = sheet.iter_rows(values_only=True)
    header = next(it, ())
    columns = [str(h).strip().lower() if h is not None else "" for h in header]
    total = max((sheet.max_row or 0) - 1, 1)
    state = {"i": 0}

    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        for number, cells in enumerate(it, start=2):
            state["i"] = number - 1
            if all(c is None or (isinstance(c, str) and not c.strip()) for c in cells):
                continue
            yield number, {c: v for c, v in zip(columns, cells, strict=False) if c}

    return _Source(columns, rows(), lambda: min(state["i"] / total, 1.0), header_row=1)


def _open_parquet(path: Path, errors: _Errors, stack: list[Any]) -> _Source | None:
    import pyarrow.parquet as pq

    try:
        pfile = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError... for a broken file
        errors.add(None, None, "bad_parquet", _("The file is not a valid Parquet file: %s") % exc)
        return None
    stack.append(pfile)
    names = list(pfile.schema_arrow.names)
    columns = [n.strip().lower() for n in names]
    wanted_aliases = {a for aliases in COLUMNS.values() for a in aliases}
    # POLLUX files carry rubrics and annotations we do not import: read only what we map.
    read = [n for n, c in zip(names, columns, strict=True) if c in wanted_aliases]
    if not _parquet_types_ok(pfile.schema_arrow, read, errors):
        return None
    total = max(pfile.metadata.num_rows, 1)
    state = {"i": 0}

    keys = [n.strip().lower() for n in read]
    criterion_keys = set(COLUMNS["criteria_name"])
    signature = [i for i, k in enumerate(keys) if k not in criterion_keys]

    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        number = 0
        previous: dict[str, Any] = {}
        for batch in pfile.iter_batches(batch_size=BATCH_SIZE, columns=read):
            # Turning Arrow strings into Python ones is most of the reading time, and POLLUX
            # repeats each answer on ~16 rows (one per criterion): rows equal to the previous
            # one but for the criterion reuse its Python values (found by Arrow, in C).
            repeats = _parquet_repeats(batch, signature)
            fresh = [i for i, same in enumerate(repeats) if not same]
            taken = batch.take(fresh) if len(fresh) < batch.num_rows else batch
            values = [taken.column(i).to_pylist() for i in range(taken.num_columns)]
            fresh_rows = iter(zip(*values, strict=True))
            criteria = {
                i: batch.column(i).to_pylist() for i, k in enumerate(keys) if k in criterion_keys
            }
            for j, same in enumerate(repeats):
                number += 1
                state["i"] = number
                if same:
                    row = dict(previous)
                    for i, column in criteria.items():
                        row[keys[i]] = column[j]
                else:
                    row = dict(zip(keys, next(fresh_rows), strict=True))
                previous = row
                yield number, row

    return _Source(columns, rows(), lambda: state["i"] / total, header_row=None)


def _arrow_kind(kind: Any) -> str:
    """ "string", "integer", "boolean", "struct", "map", "null" or the type's own name."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    checks = (
        ("null", pa.types.is_null),
        ("string", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t)),
        ("string", lambda t: getattr(pa.types, "is_string_view", lambda _t: False)(t)),
        ("integer", pa.types.is_integer),
        ("boolean", pa.types.is_boolean),
        ("struct", pa.types.is_struct),
        ("map", pa.types.is_map),
    )
    for name, check in checks:
        if check(kind):
            return name
    return str(kind)


def _parquet_types_ok(schema: Any, read: list[str], errors: _Errors) -> bool:
    """Every column we read has a type its field accepts (text needs strings, ids strings or
    integers...); each wrong column is named with the type expected. An all-null column is
    fine (nothing to misread)."""
    field_of = {alias: name for name, aliases in COLUMNS.items() for alias in aliases}
    kinds = {
        "string": _("text (string)"),
        "integer": _("integer"),
        "boolean": _("boolean"),
        "struct": "struct",
        "map": "map",
    }
    ok = True
    for column in read:
        kind = _arrow_kind(schema.field(column).type)
        allowed = PARQUET_TYPES[field_of[column.strip().lower()]]
        if kind == "null" or kind in allowed:
            continue
        ok = False
        errors.add(
            None,
            column,
            "bad_type",
            _("The column has type %(type)s; expected: %(expected)s.")
            % {
                "type": schema.field(column).type,
                "expected": ", ".join(str(kinds[k]) for k in allowed),
            },
        )
    return ok


def _parquet_repeats(batch: Any, columns: list[int]) -> list[bool]:
    """For each row of the batch: are the given columns equal to the previous row's?"""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = batch.num_rows
    if n < 2 or not columns:
        return [False] * n
    same: Any = None
    try:
        for i in columns:
            column = batch.column(i)
            now, before = column.slice(1), column.slice(0, n - 1)
            equal = pc.fill_null(pc.equal(now, before), False)
            both_null = pc.and_(pc.is_null(now), pc.is_null(before))
            equal = pc.or_(equal, both_null)
            same = equal if same is None else pc.and_(same, equal)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        # A column type Arrow cannot compare (a struct, say): read every row in full.
        return [False] * n
    return [False, *same.to_pylist()]


# --------------------------------------------------------------------------- validation


def _cell(value: Any) -> str:
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


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class _InstructionRow:
    row: int
    key: tuple[str, str]
    external_id: str | None
    text: str
    reference_answer: str
    task_id: int
    style_id: int | None
    complexity: str
    ethics_flag: bool
    author: str
    source: str
    pk: int | None = None

    def content(self) -> tuple[Any, ...]:
        return (
            self.text,
            self.reference_answer,
            self.task_id,
            self.style_id,
            self.complexity,
            self.ethics_flag,
            self.author,
            self.source,
        )


@dataclass
class _AnswerRow:
    row: int
    key: tuple[Any, ...]
    external_id: str | None
    instruction_key: tuple[str, str]
    model_key: tuple[str, str]
    text: str
    text_hash: str
    generation_meta: dict[str, Any]

    def content(self) -> tuple[Any, ...]:
        return (
            self.instruction_key,
            self.model_key,
            self.text_hash,
            json.dumps(self.generation_meta, sort_keys=True),
        )


# Which column a difference in _InstructionRow.content() is reported under.
_INSTRUCTION_FIELDS = (
    "instruction",
    "reference_answer",
    "task",
    "style",
    "complexity",
    "ethics_flag",
    "author",
    "source",
)


class _Validator:
    """Turns rows into unique instructions, models and answers, collecting errors."""

    def __init__(
        self,
        columns: Iterable[str],
        catalogue: Catalogue,
        max_text: int,
        errors: _Errors,
        dynamic: bool = False,
    ) -> None:
        present = set(columns)
        self.dynamic = dynamic
        # field -> the column name actually used in this file
        self.col: dict[str, str] = {}
        for name, aliases in COLUMNS.items():
            for alias in aliases:
                if alias in present:
                    self.col[name] = alias
                    break
        self.catalogue = catalogue
        self.max_text = max_text
        self.errors = errors
        self.instructions: dict[tuple[str, str], _InstructionRow] = {}
        self.models: dict[tuple[str, str], str] = {}
        self.answers: dict[tuple[Any, ...], _AnswerRow] = {}
        self.answer_natural: dict[tuple[Any, ...], _AnswerRow] = {}
        self.last_signature: tuple[Any, ...] | None = None
        self.signature_columns = [self.col[f] for f in SIGNATURE_FIELDS if f in self.col]

    def missing_columns(self) -> list[str]:
        missing = [COLUMNS[f][0] for f in REQUIRED if f not in self.col]
        if "task_path" not in self.col and "task_type" not in self.col:
            missing.append("task_path")
        return missing

    def _get(self, row: dict[str, Any], name: str) -> Any:
        if self.dynamic:
            for alias in COLUMNS[name]:
                if alias in row:
                    return row[alias]
            return None
        column = self.col.get(name)
        return row.get(column) if column else None

    def _name(self, name: str) -> str:
        return self.col.get(name, COLUMNS[name][0])

    def _not_text(self, number: int, name: str, raw: Any) -> bool:
        """A list or object where text is expected (JSON lines): an error, never "[1, 2]"."""
        if isinstance(raw, (list, dict)):
            self.errors.add(
                number,
                self._name(name),
                "bad_type",
                _("Expected text, got a JSON list.")
                if isinstance(raw, list)
                else _("Expected text, got a JSON object."),
            )
            return True
        return False

    def _short(self, number: int, row: dict[str, Any], name: str) -> str | None:
        raw = self._get(row, name)
        if self._not_text(number, name, raw):
            return None
        value = _cell(raw).strip()
        limit = MAX_LENGTHS[name]
        if len(value) > limit:
            self.errors.add(
                number,
                self._name(name),
                "too_long",
                _("At most %(n)s characters.") % {"n": limit},
            )
            return None
        return value

    def _text(self, number: int, row: dict[str, Any], name: str, required: bool) -> str | None:
        raw = self._get(row, name)
        if self._not_text(number, name, raw):
            return None
        value = _cell(raw)
        column = self._name(name)
        if required and not value.strip():
            self.errors.add(number, column, "empty_text", _("The text is empty."))
            return None
        if len(value) > self.max_text:
            self.errors.add(
                number,
                column,
                "text_too_long",
                _("The text has %(n)s characters; at most %(max)s are allowed.")
                % {"n": len(value), "max": self.max_text},
            )
            return None
        if "\x00" in value:
            self.errors.add(number, column, "bad_text", _("The text contains a NUL character."))
            return None
        return value

    def _task(self, number: int, row: dict[str, Any]) -> int | None:
        path = _cell(self._get(row, "task_path")).strip()
        if path:
            task_id, problem = self.catalogue.task_by_path(path)
            column, shown = self._name("task_path"), path
        else:
            parts = [
                _cell(self._get(row, name)).strip()
                for name in ("task_type", "task_subtype", "task_subsubtype")
            ]
            while parts and not parts[-1]:
                parts.pop()
            if not parts or not all(parts):
                column = self._name("task_path" if "task_type" not in self.col else "task_type")
                self.errors.add(number, column, "unknown_task", _("The task is not given."))
                return None
            task_id, problem = self.catalogue.task_by_names(parts)
            column, shown = self._name("task_type"), " / ".join(parts)
        if task_id is None:
            if problem == "ambiguous":
                message = _("The task “%s” matches several catalogue tasks; give task_path.")
            else:
                message = _("Unknown task “%s”.")
            self.errors.add(number, column, "unknown_task", message % shown)
        return task_id

    def _criterion(self, number: int, row: dict[str, Any]) -> None:
        criterion = _cell(self._get(row, "criteria_name")).strip()
        if criterion and _norm(criterion) not in self.catalogue.criteria:
            self.errors.add(
                number,
                self._name("criteria_name"),
                "unknown_criterion",
                _("Unknown criterion “%s”.") % criterion,
            )

    def add(self, number: int, row: dict[str, Any]) -> None:
        # POLLUX repeats one answer on consecutive rows, one per criterion: a row equal to the
        # previous clean one but for the criterion needs only its criterion checked.
        if self.dynamic:
            signature = tuple(self._get(row, name) for name in SIGNATURE_FIELDS)
        else:
            signature = tuple(row.get(column) for column in self.signature_columns)
        if signature == self.last_signature:
            self._criterion(number, row)
            return
        self.last_signature = None
        before = len(self.errors.items)
        text = self._text(number, row, "instruction", required=True)
        reference = self._text(number, row, "reference_answer", required=False)
        answer_text = self._text(number, row, "answer", required=True)
        instruction_id = self._short(number, row, "instruction_id")
        answer_id = self._short(number, row, "answer_id")
        model_name = self._short(number, row, "model_name")
        model_version = self._short(number, row, "model_version")
        model_provider = self._short(number, row, "model_provider")
        author = self._short(number, row, "author")
        source = self._short(number, row, "source")
        if model_name == "":
            self.errors.add(number, self._name("model_name"), "empty_text", _("No model named."))
        task_id = self._task(number, row)

        style_id: int | None = None
        style = _cell(self._get(row, "style")).strip()
        if style:
            style_id = self.catalogue.styles.get(_norm(style))
            if style_id is None:
                self.errors.add(
                    number, self._name("style"), "unknown_style", _("Unknown style “%s”.") % style
                )
        elif task_id is not None:
            # No style given: the leaf's own functional style, as the catalogue defines it.
            style_id = self.catalogue.leaf_style[task_id]

        complexity = _cell(self._get(row, "complexity")).strip()
        if complexity:
            level = self.catalogue.complexity.get(_norm(complexity))
            if level is None:
                self.errors.add(
                    number,
                    self._name("complexity"),
                    "unknown_complexity",
                    _("Unknown complexity “%s”: use easy, medium or hard.") % complexity,
                )
            complexity = level or ""

        flag_value = self._get(row, "ethics_flag")
        ethics_flag = False
        if isinstance(flag_value, bool):
            ethics_flag = flag_value
        else:
            word = _norm(_cell(flag_value))
            if word in TRUE_WORDS:
                ethics_flag = True
            elif word not in FALSE_WORDS:
                self.errors.add(
                    number,
                    self._name("ethics_flag"),
                    "bad_value",
                    _("Not a yes/no value: “%s”.") % _cell(flag_value),
                )

        meta = self._get(row, "generation_meta")
        generation_meta: dict[str, Any] = {}
        if isinstance(meta, dict):
            generation_meta = meta
            if _json_too_deep(meta):
                self.errors.add(
                    number, self._name("generation_meta"), "bad_value", _too_deep_message()
                )
        elif _cell(meta).strip():
            too_deep = False
            try:
                parsed = json.loads(_cell(meta))
            except json.JSONDecodeError:
                parsed = None
            except RecursionError:
                parsed, too_deep = None, True
            if too_deep or _json_too_deep(parsed):
                self.errors.add(
                    number, self._name("generation_meta"), "bad_value", _too_deep_message()
                )
            elif isinstance(parsed, dict):
                generation_meta = parsed
            else:
                self.errors.add(
                    number,
                    self._name("generation_meta"),
                    "bad_value",
                    _("generation_meta must be a JSON object."),
                )

        self._criterion(number, row)
        if len(self.errors.items) > before:
            return
        # An identical next row would end the same way (merged, or the same error again).
        self.last_signature = signature
        # Everything below is only reached by a clean row; the asserts narrow the types.
        assert text is not None and answer_text is not None and task_id is not None
        assert model_name and model_version is not None and model_provider is not None

        ikey = (
            ("id", instruction_id) if instruction_id else ("hash", _sha256(f"{task_id}\x1f{text}"))
        )
        instruction = _InstructionRow(
            row=number,
            key=ikey,
            external_id=instruction_id or None,
            text=text,
            reference_answer=reference or "",
            task_id=task_id,
            style_id=style_id,
            complexity=complexity,
            ethics_flag=ethics_flag,
            author=author or "",
            source=source or "",
        )
        seen = self.instructions.get(ikey)
        if seen is None:
            self.instructions[ikey] = instruction
        elif seen.content() != instruction.content():
            self._conflict(number, seen, instruction, instruction_id)
            return

        mkey = (model_name, model_version)
        if not self.models.get(mkey):
            self.models[mkey] = model_provider

        text_hash = _sha256(answer_text)
        natural = (ikey, mkey, text_hash)
        akey: tuple[Any, ...] = ("id", answer_id) if answer_id else ("nat", *natural)
        answer = _AnswerRow(
            row=number,
            key=akey,
            external_id=answer_id or None,
            instruction_key=ikey,
            model_key=mkey,
            text=answer_text,
            text_hash=text_hash,
            generation_meta=generation_meta,
        )
        seen_answer = self.answers.get(akey)
        if seen_answer is not None:
            if seen_answer.content() != answer.content():
                column = self._name("answer_id") if answer_id else self._name("generation_meta")
                self.errors.add(
                    number,
                    column,
                    "duplicate_id",
                    _("The answer of row %(row)s is given again with a different content.")
                    % {"row": seen_answer.row},
                )
            return
        twin = self.answer_natural.get(natural)
        if twin is not None:
            if twin.external_id and answer_id:
                # Two ids for one (instruction, model, text): the database keeps only one.
                self.errors.add(
                    number,
                    self._name("answer_id"),
                    "duplicate_id",
                    _("Same instruction, model and answer text as row %(row)s under another id.")
                    % {"row": twin.row},
                )
            return
        self.answers[akey] = answer
        self.answer_natural[natural] = answer

    def _conflict(
        self,
        number: int,
        seen: _InstructionRow,
        new: _InstructionRow,
        instruction_id: str | None,
    ) -> None:
        differs = next(
            name
            for name, a, b in zip(_INSTRUCTION_FIELDS, seen.content(), new.content(), strict=True)
            if a != b
        )
        column = {
            "instruction": self._name("instruction"),
            "reference_answer": self._name("reference_answer"),
            "task": self._name("task_path" if "task_path" in self.col else "task_type"),
        }.get(differs, self._name(differs) if differs in COLUMNS else differs)
        if instruction_id:
            message = _(
                "instruction_id “%(id)s” was given on row %(row)s with a different %(field)s."
            ) % {"id": instruction_id, "row": seen.row, "field": differs}
        else:
            message = _(
                "The same instruction (text and task) is on row %(row)s with a different %(field)s."
            ) % {"row": seen.row, "field": differs}
        self.errors.add(number, column, "duplicate_id", message)


# --------------------------------------------------------------------------- the service


def detect_format(path: Path) -> str | None:
    return EXTENSIONS.get(path.suffix.lower())


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
    errors = _Errors(max_errors)
    notify = _Throttle(progress)
    stack: list[Any] = []
    try:
        validator = _read(path, fmt, max_bytes, max_text, errors, report, notify, stack)
        if validator is not None and not errors:
            _write(validator, errors, report, notify)
    except TooManyErrors:
        pass
    finally:
        for item in stack:
            item.close()
    report.errors = errors.items
    report.errors_truncated = errors.truncated
    if report.errors:
        report.created = dict.fromkeys(report.created, 0)
        report.existing = dict.fromkeys(report.existing, 0)
    report.seconds = time.monotonic() - started
    notify(PROGRESS_TOTAL, force=True)
    return report


class _Throttle:
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


def _read(
    path: Path,
    fmt: str | None,
    max_bytes: int,
    max_text: int,
    errors: _Errors,
    report: ImportReport,
    notify: _Throttle,
    stack: list[Any],
) -> _Validator | None:
    fmt = fmt or detect_format(path)
    if fmt not in FORMATS:
        errors.add(
            None,
            None,
            "bad_format",
            _("Unknown file type “%(ext)s”: use CSV, JSONL, XLSX or Parquet.")
            % {"ext": path.suffix},
        )
        return None
    try:
        size = path.stat().st_size
    except OSError:
        errors.add(None, None, "not_found", _("The file cannot be read."))
        return None
    # Checked before parsing anything: a huge file is refused without reading it.
    if size > max_bytes:
        errors.add(
            None,
            None,
            "too_large",
            _("The file has %(size)s bytes; at most %(max)s are allowed.")
            % {"size": size, "max": max_bytes},
        )
        return None
    notify(0, force=True)
    if fmt == "csv":
        source = _open_csv(path, errors, stack)
    elif fmt == "jsonl":
        source = _open_jsonl(path, errors, stack)
    elif fmt == "xlsx":
        source = _open_xlsx(path, max_bytes, errors, stack)
    else:
        source = _open_parquet(path, errors, stack)
    if source is None:
        return None

    if len(set(source.columns) - {""}) != len([c for c in source.columns if c]):
        dupes = sorted({c for c in source.columns if c and source.columns.count(c) > 1})
        for column in dupes:
            errors.add(source.header_row, column, "bad_header", _("The column appears twice."))
        return None
    validator = _Validator(source.columns, Catalogue(), max_text, errors, source.dynamic)
    for column in validator.missing_columns():
        errors.add(source.header_row, column, "missing_column", _("The column is missing."))
    if errors:
        return None
    for i, (number, row) in enumerate(source.rows, start=1):
        report.rows += 1
        validator.add(number, row)
        if i % 500 == 0:
            notify(int(READ_SHARE * source.fraction()))
    if report.rows == 0 and not errors:
        errors.add(None, None, "empty_file", _("The file has no data rows."))
    return validator


def _chunks(items: list[Any], size: int = BATCH_SIZE) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _write(validator: _Validator, errors: _Errors, report: ImportReport, notify: _Throttle) -> None:
    """Find what exists, check it agrees, bulk-insert the rest: all in one transaction."""
    try:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ADVISORY_LOCK_KEY])
            _write_locked(validator, errors, report, notify)
            if errors:
                # Conflicts with existing rows were found: leave without writing anything.
                transaction.set_rollback(True)
    except IntegrityError as exc:
        errors.add(
            None,
            None,
            "conflict",
            _("The database refused the import (%s); nothing was written.") % exc,
        )


def _write_locked(
    validator: _Validator, errors: _Errors, report: ImportReport, notify: _Throttle
) -> None:
    model_pk, new_models = _existing_models(validator)
    report.existing["models"] = len(validator.models) - len(new_models)
    instructions = list(validator.instructions.values())
    _existing_instructions(validator, instructions, errors)
    report.existing["instructions"] = sum(1 for i in instructions if i.pk is not None)
    answers = list(validator.answers.values())
    existing_answers = _existing_answers(validator, answers, model_pk, errors)
    report.existing["answers"] = len(existing_answers)
    if errors:
        return
    notify(READ_SHARE + 30, force=True)

    # The writes: models, then instructions, then answers pointing at both.
    LanguageModel.objects.bulk_create(new_models, batch_size=BATCH_SIZE)
    model_pk.update({(m.name, m.version): m.pk for m in new_models})
    report.created["models"] = len(new_models)

    new_instructions = [i for i in instructions if i.pk is None]
    for chunk in _chunks(new_instructions):
        objs = [
            Instruction(
                external_id=i.external_id,
                text=i.text,
                reference_answer=i.reference_answer,
                task_id=i.task_id,
                style_id=i.style_id,
                complexity=i.complexity,
                ethics_flag=i.ethics_flag,
                author=i.author,
                source=i.source,
            )
            for i in chunk
        ]
        Instruction.objects.bulk_create(objs)
        for item, obj in zip(chunk, objs, strict=True):
            item.pk = obj.pk
    report.created["instructions"] = len(new_instructions)
    notify(READ_SHARE + 50, force=True)

    ipk: dict[tuple[str, str], int] = {i.key: i.pk for i in instructions if i.pk is not None}
    new_answers = [a for a in answers if a.key not in existing_answers]
    share = PROGRESS_TOTAL - READ_SHARE - 50
    insert = _copy_answers if connection.vendor == "postgresql" else _bulk_create_answers
    for n, chunk in enumerate(_chunks(new_answers), start=1):
        insert(chunk, ipk, model_pk)
        done = min(n * BATCH_SIZE, len(new_answers))
        notify(READ_SHARE + 50 + int(share * done / len(new_answers)))
    report.created["answers"] = len(new_answers)


def _bulk_create_answers(
    chunk: list[_AnswerRow],
    ipk: dict[tuple[str, str], int],
    model_pk: dict[tuple[str, str], int],
) -> None:
    Answer.objects.bulk_create(
        [
            Answer(
                external_id=a.external_id,
                instruction_id=ipk[a.instruction_key],
                model_id=model_pk[a.model_key],
                text=a.text,
                text_hash=a.text_hash,
                generation_meta=a.generation_meta,
            )
            for a in chunk
        ]
    )


def _copy_answers(
    chunk: list[_AnswerRow],
    ipk: dict[tuple[str, str], int],
    model_pk: dict[tuple[str, str], int],
) -> None:
    """COPY the answers in: their texts are most of the bytes of an import, and an INSERT
    makes the driver quote every one of them in Python; answer pks are not needed back."""
    meta = Answer._meta
    names = ["external_id", "instruction", "model", "text", "text_hash", "generation_meta"]
    by_name = {f.name: str(f.column) for f in meta.concrete_fields}
    columns = [by_name[name] for name in names] + [by_name["created_at"]]
    now = timezone.now()
    sql = "COPY {} ({}) FROM STDIN".format(
        connection.ops.quote_name(meta.db_table),
        ", ".join(connection.ops.quote_name(c) for c in columns),
    )
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for a in chunk:
            copy.write_row(
                (
                    a.external_id,
                    ipk[a.instruction_key],
                    model_pk[a.model_key],
                    a.text,
                    a.text_hash,
                    json.dumps(a.generation_meta, ensure_ascii=False),
                    now,
                )
            )


def _existing_models(
    validator: _Validator,
) -> tuple[dict[tuple[str, str], int], list[LanguageModel]]:
    """The pks of the file's models that exist (one query), and the unsaved new ones."""
    names = {name for name, _version in validator.models}
    model_pk: dict[tuple[str, str], int] = {
        (m.name, m.version): m.pk for m in LanguageModel.objects.filter(name__in=names)
    }
    new_models = [
        LanguageModel(name=name, version=version, provider=provider)
        for (name, version), provider in validator.models.items()
        if (name, version) not in model_pk
    ]
    return model_pk, new_models


def _existing_instructions(
    validator: _Validator, instructions: list[_InstructionRow], errors: _Errors
) -> None:
    """Set .pk on the file's instructions that exist, by external id or by text and task."""
    by_id = {i.external_id: i for i in instructions if i.external_id}
    for chunk in _chunks(list(by_id)):
        found = Instruction.objects.filter(external_id__in=chunk).values_list(
            "pk", "external_id", "text", "task_id"
        )
        for pk, external_id, text, task_id in found:
            item = by_id[external_id or ""]
            if text != item.text or task_id != item.task_id:
                # Material under evaluation is never silently rewritten by a later file.
                errors.add(
                    item.row,
                    validator._name("instruction" if text != item.text else "task_type"),
                    "conflict",
                    _("instruction_id “%s” already exists with a different text or task.")
                    % external_id,
                )
            item.pk = pk
    by_hash = {i.key: i for i in instructions if not i.external_id}
    # The database compares MD5s of the texts (one scan per chunk), Python then checks the
    # exact text and task.
    wanted = {
        hashlib.md5(i.text.encode("utf-8"), usedforsecurity=False).hexdigest()
        for i in by_hash.values()
    }
    for chunk in _chunks(sorted(wanted)):
        candidates = (
            Instruction.objects.annotate(text_md5=MD5("text"))
            .filter(text_md5__in=chunk)
            .order_by("pk")
            .values_list("pk", "text", "task_id")
        )
        for pk, text, task_id in candidates:
            match = by_hash.get(("hash", _sha256(f"{task_id}\x1f{text}")))
            if match is not None and match.pk is None:
                match.pk = pk


def _existing_answers(
    validator: _Validator,
    answers: list[_AnswerRow],
    model_pk: dict[tuple[str, str], int],
    errors: _Errors,
) -> set[tuple[Any, ...]]:
    """Keys of the file's answers that exist: by external id, else by natural key."""
    ipk = {i.key: i.pk for i in validator.instructions.values()}
    existing: set[tuple[Any, ...]] = set()
    by_id = {a.external_id: a for a in answers if a.external_id}
    for chunk in _chunks(list(by_id)):
        found = Answer.objects.filter(external_id__in=chunk).values_list(
            "external_id", "instruction_id", "model_id", "text_hash"
        )
        for external_id, instruction_id, model_id, text_hash in found:
            item = by_id[external_id or ""]
            same = (
                instruction_id == ipk[item.instruction_key]
                and model_id == model_pk.get(item.model_key)
                and text_hash == item.text_hash
            )
            if not same:
                errors.add(
                    item.row,
                    validator._name("answer_id"),
                    "conflict",
                    _("answer_id “%s” already exists with a different instruction, model or text.")
                    % external_id,
                )
            existing.add(item.key)
    # Only answers whose instruction and model both exist can exist themselves.
    natural: dict[tuple[int, int, str], _AnswerRow] = {}
    for a in answers:
        instruction_pk = ipk[a.instruction_key]
        if a.key in existing or instruction_pk is None or a.model_key not in model_pk:
            continue
        natural[(instruction_pk, model_pk[a.model_key], a.text_hash)] = a
    old_instructions = sorted({key[0] for key in natural})
    for chunk in _chunks(sorted({key[2] for key in natural})):
        found_natural = Answer.objects.filter(
            instruction_id__in=old_instructions, text_hash__in=chunk
        ).values_list("instruction_id", "model_id", "text_hash", "external_id")
        for instruction_id, model_id, text_hash, external_id in found_natural:
            answer = natural.get((instruction_id, model_id, text_hash))
            if answer is None:
                continue
            if answer.external_id and external_id and external_id != answer.external_id:
                errors.add(
                    answer.row,
                    validator._name("answer_id"),
                    "conflict",
                    _("This answer already exists under answer_id “%s”.") % external_id,
                )
            existing.add(answer.key)
    return existing


def import_summary(report: ImportReport) -> str:
    """One line for the command's output and the job's message."""
    if report.errors:
        more = ""
        if report.errors_truncated:
            more = _(" (stopped at the first %s)") % len(report.errors)
        return _("%(n)s errors%(more)s; nothing was imported.") % {
            "n": len(report.errors),
            "more": more,
        }
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


@transaction.atomic
def import_job_create(*, upload: UploadedFile, user_id: int | None, language: str) -> Job:
    """Store an uploaded file under PRIVATE_STORAGE_ROOT/imports/ and queue a Job for it.

    The stored name is random: the user's file name is kept only as a label.
    """
    suffix = Path(upload.name or "").suffix.lower()
    relative = f"imports/{uuid.uuid4().hex}{suffix}"
    target = Path(settings.PRIVATE_STORAGE_ROOT) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return Job.objects.create(
        kind=JobKind.IMPORT,
        params={
            "path": relative,
            "name": Path(upload.name or "").name[:200],
            "format": EXTENSIONS.get(suffix, ""),
            "size": upload.size,
            "language": language,
        },
        progress_total=PROGRESS_TOTAL,
        created_by_id=user_id,
    )
