"""The load test in small (CI): a few experts through locust against the real stack.

The full run (200 experts) is `scripts/reliability` (or POLLUX_FULL_RELIABILITY=1 here).
"""

from __future__ import annotations

import os

import pytest

from loadtest.run import run

FULL = os.environ.get("POLLUX_FULL_RELIABILITY") == "1"
pytestmark = [pytest.mark.load, pytest.mark.timeout(1500 if FULL else 420)]


def test_every_submission_under_load_is_stored_exactly_once() -> None:
    result = run(200, 5, 300) if FULL else run(20, 2, 90)
    print(result)
    assert result["submissions_acknowledged"] == min(
        result["assignments"], result["experts"] * result["per_expert"]
    ), result
    assert result["acknowledged_twice"] == 0
    assert result["stored_exactly_once"], result
    assert result["error_rate"] == 0.0, result
