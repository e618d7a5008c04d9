"""Excel export at POLLUX scale: python bench/run.py export-xlsx --scale full.

Fast: dataset.export.dataset_export to .xlsx (one snapshot, COPY out, sheet XML built by Arrow
string kernels and streamed into the zip, safe text cells), aggregation included. Baseline:
pandas.DataFrame.to_excel of the same two tables (read back from the Parquet export beforehand,
not timed). Floor (bench.floors): the same estimates and texts out by bare COPYs into Arrow, the
same tables (a Parquet export read back, untimed) written by the same sheet writer.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.datagen import ensure_dataset
from bench.steps import (
    BASELINE_SUBSAMPLE,
    result_line,
    run_child,
    run_floor,
    scale_baseline,
)

OUT = Path(tempfile.gettempdir()) / "pollux-bench-xlsx"


def fast(scale: str) -> dict[str, Any]:
    from dataset.export import ExportOptions, dataset_export

    target = OUT / f"fast-{scale}.xlsx"
    report = dataset_export(target, ExportOptions(fmt="xlsx"))
    return {"rows": report["rows"], "mb": round(target.stat().st_size / 2**20, 1)}


def floor(scale: str) -> dict[str, Any]:
    from bench.floors import export_floor, read_tables
    from dataset.export import ExportOptions, dataset_export

    source = OUT / f"floor-source-{scale}"
    dataset_export(source, ExportOptions(fmt="parquet"))  # the same tables, untimed
    tables = read_tables(source)
    return export_floor("xlsx", tables, OUT / f"floor-{scale}.xlsx")


def naive(scale: str) -> dict[str, Any]:
    import pandas as pd

    from dataset.export import ExportOptions, dataset_export

    k = BASELINE_SUBSAMPLE.get(scale, 1)
    source = OUT / f"source-{scale}"
    dataset_export(source, ExportOptions(fmt="parquet"))
    # At 10x: every k-th row (pandas would also stop at Excel's row limit), time scaled by k.
    tables = {
        name: pd.read_parquet(source / f"{name}.parquet").iloc[::k]
        for name in ("triples", "estimates")
    }
    for frame in tables.values():
        for column in frame.columns:
            if isinstance(frame[column].dtype, pd.CategoricalDtype):
                frame[column] = frame[column].astype(object)
            if isinstance(frame[column].dtype, pd.DatetimeTZDtype):
                frame[column] = frame[column].dt.tz_localize(None)
    started = time.perf_counter()
    target = OUT / f"naive-{scale}.xlsx"
    with pd.ExcelWriter(target) as writer:
        for name, frame in tables.items():
            frame.to_excel(writer, sheet_name=name, index=False)
    return {
        "to_excel_s": time.perf_counter() - started,
        "scale_by": float(k),
        "mb": round(target.stat().st_size / 2**20, 1),
    }


def main(scale: str) -> str:
    data = ensure_dataset(scale)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    fast_run = run_child("bench.export_xlsx", "fast", scale)
    floor_run = run_floor("bench.export_xlsx", scale)
    naive_run = run_child("bench.export_xlsx", "naive", scale, timeout=3600)
    # The baseline's own clock: to_excel only, not the Parquet export that fed it.
    naive_run["seconds"] = naive_run["extra"]["to_excel_s"]
    scale_baseline(naive_run)
    print(f"data: {data}\nfast: {fast_run}\nfloor: {floor_run}\nnaive: {naive_run}", flush=True)
    return result_line("export-xlsx", fast_run, naive_run, floor_run)
