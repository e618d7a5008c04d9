"""Binary COPY into a model's table, the column list taken from the model's `_meta`.

`copy_model_rows(cursor, Model, n, {"field": values, ...})` writes n rows with
`COPY table (columns) FROM STDIN (FORMAT BINARY)`. The columns are the model's concrete fields
in their order; a field left out of `values` takes its Django default (the same value in every
row; `auto_now`/`auto_now_add` take one "now"), stays NULL when nullable, or comes from the
database when it is the auto primary key. A NOT NULL field with none of these raises
`CopyColumnsError` before anything is sent, naming the model and the fields: a new column breaks
the writer at its first call in any test, not deep inside a COPY at run time.

Two encodings of the same rows (`method`):
- "numpy" (the default): every field is fixed-width or padded, so a whole chunk is laid out by
  one numpy structured array and nothing is formatted per row in Python (`binary_copy_data`);
- "rows": psycopg's own binary path, `copy.set_types([...])` and `copy.write_row(row)`.
docs/raw/benchmarks-history.md compares them on the assignments build (the numpy layout is the
faster).

`ThreadedCopyWriter` runs such writes from a second thread on the caller's connection, so a
pure-Python producer and PostgreSQL's COPY work overlap on two cores.
"""

from __future__ import annotations

import itertools
import json
import queue
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

import numpy as np
from django.db import connection as default_connection
from django.db import models
from django.utils import timezone
from psycopg.types.json import Jsonb

# COPY ... (FORMAT BINARY) framing: signature, flags, header extension length; -1 ends the data.
PGCOPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
PGCOPY_TRAILER = b"\xff\xff"
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
METHODS = ("numpy", "rows")
# Which encoding copy_model_rows uses when not told (see the module doc); bench/assignments.py
# switches it to compare both on the same data.
COPY_METHOD = "numpy"

# PostgreSQL column type (as Django's db_type spells it) -> (layout kind, psycopg type name).
# Integers and floats are numpy big-endian types; the others are laid out in binary_copy_data.
_TYPES: dict[str, tuple[str, str]] = {
    "bigint": (">i8", "int8"),
    "integer": (">i4", "int4"),
    "smallint": (">i2", "int2"),
    "double precision": (">f8", "float8"),
    "boolean": ("bool", "bool"),
    "timestamp with time zone": ("timestamptz", "timestamptz"),
    "text": ("text", "text"),
    "jsonb": ("jsonb", "jsonb"),
}


class CopyColumnsError(ValueError):
    """The values given cannot make complete rows of the model's table."""


@dataclass(frozen=True)
class CopyColumn:
    """One column of the COPY: the field, its layout kind, and a value (array or scalar)."""

    field: models.Field[Any, Any]
    kind: str
    pg_type: str
    value: Any
    per_row: bool

    @property
    def column(self) -> str:
        return str(self.field.column)


def pg_timestamp(moment: datetime) -> int:
    """timestamptz in COPY BINARY: microseconds since 2000-01-01 UTC."""
    return (moment - _PG_EPOCH) // timedelta(microseconds=1)


def _field_type(field: models.Field[Any, Any]) -> tuple[str, str]:
    db_type = str(field.db_type(default_connection) or "")
    if db_type.startswith("varchar"):
        db_type = "text"  # varchar takes text's binary input
    if db_type not in _TYPES:
        raise CopyColumnsError(
            f"{field.model.__name__}.{field.name}: column type {db_type!r} has no COPY encoding"
        )
    return _TYPES[db_type]


def copy_columns(
    model: type[models.Model], values: Mapping[str, Any], *, now: datetime | None = None
) -> list[CopyColumn]:
    """The model's columns, in `_meta` order, with the value each row gets.

    `values` maps a field's name (or attname: "answer" or "answer_id") to a sequence of n values
    or to one value for every row. Raises CopyColumnsError for unknown names and for NOT NULL
    fields without a value or a default.
    """
    given = dict(values)
    columns: list[CopyColumn] = []
    missing: list[str] = []
    moment = now or timezone.now()
    for field in model._meta.concrete_fields:
        name = next((n for n in (field.name, field.attname) if n in given), None)
        if name is not None:
            value = given.pop(name)
        elif isinstance(field, models.AutoField | models.BigAutoField | models.SmallAutoField):
            continue  # the database's identity default
        elif getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            value = moment
        elif field.has_default():
            if callable(field.default) and field.unique:
                # Called once per COPY: every row would get the same "unique" value.
                missing.append(f"{field.name} (unique, callable default)")
                continue
            value = field.get_default()
        elif field.null:
            continue  # NULL
        else:
            missing.append(field.name)
            continue
        kind, pg_type = _field_type(field)
        per_row = not _is_scalar(value)
        columns.append(CopyColumn(field, kind, pg_type, value, per_row))
    if given:
        raise CopyColumnsError(f"{model.__name__} has no fields {sorted(given)}")
    if missing:
        raise CopyColumnsError(
            f"{model.__name__}: NOT NULL fields without a value or default: {', '.join(missing)}"
        )
    return columns


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(
        value, str | bytes | int | float | bool | datetime | dict | np.generic
    )


