"""lib.arrow: a query streamed as record batches equals the query's own rows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from django.db import connection
from django.db.utils import ConnectionHandler

from lib.arrow import stream_query

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("score", pa.float64()),
        ("flag", pa.bool_()),
        ("label", pa.string()),
    ]
)
# NULLs in every column, empty text (not NULL), quotes, commas, newlines and non-Latin script:
# everything CSV must carry through COPY.
ROWS: list[tuple[Any, ...]] = [
    (1, 2.5, 1, "plain"),
    (2, None, 0, ""),
    (3, -0.125, None, None),
    (None, 1e-300, 1, 'с "кавычками", запятыми\nи переводом строки'),
    (5, 3.0, 0, "🦔 \\N NULL"),
    (6, 0.0, 1, " "),
]


def _values_sql(rows: list[tuple[Any, ...]]) -> str:
    """The rows as a VALUES query (literals quoted by the database's own quoting)."""

    def literal(value: Any, sql_type: str) -> str:
        if value is None:
            return f"NULL::{sql_type}"
        if isinstance(value, str):
            return "'" + value.replace("'", "''") + "'"
        return f"{value}::{sql_type}"

    types = ("bigint", "double precision", "integer", "text")
    body = ", ".join(
        "(" + ", ".join(literal(v, t) for v, t in zip(row, types, strict=True)) + ")"
        for row in rows
    )
    return f"SELECT * FROM (VALUES {body}) AS t (id, score, flag, label)"  # noqa: S608 (test literals)


def _as_rows(batches: list[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    table = pa.Table.from_batches(batches, schema=SCHEMA)
    return [tuple(row.values()) for row in table.to_pylist()]


def _expected(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [(i, s, None if f is None else bool(f), t) for i, s, f, t in rows]


@pytest.mark.parametrize("chunk_rows", [1, 4, 50_000])
def test_a_query_streams_as_its_rows(db: Any, chunk_rows: int) -> None:
    batches = list(stream_query(_values_sql(ROWS), SCHEMA, chunk_rows=chunk_rows))
    assert all(b.schema == SCHEMA and 0 < b.num_rows <= chunk_rows for b in batches)
    assert _as_rows(batches) == _expected(ROWS)
    # The same rows as the database's own cursor returns.
    with connection.cursor() as cursor:
        cursor.execute(_values_sql(ROWS))
        assert _as_rows(batches) == _expected(cursor.fetchall())


def test_an_empty_result_streams_no_rows(db: Any) -> None:
    sql = _values_sql(ROWS) + " WHERE false"
    assert sum(b.num_rows for b in stream_query(sql, SCHEMA)) == 0


def test_many_rows_come_in_bounded_batches(db: Any) -> None:
    sql = "SELECT g, g / 2.0, (g % 2), repeat('ж', g % 7) FROM generate_series(1, 25000) g"
    batches = list(stream_query(sql, SCHEMA, chunk_rows=4096))
    assert max(b.num_rows for b in batches) <= 4096
    table = pa.Table.from_batches(batches)
    assert table.column("id").to_pylist() == list(range(1, 25001))
    assert table.column("label").to_pylist()[:8] == [
        "ж",
        "жж",
        "жжж",
        "жжжж",
        "жжжжж",
        "жжжжжж",
        "",
        "ж",
    ]


@pytest.fixture
def sqlite(django_db_blocker: Any) -> Iterator[Any]:
    """A second, non-PostgreSQL connection (in memory, outside the test database): the
    fetchmany path."""
    handler = ConnectionHandler(
        {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
    )
    conn = handler["default"]
    with django_db_blocker.unblock():
        yield conn
        conn.close()


@pytest.mark.parametrize("chunk_rows", [1, 4])
def test_other_databases_stream_the_same_rows(sqlite: Any, chunk_rows: int) -> None:
    with sqlite.cursor() as cursor:
        cursor.execute("CREATE TABLE t (id integer, score real, flag integer, label text)")
        cursor.executemany("INSERT INTO t VALUES (%s, %s, %s, %s)", ROWS)
    batches = list(
        stream_query("SELECT * FROM t", SCHEMA, chunk_rows=chunk_rows, connection=sqlite)
    )
    assert all(b.num_rows <= chunk_rows for b in batches)
    assert _as_rows(batches) == _expected(ROWS)
    assert list(stream_query("SELECT * FROM t WHERE 0", SCHEMA, connection=sqlite)) == []
