"""The load smoke (CI): a few experts through locust against the private stack that the fault
tests share (tests/conftest.py: `stack`), bounded to seconds.

The full run (200 experts, its figures in docs/benchmarks.md) is `python bench/run.py load`;
POLLUX_FULL_RELIABILITY=1 runs it here instead.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from loadtest.run import run, run_on

FULL = os.environ.get("POLLUX_FULL_RELIABILITY") == "1"
pytestmark = [pytest.mark.load, pytest.mark.timeout(1500 if FULL else 300)]


def test_every_submission_under_load_is_stored_exactly_once(stack: Any) -> None:
    result = run(200, 5, 300) if FULL else run_on(stack, "load", 12, 2, 60)
    print(result)
    assert result["submissions_acknowledged"] == min(
        result["assignments"], result["experts"] * result["per_expert"]
    ), result
    assert result["acknowledged_twice"] == 0
    assert result["stored_exactly_once"], result
    assert result["error_rate"] == 0.0, result
