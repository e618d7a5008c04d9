"""The final dataset as Parquet (one file per table) or Excel (one sheet per table).

Everything is read inside one snapshot (`aggregation.snapshot`), and the estimates in one query:
the aggregates are computed from the very rows that are written, so a score submitted during
the export is wholly in or wholly out. Estimates stream from the database in chunks (COPY on
PostgreSQL); while they are aggregated, their columns wait on disk beside the target
(`EstimateSpill`), and are then written chunk by chunk: memory stays bounded by the chunk size
plus the compact aggregation frame and the reference tables (criteria, rubrics, instructions
and answers).

A file is written under a temporary name in the target directory and renamed into place only
when complete, so a killed export never leaves a file that looks finished.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import threading
import zipfile
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from django.db import connection

from dataset.adjudication import latest_for
from dataset.aggregation import (
    AggregationSettings,
    DatasetComputation,
    EstimateFrameBuilder,
    ProgressFn,
    dataset_compute_from,
    dataset_report,
    is_postgres,
    release_memory,
    snapshot,
)
from dataset.export_schema import (
    ESTIMATE_COLUMNS,
    ESTIMATE_SCHEMA,
    QUERY_SCHEMA,
    TEXT_DICT,
    TIMESTAMP_UTC,
    TRIPLE_COLUMNS,
    WIRE_SCHEMA,
    judge_columns,
    judge_names_in_snapshot,
    triple_schema,
)
from dataset.parts import parts as kind_parts
from lib.arrow import stream_query
from lib.xlsx import EXCEL_MAX_CHARS, EXCEL_MAX_ROWS, TRUNCATION_MARKER, XlsxWriter
from material.models import Answer, Instruction, LanguageModel
from panels.models import Expert, Panel
from taxonomy.models import Criterion, FunctionalStyle, Rubric, Task
from taxonomy.services import task_lineages
from work.models import Assignment, Estimate, EstimateStatus, Triple, TripleKind

FORMATS = ("parquet", "xlsx")


@dataclass
class ExportOptions:
    fmt: str = "parquet"
    rules: AggregationSettings = field(default_factory=AggregationSettings)
    chunk_rows: int = 50_000
    excel_max_rows: int = EXCEL_MAX_ROWS

    def __post_init__(self) -> None:
        if self.fmt not in FORMATS:
            raise ValueError(f"unknown format {self.fmt!r}")


def _epoch_us(column: str) -> str:
    if is_postgres():
        return f"(EXTRACT(EPOCH FROM {column}) * 1000000)::bigint"
    return f"CAST(ROUND((julianday({column}) - 2440587.5) * 86400000000) AS INTEGER)"


def _estimates_sql(sure: str | None = None) -> str:
    """Every submitted estimate of a pointwise triple (pairwise labels go to the `pairs`
    table) with what both the aggregation and the estimates table need; `sure` (SQL) is the
    condition proving a rationale valid (see `rationale_sure_sql`)."""
    e, t, a, i = (
        Estimate._meta.db_table,
        Triple._meta.db_table,
        Answer._meta.db_table,
        Instruction._meta.db_table,
    )
    s = Assignment._meta.db_table
    sure = f"({sure})" if sure else "FALSE"
    return (
        "SELECT e.id, e.triple_id, a.instruction_id, t.answer_id, a.model_id, i.task_id, "  # noqa: S608 (trusted table names)
        'i.complexity, i.style_id, t.criterion_id, t."group", '
        "COALESCE(e.rubric_id, t.rubric_id), e.expert_id, s.panel_id, e.score, "
        "CASE WHEN e.is_na THEN 1 ELSE 0 END, e.rationale, "
        f"{_epoch_us('e.submitted_at')}, {_epoch_us('e.updated_at')}, e.time_spent_ms, "
        "e.review_status, "
        f"t.rubric_id, t.panel_id, CASE WHEN {sure} THEN 1 ELSE 0 END "
        f"FROM {e} e JOIN {t} t ON t.id = e.triple_id "
        f"JOIN {a} a ON a.id = t.answer_id JOIN {i} i ON i.id = a.instruction_id "
        f"JOIN {s} s ON s.id = e.assignment_id "
        f"WHERE e.status = '{EstimateStatus.SUBMITTED.value}' "
        f"AND t.kind = '{TripleKind.POINTWISE.value}'"
    )


class EstimateSpill:
    """The estimates of the single pass, parked on disk until the aggregation has decided.

    Which estimates the dataset keeps is known only once every estimate has been aggregated, and
    reading them twice from the database (a narrow pass for the aggregation, a wide one with the
    rationales for the file) cost a second query, transfer and CSV parse. The one pass writes
    the wire batches here as an uncompressed Arrow IPC stream (cheap: a copy into the page
    cache) and the write pass reads them back batch by batch, so memory stays bounded by a batch.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: Any = pa.OSFile(str(path), "wb")
        self._writer: Any = pa.ipc.new_stream(self._file, WIRE_SCHEMA)

    def write(self, batch: pa.RecordBatch) -> None:
        self._writer.write_batch(batch)

    def finish(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._file.close()
            self._writer = self._file = None

    def batches(self) -> Iterator[pa.RecordBatch]:
        self.finish()
        with pa.OSFile(str(self.path), "rb") as source:
            yield from pa.ipc.open_stream(source)

    def remove(self) -> None:
        with contextlib.suppress(Exception):
            self.finish()
        _remove(self.path)


def read_estimates_once(
    spill: EstimateSpill, *, chunk_rows: int, progress: ProgressFn | None = None
) -> pd.DataFrame:
    """One pass over the submitted estimates: the aggregation's compact frame is returned, the
    estimates table's columns go to `spill`."""
    builder = EstimateFrameBuilder()
    sql = _estimates_sql(builder.sure_sql("e.rationale"))
    for batch in stream_query(sql, QUERY_SCHEMA, chunk_rows=chunk_rows):
        builder.add(
            {
                "estimate_id": batch.column("estimate_id"),
                "triple_id": batch.column("triple_id"),
                "answer_id": batch.column("answer_id"),
                "criterion_id": batch.column("criterion_id"),
                "rubric_id": batch.column("triple_rubric_id"),
                "panel_id": batch.column("triple_panel_id"),
                "group": batch.column("group"),
                "model_id": batch.column("model_id"),
                "instruction_id": batch.column("instruction_id"),
                "task_id": batch.column("task_id"),
                "score": batch.column("score").cast(pa.float64()),
                "is_na": batch.column("is_na"),
                "rationale_sure": batch.column("rationale_sure"),
                "rationale": batch.column("rationale"),
                # COALESCE(e.rubric_id, t.rubric_id): the builder's fallback finds it non-null.
                "estimate_rubric_id": batch.column("rubric_id"),
            }
        )
        spill.write(batch.select(WIRE_SCHEMA.names))
        if progress:
            progress(builder.rows, 0, "read")
    spill.finish()
    return builder.frame()


# --------------------------------------------------------------------------------------------
# Reference tables, read once inside the snapshot; columns become Arrow dictionaries by id.
# --------------------------------------------------------------------------------------------


class IdMap:
    """id -> text, turned into Arrow dictionary arrays with a chunk-local dictionary.

    The texts are held as one Arrow string array (UTF-8, ~1 byte per Cyrillic-heavy character
    less than Python's str): the answers alone are ~40 MB as Python strings at POLLUX scale.
    Ids point at their text by an integer code (`codes`, -1: no text), so a chunk's dictionary
    is a gather by codes, without hashing texts per chunk. Dictionaries should not repeat a
    value: Parquet's writer falls back to plain encoding for such a column chunk, writing out
    every row's text (rubrics, scales and empty references are shared by several ids: tens of
    MB per row group, held until the row group is done). So mapped texts are held once each;
    texts from `from_query` (the answers) are taken as distinct, because hashing 35 MB of them
    costs more than the rare duplicate (which only costs that chunk the plain encoding).
    """

    def __init__(self, mapping: dict[int, str | None]) -> None:
        keys = np.fromiter(mapping.keys(), dtype=np.int64, count=len(mapping))
        order = np.argsort(keys)
        values = list(mapping.values())
        distinct: dict[str, int] = {}
        codes = [
            -1 if (text := values[i]) is None else distinct.setdefault(text, len(distinct))
            for i in order.tolist()
        ]
        self.keys = keys[order]
        self.codes = np.array(codes, dtype=np.int64)
        self.texts: pa.Array = pa.array(list(distinct), pa.string())

    @classmethod
    def from_query(cls, sql: str) -> IdMap:
        """From `SELECT id, text ... ORDER BY id`, streamed into Arrow (no Python strings)."""
        schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
        table = pa.Table.from_batches(list(stream_query(sql, schema)), schema=schema)
        self = cls({})
        self.keys = np.asarray(table.column("id").to_numpy(), dtype=np.int64)
        self.texts = table.column("text").combine_chunks()
        self.codes = np.where(
            np.asarray(self.texts.is_null().to_numpy(zero_copy_only=False), dtype=bool),
            -1,
            np.arange(len(self.texts), dtype=np.int64),
        )
        del table
        # The parsed chunks are free now; Arrow's allocator would keep them for reuse.
        pa.default_memory_pool().release_unused()
        return self

    def dictionary(self, ids: np.ndarray) -> pa.DictionaryArray:
        uniq, inverse = np.unique(ids, return_inverse=True)
        code = np.full(len(uniq), -1, dtype=np.int64)
        if len(self.keys):
            pos = np.clip(np.searchsorted(self.keys, uniq), 0, len(self.keys) - 1)
            # Unknown ids (or the -1 of a NULL) become nulls, not empty strings.
            found = self.keys[pos] == uniq
            code[found] = self.codes[pos[found]]
        has_text = code >= 0
        used = np.unique(code[has_text])
        local = np.searchsorted(used, code)[inverse].astype(np.int32)
        indices = pa.array(local, mask=~has_text[inverse])
        return pa.DictionaryArray.from_arrays(indices, pc.take(self.texts, pa.array(used)))


def _text_dict(values: list[str | None]) -> pa.DictionaryArray:
    return pc.dictionary_encode(pa.array(values, pa.string())).cast(TEXT_DICT)


@dataclass
class ExportLookups:
    instruction_ext: IdMap
    instruction_text: IdMap
    instruction_reference: IdMap
    instruction_complexity: dict[int, str]
    instruction_style: dict[int, int | None]
    answer_ext: IdMap
    answer_text: IdMap
    model: IdMap
    task_path: IdMap
    task_levels: dict[int, tuple[str, str, str]]
    style: IdMap
    criterion_key: IdMap
    criterion_name: IdMap
    rubric_scale: IdMap
    rubric_prompt: IdMap
    rubric_version: dict[int, int]
    expert: IdMap
    panel: IdMap

    @classmethod
    def load(cls) -> ExportLookups:
        instructions = list(
            Instruction.objects.values_list(
                "pk", "external_id", "text", "reference_answer", "complexity", "style_id"
            )
        )
        # Answer texts, the bulk of it, go straight into Arrow without a Python copy each.
        answer_ext = IdMap(
            {pk: ext or str(pk) for pk, ext in Answer.objects.values_list("pk", "external_id")}
        )
        answer_text = IdMap.from_query(
            f"SELECT id, text FROM {Answer._meta.db_table} ORDER BY id"  # noqa: S608 (trusted table names)
        )
        task_rows = {
            pk: (name, path) for pk, name, path in Task.objects.values_list("pk", "name_en", "path")
        }
        levels: dict[int, tuple[str, str, str]] = {}
        for pk, path in task_lineages().items():
            names = [task_rows[node][0] for node in path] + ["", "", ""]
            levels[pk] = (names[0], names[1], names[2])
        rubrics = list(Rubric.objects.all())
        return cls(
            instruction_ext=IdMap({r[0]: r[1] or str(r[0]) for r in instructions}),
            instruction_text=IdMap({r[0]: r[2] for r in instructions}),
            instruction_reference=IdMap({r[0]: r[3] for r in instructions}),
            instruction_complexity={r[0]: r[4] for r in instructions},
            instruction_style={r[0]: r[5] for r in instructions},
            answer_ext=answer_ext,
            answer_text=answer_text,
            model=IdMap({lm.pk: str(lm) for lm in LanguageModel.objects.all()}),
            task_path=IdMap({pk: row[1] for pk, row in task_rows.items()}),
            task_levels=levels,
            style=IdMap(dict(FunctionalStyle.objects.values_list("pk", "name_en"))),
            criterion_key=IdMap(dict(Criterion.objects.values_list("pk", "key"))),
            criterion_name=IdMap(
                {
                    pk: ru or en
                    for pk, ru, en in Criterion.objects.values_list("pk", "name_ru", "name_en")
                }
            ),
            rubric_scale=IdMap({r.pk: ",".join(str(v) for v in r.values) for r in rubrics}),
            rubric_prompt=IdMap({r.pk: r.prompt_text() for r in rubrics}),
            rubric_version={r.pk: r.version for r in rubrics},
            expert=IdMap(dict(Expert.objects.values_list("pk", "pseudonym"))),
            panel=IdMap(dict(Panel.objects.values_list("pk", "key"))),
        )


def _ids(array: pa.Array, fill: int = -1) -> np.ndarray:
    return np.asarray(pc.fill_null(array, fill).to_numpy(zero_copy_only=False), dtype=np.int64)


def estimate_batches(
    kept_ids: np.ndarray,
    lookups: ExportLookups,
    wires: Iterable[pa.RecordBatch],
    *,
    on_chunk: Callable[[int], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The estimates table, chunk by chunk, keeping only the estimates in the dataset.

    `wires`: batches of `WIRE_SCHEMA` (as parked by `read_estimates_once`). The batches are
    built by a worker thread one ahead of the caller, so that building the next one (Arrow and
    NumPy kernels, mostly without the GIL) overlaps the caller's compression of this one.
    `on_chunk` is called in the caller's thread (it may use the caller's database connection).
    """
    for rows, batch in _prefetched(_estimate_batches(kept_ids, lookups, wires)):
        if on_chunk:
            on_chunk(rows)
        if batch is not None:
            yield batch


def _estimate_batches(
    kept_ids: np.ndarray, lookups: ExportLookups, wires: Iterable[pa.RecordBatch]
) -> Iterator[tuple[int, pa.RecordBatch | None]]:
    """(rows read, the batch of those kept, None if none) per wire batch."""
    for wire in wires:
        ids = _ids(wire.column("estimate_id"))
        pos = np.clip(np.searchsorted(kept_ids, ids), 0, max(len(kept_ids) - 1, 0))
        keep = (kept_ids[pos] == ids) if len(kept_ids) else np.zeros(len(ids), bool)
        if not keep.any():
            yield wire.num_rows, None
            continue
        w = wire.filter(pa.array(keep))
        rubric = _ids(w.column("rubric_id"))
        score = w.column("score")
        is_na = w.column("is_na")
        yield (
            wire.num_rows,
            pa.RecordBatch.from_arrays(
                [
                    w.column("estimate_id"),
                    w.column("triple_id"),
                    lookups.instruction_ext.dictionary(_ids(w.column("instruction_id"))),
                    lookups.answer_ext.dictionary(_ids(w.column("answer_id"))),
                    lookups.model.dictionary(_ids(w.column("model_id"))),
                    lookups.task_path.dictionary(_ids(w.column("task_id"))),
                    pc.dictionary_encode(w.column("complexity")).cast(TEXT_DICT),
                    lookups.style.dictionary(_ids(w.column("style_id"))),
                    lookups.criterion_key.dictionary(_ids(w.column("criterion_id"))),
                    lookups.criterion_name.dictionary(_ids(w.column("criterion_id"))),
                    pc.dictionary_encode(w.column("group")).cast(TEXT_DICT),
                    lookups.rubric_scale.dictionary(rubric),
                    pa.array([lookups.rubric_version.get(r) for r in rubric.tolist()], pa.int32()),
                    lookups.expert.dictionary(_ids(w.column("expert_id"))),
                    lookups.panel.dictionary(_ids(w.column("panel_id"))),
                    pc.if_else(is_na, pa.scalar(None, pa.int16()), score),
                    is_na,
                    pc.fill_null(w.column("rationale"), ""),
                    pc.cast(w.column("submitted_us"), TIMESTAMP_UTC),
                    pc.cast(w.column("updated_us"), TIMESTAMP_UTC),
                    w.column("time_spent_ms"),
                    pc.dictionary_encode(w.column("review_status")).cast(TEXT_DICT),
                ],
                schema=ESTIMATE_SCHEMA,
            ),
        )


_T = TypeVar("_T")


def _prefetched(items: Iterator[_T], depth: int = 1) -> Generator[_T, None, None]:
    """`items`, computed by a worker thread up to `depth` items ahead of the caller.

    The worker's exception is raised in the caller; a caller that stops early (an exception,
    a closed generator) stops the worker before returning.
    """
    buffer: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: tuple[bool, Any]) -> bool:
        while not stop.is_set():
            try:
                buffer.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in items:
                if not put((True, item)):
                    return
        except BaseException as exc:  # handed over to the caller, raised there
            put((False, exc))
            return
        finally:
            # Closed in the thread that ran it (the spill file it reads is closed now).
            close = getattr(items, "close", None)
            if close is not None:
                close()
        put((False, None))

    worker = threading.Thread(target=work, name="export-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            ok, item = buffer.get()
            if not ok:
                if item is not None:
                    raise item
                return
            yield item
    finally:
        stop.set()
        worker.join()


def triple_batches(
    computed: DatasetComputation,
    lookups: ExportLookups,
    *,
    chunk_rows: int,
    judge_names: list[str] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The triples table (in the dataset only), ordered by answer so text dictionaries stay
    chunk-local and small."""
    triples = computed.triples
    # Row positions in (answer, triple) order, the rows gathered chunk by chunk: a sorted copy
    # of the whole frame would sit in memory beside the chunks' texts.
    keep = np.flatnonzero((triples["excluded_reason"] == "").to_numpy())
    order = keep[
        np.lexsort(
            (
                triples["triple_id"].to_numpy(dtype=np.int64)[keep],
                triples["answer_id"].to_numpy(dtype=np.int64)[keep],
            )
        )
    ]
    for start in range(0, len(order), chunk_rows):
        part = triples.iloc[order[start : start + chunk_rows]]
        instr = part["instruction_id"].to_numpy(dtype=np.int64)
        answer = part["answer_id"].to_numpy(dtype=np.int64)
        leaf = part["leaf_task_id"].to_numpy(dtype=np.int64)
        rubric = part["rubric_id"].to_numpy(dtype=np.int64)
        crit = part["criterion_id"].to_numpy(dtype=np.int64)
        levels = [lookups.task_levels.get(t, ("", "", "")) for t in leaf.tolist()]
        styles = np.array(
            [lookups.instruction_style.get(i) or -1 for i in instr.tolist()], dtype=np.int64
        )
        mean = part["mean"].to_numpy(dtype=float)
        mode = part["mode"].to_numpy(dtype=float)
        schema = triple_schema(judge_names or [])
        judge_arrays: list[pa.Array] = []
        if judge_names:
            # One query per chunk: the judges' latest estimate of each triple, per config.
            values = judge_columns().aligned(part["triple_id"].tolist(), judge_names)
            judge_arrays = [
                pa.array(values[field.name], type=field.type)
                for field in schema
                if field.name.startswith("judge__")
            ]
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(part["triple_id"].to_numpy(dtype=np.int64)),
                lookups.instruction_ext.dictionary(instr),
                lookups.answer_ext.dictionary(answer),
                lookups.instruction_text.dictionary(instr),
                lookups.instruction_reference.dictionary(instr),
                lookups.answer_text.dictionary(answer),
                lookups.model.dictionary(part["model_id"].to_numpy(dtype=np.int64)),
                _text_dict([lv[0] for lv in levels]),
                _text_dict([lv[1] for lv in levels]),
                _text_dict([lv[2] for lv in levels]),
                lookups.task_path.dictionary(leaf),
                _text_dict([lookups.instruction_complexity.get(i, "") for i in instr.tolist()]),
                lookups.style.dictionary(styles),
                lookups.criterion_name.dictionary(crit),
                lookups.criterion_key.dictionary(crit),
                _text_dict(part["group"].astype(str).tolist()),
                lookups.rubric_prompt.dictionary(rubric),
                lookups.rubric_scale.dictionary(rubric),
                lookups.panel.dictionary(part["panel_id"].to_numpy(dtype=np.int64)),
                pa.array(mean, pa.float64(), from_pandas=True),
                pa.array(mean, pa.float64(), from_pandas=True),
                pa.array(np.where(np.isnan(mode), 0, mode).astype(np.int16), mask=np.isnan(mode)),
                pa.array(part["confidence"].to_numpy(dtype=float), pa.float64(), from_pandas=True),
                pa.array(part["n_estimates"].to_numpy(dtype=np.int32)),
                pa.array(part["n_scores"].to_numpy(dtype=np.int32)),
                pa.array(part["all_na"].to_numpy(dtype=bool)),
                *_adjudication_arrays(part["triple_id"].tolist()),
                *judge_arrays,
            ],
            schema=schema,
        )


