"""Helpers shared by the benchmarks: timing, memory, and the final line's format."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from typing import Any


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def line(
    name: str, value: float, unit: str, baseline: float, ratio: float, floor: float | None = None
) -> str:
    """The benchmark's last line; with `floor` (the same rows moved with no logic, same run) it
    ends `; floor VALUE UNIT, over floor F` where F = value / floor."""
    text = f"{name}: {value:.3g} {unit} (baseline {baseline:.3g} {unit}, ratio {ratio:.2f}"
    if floor is not None:
        text += f"; floor {floor:.3g} {unit}, over floor {value / floor:.2f}"
    return text + ")"
