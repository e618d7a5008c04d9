"""The dataset benchmarks' measured steps: each in a fresh process, a baseline measured on a
subsample at 10x and scaled to the whole, and the final line with the floor."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# At 10x the row-by-row baselines would run for hours (and the ORM export's rows would not fit in
# memory): they run on every k-th answer's rows and their time is scaled by the rows' ratio.
BASELINE_SUBSAMPLE = {"10x": 10}


def run_child(module: str, step: str, scale: str, timeout: float = 1800) -> dict[str, Any]:
    """Run `module.step(scale)` in a new Python process; returns its wall time and peak RSS.

    A fresh process per step, so each peak is its own: ru_maxrss (resource.getrusage, the
    child's RUSAGE_SELF at exit, Linux kilobytes) is the whole process's high-water mark,
    Python, Django and the libraries included.
    """
    import json
    import subprocess

    code = (
        "import json, os, resource, sys, time\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings.bench')\n"
        "import django; django.setup()\n"
        f"import {module} as m\n"
        "u0 = resource.getrusage(resource.RUSAGE_SELF)\n"
        "t = time.perf_counter()\n"
        f"extra = m.{step}({scale!r})\n"
        "s = time.perf_counter() - t\n"
        "u1 = resource.getrusage(resource.RUSAGE_SELF)\n"
        "cpu = u1.ru_utime - u0.ru_utime + u1.ru_stime - u0.ru_stime\n"
        "rss = u1.ru_maxrss / 1024\n"
        "print('RESULT ' + json.dumps("
        "{'seconds': s, 'cpu_s': cpu, 'peak_mb': rss, 'load': os.getloadavg(), 'extra': extra}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return dict(json.loads(line[7:]))
    raise RuntimeError(f"{module}.{step} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def run_floor(module: str, scale: str) -> dict[str, Any]:
    """`module.floor(scale)` in a fresh process (bench.floors); its time is the step's own
    clock (`timed_s`: the preparation before it is not the floor)."""
    run = run_child(module, "floor", scale)
    run["seconds"] = run["extra"]["timed_s"]
    return run


def every_kth_answer(estimates: Any, k: int) -> Any:
    """The estimates of every k-th answer (all of them for k = 1): a baseline's subsample."""
    if k == 1:
        return estimates
    from django.db.models import F
    from django.db.models.functions import Mod

    return estimates.annotate(_pick=Mod(F("triple__answer_id"), k)).filter(_pick=0)


def scale_baseline(run: dict[str, Any]) -> None:
    """A baseline measured on a subsample: its time scaled to the whole (said in the output)."""
    factor = float(run["extra"].get("scale_by", 1.0))
    if abs(factor - 1.0) > 1e-9:
        measured = run["seconds"]
        run["seconds"] = measured * factor
        print(
            f"baseline measured on a subsample: {measured:.2f} s x {factor:.2f} "
            f"(rows of the whole / rows measured) = {run['seconds']:.2f} s",
            flush=True,
        )


def result_line(
    name: str, fast: dict[str, Any], naive: dict[str, Any], floor: dict[str, Any] | None = None
) -> str:
    """Print wall/CPU/memory of each step, return `NAME: VALUE s (baseline VALUE s, ratio R)`,
    with `; floor VALUE s, over floor F` when the floor step (bench.floors) ran too."""
    ratio = naive["seconds"] / fast["seconds"] if fast["seconds"] else float("inf")
    steps = [("fast", fast), ("baseline", naive)] + ([("floor", floor)] if floor else [])
    for label, run in steps:
        print(
            f"{name} {label}: wall {run['seconds']:.2f} s, "
            f"CPU {run.get('cpu_s', float('nan')):.2f} s "
            f"(this process; the PostgreSQL backend's CPU is extra), "
            f"peak memory {run['peak_mb']:.0f} MB, load average at end {run.get('load')}",
            flush=True,
        )
    text = f"{name}: {fast['seconds']:.2f} s (baseline {naive['seconds']:.2f} s, ratio {ratio:.1f}"
    if floor:
        over = fast["seconds"] / floor["seconds"]
        text += f"; floor {floor['seconds']:.2f} s, over floor {over:.2f}"
    return text + ")"
