"""Seams of judging, filled by the apps above it.

`run_finished`: callables given a judge run's id once the run has finished (done or failed with
what it judged), right after its end is written; an exception is logged, not raised. The
submissions app finishes a participant's submission this way when the run scoring it ends.
"""

from __future__ import annotations

from collections.abc import Callable

run_finished: list[Callable[[int], None]] = []
