"""A slow export, for the tests that kill a Celery worker in the middle of one.

A worker started with ``-I tests.faults.slow_export`` imports this module at start-up: from then
on every estimates chunk of a dataset export reports its progress, then takes a second. A test
that makes the chunks small (the job's ``chunk_rows``) thus has an export that lasts seconds, and
its kill lands mid-way. The export itself stays as in production: only the test's worker process
is slowed, from here.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from dataset import export

SECONDS_PER_CHUNK = 1.0

_estimate_batches = export.estimate_batches


@functools.wraps(_estimate_batches)
def _slow_estimate_batches(
    *args: Any, on_chunk: Callable[[int], None] | None = None, **kwargs: Any
) -> Iterator[pa.RecordBatch]:
    def slow_chunk(rows: int) -> None:
        if on_chunk:
            on_chunk(rows)
        time.sleep(SECONDS_PER_CHUNK)

    return _estimate_batches(*args, on_chunk=slow_chunk, **kwargs)


export.estimate_batches = _slow_estimate_batches