def copy_model_rows(
    cursor: Any,
    model: type[models.Model],
    n: int,
    values: Mapping[str, Any],
    *,
    now: datetime | None = None,
    method: str | None = None,
) -> None:
    """COPY n rows into the model's table on a psycopg (or Django) cursor; see the module doc.

    Column types and quoting come from Django's default connection (PostgreSQL's, as the
    cursor's), which a model field needs to name its column type."""
    columns = copy_columns(model, values, now=now)
    quote = default_connection.ops.quote_name
    names = ", ".join(quote(c.column) for c in columns)
    table = quote(model._meta.db_table)
    sql = f"COPY {table} ({names}) FROM STDIN (FORMAT BINARY)"
    method = method or COPY_METHOD
    with cursor.copy(sql) as copy:
        if method == "rows":
            copy.set_types([c.pg_type for c in columns])
            for row in zip(*(_python_values(c, n) for c in columns), strict=True):
                copy.write_row(row)
        elif method == "numpy":
            copy.write(binary_copy_data(n, [_layout(c) for c in columns]))
        else:
            raise ValueError(f"unknown COPY method {method!r}")


def _python_values(column: CopyColumn, n: int) -> Any:
    """The column's values as Python objects for psycopg's write_row."""
    if not column.per_row:
        value = column.value
        if column.kind == "jsonb" and value is not None:
            value = Jsonb(value)
        return itertools.repeat(value, n)
    values = column.value.tolist() if isinstance(column.value, np.ndarray) else column.value
    if column.kind == "text":
        return [v.decode() if isinstance(v, bytes) else v for v in values]
    if column.kind == "jsonb":
        return [Jsonb(v) for v in values]
    return values


def _layout(column: CopyColumn) -> tuple[str, Any]:
    """(kind, value) of one column for binary_copy_data."""
    kind, value = column.kind, column.value
    if value is None:
        return ("null", None)
    if not column.per_row:
        if kind == "text":
            return ("bytes", value.encode())
        if kind == "bool":
            return ("bytes", b"\x01" if value else b"\x00")
        if kind == "jsonb":
            return ("bytes", b"\x01" + json.dumps(value).encode())  # jsonb version 1, the text
        if kind == "timestamptz":
            return (">i8", pg_timestamp(value))
        return (kind, value)
    if kind == "text":
        array = value if isinstance(value, np.ndarray) else np.array(value)
        if array.dtype.kind == "U":
            array = np.char.encode(array, "utf-8")
        return ("text", array.astype(bytes))
    if kind == "bool":
        return ("|u1", np.asarray(value, dtype=bool).astype(np.uint8))
    if kind == "timestamptz":
        return (">i8", np.array([pg_timestamp(v) for v in value], dtype=np.int64))
    if kind == "jsonb":
        raise CopyColumnsError(f"{column.field.name}: jsonb values per row are not supported")
    return (kind, np.asarray(value))


def binary_copy_data(n: int, fields: Sequence[tuple[str, Any]]) -> bytes:
    """COPY BINARY data of n rows, laid out by one numpy structured array.

    Each field is (numpy big-endian type, scalar or array of n values) for numbers (bigint
    ">i8", integer ">i4", smallint ">i2", boolean "|u1", double ">f8", timestamptz ">i8" from
    pg_timestamp), ("bytes", constant) for the same encoded value in every row (b"" is an empty
    string), ("null", None) for NULL in every row, or ("text", numpy bytes array of n values)
    for a text that differs between rows: it is laid out padded to the longest value, and the
    padding is cut out of every row at the end.
    """
    layout: list[tuple[str, str]] = [("count", ">i2")]
    values: list[tuple[str, Any]] = [("count", len(fields))]
    texts: list[tuple[str, int, Any]] = []  # (field name, width, lengths)
    for i, (kind, value) in enumerate(fields):
        if kind == "text":
            width = max(value.dtype.itemsize, 1)
            lengths = np.char.str_len(value)
            layout += [(f"len{i}", ">i4"), (f"val{i}", f"S{width}")]
            values += [(f"len{i}", lengths), (f"val{i}", value)]
            texts.append((f"val{i}", width, lengths))
            continue
        if kind == "null":
            layout.append((f"len{i}", ">i4"))
            values.append((f"len{i}", -1))
            continue
        size = len(value) if kind == "bytes" else np.dtype(kind).itemsize
        layout.append((f"len{i}", ">i4"))
        values.append((f"len{i}", size))
        if size:
            layout.append((f"val{i}", f"S{size}" if kind == "bytes" else kind))
            values.append((f"val{i}", value))
    dtype = np.dtype(layout)
    rows = np.empty(n, dtype=dtype)
    for name, value in values:
        rows[name] = value
    if not texts:
        return PGCOPY_HEADER + rows.tobytes() + PGCOPY_TRAILER
    keep = np.ones((n, dtype.itemsize), dtype=bool)
    for name, width, lengths in texts:
        offset = dtype.fields[name][1]  # type: ignore[index]
        keep[:, offset : offset + width] = np.arange(width) < lengths[:, None]
    body = rows.view(np.uint8).reshape(n, dtype.itemsize)[keep]
    return PGCOPY_HEADER + body.tobytes() + PGCOPY_TRAILER


