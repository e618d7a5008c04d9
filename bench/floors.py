"""Floors of the data benchmarks (issue #17): the same rows moved with no logic, same run.

A floor is the least work a job can be on this database and machine: the rows it must read
come out by one bare COPY into Arrow, the rows it must write go out with no per-row work. The
rows to write are the fast step's own output, prepared before the clock starts (read back from
the database or from its files), so floor and fast step move exactly the same data. A fast step
near its floor has no logic left worth optimising; one far above it says where to look.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa


def _drain(sql: str, schema: pa.Schema) -> int:
    """Stream `sql` into Arrow batches and drop them; the rows read."""
    from lib.arrow import stream_query

    rows = 0
    for batch in stream_query(sql, schema, chunk_rows=100_000):
        rows += batch.num_rows
    return rows


def _texts_sql() -> list[tuple[str, pa.Schema]]:
    """The long texts an export joins in: every answer's and instruction's, by id."""
    from material.models import Answer, Instruction

    text = pa.schema([("id", pa.int64()), ("text", pa.string())])
    pair = pa.schema([("id", pa.int64()), ("text", pa.string()), ("reference", pa.string())])
    return [
        (f"SELECT id, text FROM {Answer._meta.db_table}", text),  # noqa: S608 (trusted table names)
        (
            f"SELECT id, text, reference_answer FROM {Instruction._meta.db_table}",  # noqa: S608
            pair,
        ),
    ]


def aggregation_floor() -> dict[str, Any]:
    """Read the aggregation's estimates (its own query, one COPY into Arrow) and write back as
    many result rows as it writes, by its own COPY writer, from rows prepared beforehand."""
    import pandas as pd
    from django.db import connection

    from dataset.aggregation import (
        NARROW_SCHEMA,
        EstimateFrameBuilder,
        aggregates_write,
        narrow_estimates_sql,
        snapshot,
    )
    from dataset.models import TripleAggregate

    sql = narrow_estimates_sql(EstimateFrameBuilder().sure_sql("e.rationale"))
    columns = ["triple_id", "n_estimates", "mean", "mode", "confidence", "all_na"]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join(columns)}, excluded_reason FROM {TripleAggregate._meta.db_table}"  # noqa: S608
        )
        result = pd.DataFrame(cursor.fetchall(), columns=[*columns, "excluded_reason"])
    started = time.perf_counter()
    with snapshot():
        read = _drain(sql, NARROW_SCHEMA)
    written = aggregates_write(result, job_id=None)
    return {"timed_s": time.perf_counter() - started, "read": read, "written": written}


def export_floor(fmt: str, tables: dict[str, pa.Table], target: Path) -> dict[str, Any]:
    """Read the export's estimates (its own query) and the texts it joins in, each by one COPY
    into Arrow; write `tables` (the export's own output, in memory) with the export's writer."""
    from dataset.aggregation import EstimateFrameBuilder, snapshot
    from dataset.export import ParquetSink, _estimates_sql
    from dataset.export_schema import QUERY_SCHEMA
    from lib.xlsx import XlsxWriter

    sql = _estimates_sql(EstimateFrameBuilder().sure_sql("e.rationale"))
    started = time.perf_counter()
    with snapshot():
        read = _drain(sql, QUERY_SCHEMA)
        for text_sql, schema in _texts_sql():
            _drain(text_sql, schema)
    sink: ParquetSink | XlsxWriter = XlsxWriter(target) if fmt == "xlsx" else ParquetSink(target)
    try:
        for name, table in tables.items():
            sink.write_table(name, table.schema, iter(table.to_batches(max_chunksize=50_000)))
    finally:
        sink.close()
    return {"timed_s": time.perf_counter() - started, "read": read}


def read_tables(directory: Path) -> dict[str, pa.Table]:
    """The Parquet export's tables (the big two first, as the export writes them)."""
    import pyarrow.parquet as pq

    order = {"triples": 0, "estimates": 1}
    paths = sorted(directory.glob("*.parquet"), key=lambda p: (order.get(p.stem, 2), p.stem))
    return {path.stem: pq.read_table(path) for path in paths}
