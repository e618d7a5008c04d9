"""Readers of the material import: CSV, JSONL, XLSX and Parquet files as rows of cells.

Each opener checks what can be checked before reading (encoding, zip bombs, Parquet types, JSON
depth) and yields rows as the user sees them in the file, so errors can name row and column.

One typed reading for every format: each import names the kinds a field accepts (``types``:
"string", "integer", "boolean", "struct", "map"). A Parquet column is checked by its type, a
JSON line's or a workbook's cell by its value (CSV cells are all text), so the same content gets
the same answer in every format: a number, a boolean, a list, an object, NaN or Infinity where
text is expected is refused naming row and column, never stored as "7" or "inf". An id is text
or an integer (a whole number in a workbook's cell is one); a fractional number such as 1.0 is
refused. A workbook's formula cell is refused naming its sheet and cell: its cached result may
be stale or missing (a workbook written by a program often holds none, or 0).
"""

from __future__ import annotations

import codecs
import csv
import io
import math
import re
import zipfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import IO, Any

from django.utils.translation import gettext as _

from lib import bounded_json
from lib.uploads import upload_spooled
from material.import_common import (
    BATCH_SIZE,
    COLUMNS,
    EXTENSIONS,
    FORMATS,
    MAX_JSON_DEPTH,
    PARQUET_TYPES,
    XLSX_MAX_RATIO,
    XLSX_MAX_UNPACK_FACTOR,
    Errors,
    TooManyErrors,
    cell,
)