def next_ids(cursor: Any, model: type[models.Model], n: int) -> list[int]:
    """n ids drawn from the model's id sequence in one round trip (not necessarily contiguous:
    concurrent inserts may interleave), so COPY can write them and others reference them."""
    cursor.execute(
        "SELECT nextval(seq) FROM (SELECT pg_get_serial_sequence(%s, %s)::regclass AS seq) s,"
        " generate_series(1, %s)",
        [model._meta.db_table, model._meta.pk.column, n],
    )
    return [row[0] for row in cursor.fetchall()]


# While a writer thread runs, the interpreter hands the GIL over after this many seconds instead
# of the default 5 ms. psycopg sends COPY data in 128 KB pieces and, once the server falls
# behind, waits for the socket between pieces; every wake-up then needs the GIL back from the
# producer's pure-Python loop. With 5 ms per handover the writer fed PostgreSQL only ~40% of the
# loop's time in the assignments build (docs/bench_assignments.md).
WRITER_SWITCH_INTERVAL = 0.0001


class FastSwitching:
    """Lowers the process-wide switch interval while any writer thread runs (counted, so that
    concurrent writers in one process restore the original value only when the last one ends)."""

    _lock = threading.Lock()
    _active = 0
    _saved = 0.0

    def __init__(self) -> None:
        self._ended = False
        with self._lock:
            if FastSwitching._active == 0:
                FastSwitching._saved = sys.getswitchinterval()
                sys.setswitchinterval(min(FastSwitching._saved, WRITER_SWITCH_INTERVAL))
            FastSwitching._active += 1

    def end(self) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
            FastSwitching._active -= 1
            if FastSwitching._active == 0:
                sys.setswitchinterval(FastSwitching._saved)


Chunk = TypeVar("Chunk")


class ThreadedCopyWriter(Generic[Chunk]):
    """Writes chunks from a second thread, on the caller's connection and transaction.

    Subclasses implement `write(cursor, chunk)`. The thread uses the raw psycopg connection of
    `connection` (a Django connection, the default one if not given),
    whose lock serialises it with anything the caller's thread runs meanwhile. `first`, if
    given, runs in the thread before the first chunk (work for the server while the producer
    computes that chunk). An error in the thread is re-raised in the caller's thread (as the
    same Django exception as on the caller's own cursor) by the next `put` or by `close`; after
    it the thread writes nothing more.
    """

    thread_name = "copy-writer"

    def __init__(
        self, *, first: Callable[[Any], None] | None = None, connection: Any = None
    ) -> None:
        self._queue: queue.SimpleQueue[Chunk | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._stop = False
        self._first = first
        self._connection = connection or default_connection
        self._connection.ensure_connection()
        self._raw = self._connection.connection
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._switching = FastSwitching()
        self._thread.start()

    def write(self, cursor: Any, chunk: Chunk) -> None:
        raise NotImplementedError

    def put(self, chunk: Chunk) -> None:
        self._raise_error()
        self._queue.put(chunk)

    def close(self) -> None:
        """Wait until every chunk is written; re-raise the thread's error if any."""
        self._queue.put(None)
        self._thread.join()
        self._switching.end()
        self._raise_error()

    def abort(self) -> None:
        """Stop without writing what is still queued (the caller's transaction is failing)."""
        self._stop = True
        self._queue.put(None)
        self._thread.join()
        self._switching.end()

    def _raise_error(self) -> None:
        if self._error is not None:
            with self._connection.wrap_database_errors:
                raise self._error

    def _run(self) -> None:
        if self._first is not None:
            try:
                with self._raw.cursor() as cursor:
                    self._first(cursor)
            except BaseException as exc:  # handed to the caller's thread
                self._error = exc
        while (chunk := self._queue.get()) is not None:
            if self._error is None and not self._stop:
                try:
                    with self._raw.cursor() as cursor:
                        self.write(cursor, chunk)
                except BaseException as exc:  # handed to the caller's thread
                    self._error = exc
