"""Parquet export at POLLUX scale: python bench/run.py export-parquet --scale full.

Fast: dataset.export.dataset_export to a directory of Parquet files (one snapshot, COPY out,
Arrow batches, ParquetWriter), aggregation included. Baseline: ORM iteration row by row over the
submitted estimates (select_related), rows into a pandas DataFrame, DataFrame.to_parquet (the
estimates table only, no aggregation: less work). Floor (bench.floors): the same estimates and
texts out by bare COPYs into Arrow, the fast step's own tables (read back untimed) written by
the same Parquet writer.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench.datagen import ensure_dataset
from bench.steps import (
    BASELINE_SUBSAMPLE,
    every_kth_answer,
    result_line,
    run_child,
    run_floor,
    scale_baseline,
)

OUT = Path(tempfile.gettempdir()) / "pollux-bench-export"


def fast(scale: str) -> dict[str, Any]:
    from dataset.export import ExportOptions, dataset_export

    target = OUT / f"fast-{scale}"
    report = dataset_export(target, ExportOptions(fmt="parquet"))
    size = sum(p.stat().st_size for p in target.iterdir())
    return {"rows": report["rows"], "mb": round(size / 2**20, 1)}


def floor(scale: str) -> dict[str, Any]:
    from bench.floors import export_floor, read_tables

    tables = read_tables(OUT / f"fast-{scale}")  # the fast step's output, untimed
    return export_floor("parquet", tables, OUT / f"floor-{scale}")


def naive(scale: str) -> dict[str, Any]:
    import pandas as pd

    from work.models import Estimate

    rows = []
    submitted = Estimate.objects.filter(status="submitted")
    total = submitted.count()
    qs = every_kth_answer(submitted, BASELINE_SUBSAMPLE.get(scale, 1)).select_related(
        "triple__answer__instruction__task",
        "triple__answer__model",
        "triple__criterion",
        "expert",
        "assignment__panel",
        "rubric",
    )
    for e in qs.iterator(chunk_size=2000):
        answer = e.triple.answer
        rows.append(
            {
                "estimate_id": e.pk,
                "triple_id": e.triple_id,
                "instruction_id": answer.instruction.external_id,
                "answer_id": answer.external_id,
                "model": str(answer.model),
                "task_path": answer.instruction.task.path,
                "complexity": answer.instruction.complexity,
                "criterion_key": e.triple.criterion.key,
                "criterion_name": e.triple.criterion.name_ru,
                "criterion_group": e.triple.group,
                "expert": e.expert.pseudonym,
                "panel": e.assignment.panel.key,
                "score": e.score,
                "is_na": e.is_na,
                "rationale": e.rationale,
                "submitted_at": e.submitted_at,
                "updated_at": e.updated_at,
                "time_spent_ms": e.time_spent_ms,
            }
        )
    target = OUT / f"naive-{scale}.parquet"
    pd.DataFrame(rows).to_parquet(target)
    return {
        "rows": len(rows),
        "mb": round(target.stat().st_size / 2**20, 1),
        "scale_by": total / max(len(rows), 1),
    }


def main(scale: str) -> str:
    data = ensure_dataset(scale)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    fast_run = run_child("bench.export_parquet", "fast", scale)
    floor_run = run_floor("bench.export_parquet", scale)
    naive_run = run_child("bench.export_parquet", "naive", scale)
    scale_baseline(naive_run)
    print(f"data: {data}\nfast: {fast_run}\nfloor: {floor_run}\nnaive: {naive_run}", flush=True)
    return result_line("export-parquet", fast_run, naive_run, floor_run)