@dataclass
class Table:
    """An opened file: its columns and an iterator of (row number, {column: value})."""

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
    # At least one NUL: a short UTF-8 file (4–7 bytes, "a\n1\n") has none, yet len // 8 is 0.
    return max(even, odd) >= max(1, len(sample) // 8) and min(even, odd) == 0


def _check_utf8(path: Path, errors: Errors) -> bool:
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


def _open_csv(
    path: Path, errors: Errors, stack: ExitStack, *, delimiters: str = ","
) -> Table | None:
    """`delimiters`: with more than one, the header line decides (the one it holds most of),
    for small tables saved by spreadsheets with a semicolon or a tab; the material import is
    comma-separated."""
    if not _check_utf8(path, errors):
        return None
    dialect: Any = csv.excel
    if len(delimiters) > 1:
        with path.open("rb") as head:
            sample = head.read(4096).decode("utf-8-sig", errors="ignore")
        header_line = sample.splitlines()[0] if sample.strip() else ""
        best = max(delimiters, key=header_line.count)
        if header_line.count(best):
            dialect = type("HeaderDialect", (csv.excel,), {"delimiter": best})
    # Texts are long (answers of tens of thousands of characters); the csv module's default
    # field limit (128 KiB) would cut them.
    csv.field_size_limit(max(csv.field_size_limit(), 64 * 1024 * 1024))
    size = max(path.stat().st_size, 1)
    counter = _CountingReader(stack.enter_context(path.open("rb")))
    text = io.TextIOWrapper(io.BufferedReader(counter), encoding="utf-8-sig", newline="")
    stack.enter_context(text)
    reader = csv.reader(text, dialect=dialect)
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

    return Table(columns, rows(), lambda: counter.count / size, header_row=1)


def _open_jsonl(path: Path, errors: Errors, stack: ExitStack) -> Table | None:
    if not _check_utf8(path, errors):
        return None
    size = max(path.stat().st_size, 1)
    counter = _CountingReader(stack.enter_context(path.open("rb")))
    text = io.TextIOWrapper(io.BufferedReader(counter), encoding="utf-8-sig")
    stack.enter_context(text)
    lines = enumerate(text, start=1)

    def parse(number: int, line: str) -> dict[str, Any] | None:
        try:
            # The bounded reader: depth checked before json.loads recurses, numbers of more than
            # 100 digits refused. NaN and Infinity are read, to be refused by the typed reading
            # naming their column. No line is longer than the file, whose size the caller
            # bounded (IMPORT_MAX_BYTES, SUBMISSION_MAX_BYTES).
            obj = bounded_json.loads(
                line,
                max_bytes=size,
                max_depth=MAX_JSON_DEPTH,
                allow_nan=True,
                allow_overflow=True,
            )
        except bounded_json.JSONLimitError as exc:
            errors.add(number, None, "bad_json", str(exc))
            return None
        if not isinstance(obj, dict):
            errors.add(number, None, "bad_json", _("Each line must be a JSON object."))
            return None
        return {str(k).strip().lower(): v for k, v in obj.items()}

    # JSON lines have no header: the first object's keys stand for it (rows are streamed, and
    # a later row may still use another accepted name of a column: see Validator.dynamic).
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
    return Table(columns, rows(), lambda: counter.count / size, header_row=None, dynamic=True)


def json_too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
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


def json_nonfinite(value: Any) -> str:
    """ "NaN", "Infinity" or "-Infinity" for the first such float among the values of read JSON
    (a line's object, a Parquet struct), else "" (walked without recursion)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, float) and not math.isfinite(node):
            return "NaN" if math.isnan(node) else ("Infinity" if node > 0 else "-Infinity")
    return ""


def too_deep_message() -> str:
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


def _check_xlsx_zip(path: Path, max_bytes: int, errors: Errors) -> bool:
    problem = xlsx_unpack_error(path, max_bytes)
    if problem is not None:
        errors.add(None, None, *problem)
        return False
    return True


def _formula_error(errors: Errors, sheet: str, number: int, column: str | None, where: Any) -> None:
    errors.add(
        number,
        column,
        "formula",
        _(
            "The cell %(cell)s of the sheet “%(sheet)s” holds a formula: formulas are not read "
            "(their stored result may be stale or missing); paste the values instead."
        )
        % {"cell": where.coordinate, "sheet": sheet},
    )


def _open_xlsx(
    path: Path,
    max_bytes: int,
    errors: Errors,
    stack: ExitStack,
    *,
    read: set[str] | None = None,
) -> Table | None:
    """`read`: the columns the import reads (None: all); a formula elsewhere is left alone."""
    if not _check_xlsx_zip(path, max_bytes, errors):
        return None
    # Imported here: heavy, and only XLSX imports need it.
    import openpyxl

    try:
        # data_only=False: a formula cell keeps its formula (data type "f"), so it is refused
        # instead of read as its cached result.
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=False)
    except Exception as exc:  # openpyxl raises many kinds for a broken workbook
        errors.add(None, None, "bad_xlsx", _("The workbook cannot be opened: %s") % exc)
        return None
    stack.callback(workbook.close)
    sheet = workbook.worksheets[0]
    it = sheet.iter_rows()
    # The sheet's stream shares the workbook's file and holds it open until the rows' iterator
    # is closed (closing the workbook alone leaves it open).
    stack.callback(it.close)
    header = next(it, ())
    header_formulas = [c for c in header if c.data_type == "f"]
    for c in header_formulas:
        _formula_error(errors, sheet.title, 1, None, c)
    if header_formulas:
        return None
    columns = [str(c.value).strip().lower() if c.value is not None else "" for c in header]
    checked = [bool(c) and (read is None or c in read) for c in columns]
    total = max((sheet.max_row or 0) - 1, 1)
    state = {"i": 0}

    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        for number, cells in enumerate(it, start=2):
            state["i"] = number - 1
            values = [c.value for c in cells]
            if all(v is None or (isinstance(v, str) and not v.strip()) for v in values):
                continue
            formulas = [
                (column, c)
                for column, wanted, c in zip(columns, checked, cells, strict=False)
                if wanted and c.data_type == "f"
            ]
            for column, c in formulas:
                _formula_error(errors, sheet.title, number, column, c)
            if not formulas:
                yield number, {c: v for c, v in zip(columns, values, strict=False) if c}

    return Table(columns, rows(), lambda: min(state["i"] / total, 1.0), header_row=1)


def _open_parquet(
    path: Path,
    errors: Errors,
    stack: ExitStack,
    *,
    aliases: dict[str, tuple[str, ...]] = COLUMNS,
    types: dict[str, tuple[str, ...]] = PARQUET_TYPES,
) -> Table | None:
    """`aliases`: field -> accepted column names (only those columns are read); `types`:
    field -> accepted Arrow kinds. The material import's by default; the pairs import passes
    its own."""
    import pyarrow.parquet as pq

    try:
        pfile = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError... for a broken file
        errors.add(None, None, "bad_parquet", _("The file is not a valid Parquet file: %s") % exc)
        return None
    stack.callback(pfile.close)
    names = list(pfile.schema_arrow.names)
    columns = [n.strip().lower() for n in names]
    wanted_aliases = {a for names_of in aliases.values() for a in names_of}
    # POLLUX files carry rubrics and annotations we do not import: read only what we map.
    read = [n for n, c in zip(names, columns, strict=True) if c in wanted_aliases]
    if not _parquet_types_ok(pfile.schema_arrow, read, errors, aliases, types):
        return None
    total = max(pfile.metadata.num_rows, 1)
    state = {"i": 0}

    keys = [n.strip().lower() for n in read]
    criterion_keys = set(aliases.get("criteria_name", ()))
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

    return Table(columns, rows(), lambda: state["i"] / total, header_row=None)


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


def _kind_names() -> dict[str, str]:
    return {
        "string": _("text (string)"),
        "integer": _("integer"),
        "boolean": _("boolean"),
        "struct": _("JSON object"),
        "map": "map",
    }


def value_kind(value: Any) -> str:
    """The kind of a typed cell's value (a JSON line's, a workbook's), named as the Arrow kinds
    of Parquet columns, so one table of accepted kinds rules every format."""
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, dict):
        return "struct"
    if isinstance(value, list):
        return "list"
    if isinstance(value, (datetime, date, time)):
        return "date"
    return "number"  # a float, NaN and Infinity included


def _value_shown(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    kind = value_kind(value)
    if kind == "boolean":
        return _("a boolean (%s)") % ("true" if value else "false")
    if kind == "integer":
        return _("an integer (%s)") % value
    if kind == "list":
        return _("a JSON list")
    if kind == "struct":
        return _("a JSON object")
    if kind == "date":
        return _("a date")
    return _("a number (%s)") % value


def _typed_rows(
    rows: Iterator[tuple[int, dict[str, Any]]],
    errors: Errors,
    aliases: dict[str, tuple[str, ...]],
    types: dict[str, tuple[str, ...]],
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows whose every read cell has a kind its field accepts; each other cell is an
    error naming row and column (its row is left out: the import stores nothing anyway)."""
    allowed = {alias: types[name] for name, names_of in aliases.items() for alias in names_of}
    names = _kind_names()
    for number, row in rows:
        ok = True
        for column, value in row.items():
            kinds = allowed.get(column)
            if kinds is None or value is None or value_kind(value) in kinds:
                continue
            ok = False
            errors.add(
                number,
                column,
                "bad_type",
                _("Expected %(expected)s, got %(got)s.")
                % {
                    "expected": ", ".join(str(names[k]) for k in kinds),
                    "got": _value_shown(value),
                },
            )
        if ok:
            yield number, row


def _parquet_types_ok(
    schema: Any,
    read: list[str],
    errors: Errors,
    aliases: dict[str, tuple[str, ...]],
    types: dict[str, tuple[str, ...]],
) -> bool:
    """Every column we read has a type its field accepts (text needs strings, ids strings or
    integers...); each wrong column is named with the type expected. An all-null column is
    fine (nothing to misread)."""
    field_of = {alias: name for name, names_of in aliases.items() for alias in names_of}
    kinds = _kind_names()
    ok = True
    for column in read:
        kind = _arrow_kind(schema.field(column).type)
        allowed = types[field_of[column.strip().lower()]]
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


def detect_format(path: Path) -> str | None:
    return EXTENSIONS.get(path.suffix.lower())


@contextmanager
def open_table(
    path: Path,
    fmt: str | None,
    max_bytes: int,
    errors: Errors,
    *,
    aliases: dict[str, tuple[str, ...]] = COLUMNS,
    types: dict[str, tuple[str, ...]] = PARQUET_TYPES,
) -> Iterator[Table | None]:
    """The file opened by its format (given, or from the extension), after the checks every
    import makes first: a known format, a readable file within `max_bytes`, no column twice.
    None (with the errors added) when it cannot be read. Every file and workbook it opened is
    closed when the block is left, by an exception too (TooManyErrors among them).

    `aliases` and `types` are the import's column map (Parquet reads only those columns), and
    the kinds each field accepts, checked in every format (the module's docstring).

    The rows are read inside the block: its iterator reads the open file."""
    with ExitStack() as stack:
        yield _open(path, fmt, max_bytes, errors, stack, aliases, types)


def _open(
    path: Path,
    fmt: str | None,
    max_bytes: int,
    errors: Errors,
    stack: ExitStack,
    aliases: dict[str, tuple[str, ...]],
    types: dict[str, tuple[str, ...]],
) -> Table | None:
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
    if fmt == "csv":
        table = _open_csv(path, errors, stack)
    elif fmt == "jsonl":
        table = _open_jsonl(path, errors, stack)
    elif fmt == "xlsx":
        read = {alias for names_of in aliases.values() for alias in names_of}
        table = _open_xlsx(path, max_bytes, errors, stack, read=read)
    else:
        table = _open_parquet(path, errors, stack, aliases=aliases, types=types)
    if table is None:
        return None
    if len(set(table.columns) - {""}) != len([c for c in table.columns if c]):
        dupes = sorted({c for c in table.columns if c and table.columns.count(c) > 1})
        for column in dupes:
            errors.add(table.header_row, column, "bad_header", _("The column appears twice."))
        return None
    if fmt in ("jsonl", "xlsx"):
        # Parquet's columns were checked by their types, CSV cells are all text.
        table.rows = _typed_rows(table.rows, errors, aliases, types)
    return table


def read_table(content: bytes, filename: str, max_bytes: int) -> list[dict[str, str]]:
    """A small CSV (comma, semicolon or tab) or XLSX table held in memory, read by the material
    import's openers (the same encoding and zip-bomb checks): the data rows as {lower-cased
    header: stripped text cell}, blank rows left out. Raises ValueError with the first problem.

    The one table-file reader for imports other than material (the exam references): every
    column is read as text, a column may repeat (the last one wins), `max_bytes` bounds only
    a workbook's unpacked size.
    """
    xlsx = filename.lower().endswith(".xlsx")
    errors = Errors(limit=1)
    rows: list[dict[str, str]] = []
    with (
        upload_spooled(content, "table.xlsx" if xlsx else "table.csv") as path,
        ExitStack() as stack,
    ):
        try:
            if xlsx:
                table = _open_xlsx(path, max_bytes, errors, stack)
            else:
                table = _open_csv(path, errors, stack, delimiters=",;\t")
            if table is not None:
                # Every column in every row (a short CSV row leaves the rest empty).
                blank = dict.fromkeys((c for c in table.columns if c), "")
                rows = [
                    blank | {column: cell(value).strip() for column, value in row.items()}
                    for _number, row in table.rows
                ]
        except TooManyErrors:
            pass
    if errors:
        raise ValueError(errors.items[0].message)
    return rows
