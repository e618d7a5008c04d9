"""A kind's part of the dataset: the verdicts and tables a kind of work adds to the aggregation
and the export, beside the rubric's triples (the core's own tables).

Each part is a `DatasetPart` registered under its kind's key (DatasetConfig.ready()); the
aggregation and the export ask every registered part, in the same snapshot, for its result, its
verdict rows, its report, its notes and its tables, and never name a kind: a new kind with
verdicts of its own registers a part and touches neither module.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from lib.registry import Registry

if TYPE_CHECKING:
    from dataset.aggregation import AggregationSettings


class TableSink(Protocol):
    """Where the export writes a table (a Parquet file, an Excel sheet)."""

    def write_table(
        self, name: str, schema: pa.Schema, batches: Iterator[pa.RecordBatch]
    ) -> None: ...


class DatasetPart(Protocol):
    """What the aggregation and the export ask of one kind with verdicts of its own."""

    @property
    def key(self) -> str: ...

    def compute(self, rules: AggregationSettings) -> Any:
        """Read (inside the caller's snapshot) and aggregate the kind's work."""
        ...

    def verdict_rows(self, result: Any, job_id: int | None) -> pa.Table | None:
        """TripleAggregate rows of the kind's triples (the columns aggregates_write copies)."""
        ...

    def report(self, result: Any) -> dict[str, Any]:
        """The kind's counts in the aggregation's report ({} when it has no work)."""
        ...

    def notes(self, result: Any) -> list[tuple[str, str]]:
        """The lines the Excel workbook's notes sheet gives its tables."""
        ...

    def write(self, sink: TableSink, result: Any, *, fmt: str, chunk_rows: int) -> None:
        """Write the kind's tables to the export."""
        ...


parts: Registry[DatasetPart] = Registry("dataset.parts")