def _adjudication_arrays(triple_ids: list[int]) -> list[pa.Array]:
    """The supervisors' latest adjudication of each triple (one query per chunk)."""
    found = latest_for(triple_ids)
    rows = [found.get(t) for t in triple_ids]
    return [
        pa.array([r.score if r else None for r in rows], pa.int16()),
        pa.array([r.is_na if r else None for r in rows], pa.bool_()),
        pa.array([r.reason if r else None for r in rows], pa.string()),
    ]


# --------------------------------------------------------------------------------------------
# Sinks: Parquet files or Excel sheets.
# --------------------------------------------------------------------------------------------


class ParquetSink:
    """One Parquet file per table in a directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.rows: dict[str, int] = {}

    def write_table(self, name: str, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> None:
        path = self.directory / f"{name}.parquet"
        with pq.ParquetWriter(path, schema, compression="zstd") as writer:
            rows = 0
            for batch in batches:
                writer.write_batch(batch, row_group_size=max(batch.num_rows, 1))
                rows += batch.num_rows
                # The row group is on disk: its buffers go back to the system now, or Arrow's
                # allocator keeps them and each row group's peak stacks on the last one's
                # (~130 MB over the triples table at POLLUX scale).
                pa.default_memory_pool().release_unused()
        self.rows[name] = rows

    def write_frame(self, name: str, frame: pd.DataFrame) -> None:
        pq.write_table(
            pa.Table.from_pandas(frame, preserve_index=False),
            self.directory / f"{name}.parquet",
            compression="zstd",
        )
        self.rows[name] = len(frame)

    def close(self) -> None:
        return None


# --------------------------------------------------------------------------------------------
# The export service.
# --------------------------------------------------------------------------------------------


def readme_lines(
    options: ExportOptions, computed: DatasetComputation, generated_at: datetime
) -> list[tuple[str, str]]:
    lines: list[tuple[str, str]] = [
        ("Pollux Studio dataset", "Expert estimates aggregated by the POLLUX protocol."),
        ("generated_at", generated_at.isoformat()),
    ]
    for key, value in options.rules.as_dict().items():
        lines.append((f"setting: {key}", str(value)))
    for key, value in dataset_report(computed).items():
        if key != "settings":
            lines.append((f"report: {key}", str(value)))
    lines.append(("", ""))
    lines.append(("Sheet estimates", "One row per expert score kept in the dataset."))
    lines += [(f"estimates.{c}", d) for c, d in ESTIMATE_COLUMNS]
    lines.append(("Sheet triples", "One row per (instruction, answer, criterion) in the dataset."))
    lines += [(f"triples.{c}", d) for c, d in TRIPLE_COLUMNS]
    lines.append(
        (
            "Sheet agreement",
            "Agreement per criterion, group, panel, task and model: "
            "mean verdict confidence, share of triples with a mode, Krippendorff's alpha "
            "(ordinal), and the same measures under random labelling.",
        )
    )
    for part in kind_parts:
        lines += part.notes(computed.parts[part.key])
    lines.append(("Sheet model_criterion", "Mean score per model and criterion."))
    lines.append(("Sheet model_task", "Mean score per model and task."))
    lines.append(
        (
            "Text cells",
            f"Cells over {EXCEL_MAX_CHARS} characters end with "
            f"'{TRUNCATION_MARKER.strip()}' (the Parquet export keeps the full text); "
            "control characters are removed.",
        )
    )
    return lines


def dataset_write(
    target: Path,
    options: ExportOptions,
    *,
    progress: ProgressFn | None = None,
    spill_path: Path | None = None,
) -> dict[str, Any]:
    """Write the dataset to `target` (a file; for Parquet a directory, or a .zip file).

    All of it comes from one snapshot, read in one pass: the estimates wait in `spill_path`
    (default: beside `target`, removed at the end) while they are aggregated. Returns the report
    (row counts, settings, aggregation report). The caller is responsible for atomic placement
    (see `dataset_export`).
    """
    generated_at = datetime.now(UTC)
    spill = EstimateSpill(spill_path or _spill_path(target))
    try:
        with snapshot():
            judge_names = judge_names_in_snapshot()
            estimates = read_estimates_once(spill, chunk_rows=options.chunk_rows, progress=progress)
            computed = dataset_compute_from(estimates, options.rules)
            total = len(estimates)
            kept = computed.result.kept_estimate_ids
            # The compact estimates frame has served the aggregation; free it before the long pass.
            del estimates
            computed.estimates = computed.estimates.iloc[0:0]
            release_memory()
            # The reference tables (the answer texts: tens of MB) only now: the write pass alone
            # needs them, and loaded first they stacked under the aggregation's peak.
            lookups = ExportLookups.load()
            release_memory()
            done = {"n": 0}

            def on_chunk(n: int) -> None:
                done["n"] += n
                if progress:
                    progress(done["n"], total, "write")

            sink: ParquetSink | XlsxWriter
            if options.fmt == "xlsx":
                sink = XlsxWriter(target, max_rows=options.excel_max_rows)
                sink.write_notes(readme_lines(options, computed, generated_at))
            else:
                sink = ParquetSink(target)
            try:
                sink.write_table(
                    "triples",
                    triple_schema(judge_names),
                    triple_batches(
                        computed, lookups, chunk_rows=options.chunk_rows, judge_names=judge_names
                    ),
                )
                release_memory()
                sink.write_table(
                    "estimates",
                    ESTIMATE_SCHEMA,
                    estimate_batches(kept, lookups, spill.batches(), on_chunk=on_chunk),
                )
                for part in kind_parts:
                    part.write(
                        sink,
                        computed.parts[part.key],
                        fmt=options.fmt,
                        chunk_rows=options.chunk_rows,
                    )
                sink.write_frame("agreement", computed.agreement)
                for name, table in computed.tables.items():
                    sink.write_frame(name, table)
            finally:
                sink.close()
    finally:
        spill.remove()
    report = dataset_report(computed)
    report["rows"] = dict(sink.rows)
    report["format"] = options.fmt
    report["generated_at"] = generated_at.isoformat()
    if isinstance(sink, XlsxWriter):
        report["sheets"] = sink.sheets
    return report


def _spill_path(target: Path) -> Path:
    return target.with_name(target.name + ".spill")


def dataset_export(
    out: Path,
    options: ExportOptions,
    *,
    progress: ProgressFn | None = None,
    temp_name: str | None = None,
) -> dict[str, Any]:
    """Write the dataset to `out` atomically: under a temporary name beside it, then renamed.

    Parquet goes to a directory of files, or into one zip when `out` ends with .zip.
    `temp_name` fixes the temporary name (a retried job reuses and so overwrites its own).
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / (temp_name or f".{out.name}.{os.getpid()}.part")
    staging = tmp.with_name(tmp.name + ".d")
    # What a killed attempt with the same temporary name may have left: its file, its staging
    # directory, its spilled estimates.
    leftovers = (tmp, staging, _spill_path(tmp), _spill_path(staging))
    for path in leftovers:
        _remove(path)
    try:
        if options.fmt == "parquet" and out.suffix == ".zip":
            report = dataset_write(staging, options, progress=progress)
            # Parquet is compressed already: store, don't deflate again.
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as archive:
                for path in sorted(staging.iterdir()):
                    archive.write(path, arcname=path.name)
            shutil.rmtree(staging)
        else:
            report = dataset_write(tmp, options, progress=progress)
        if out.is_dir():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        for path in leftovers:
            _remove(path)
        raise
    return report


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def db_vendor() -> str:
    return connection.vendor
