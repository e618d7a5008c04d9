"""The fault stack: started once per module, torn down at the end (see stack.py)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.stack import Stack

FULL = os.environ.get("POLLUX_FULL_RELIABILITY") == "1"


def pytest_configure(config: pytest.Config) -> None:
    # The integrator registers these in pyproject; until then they are declared here.
    config.addinivalue_line("markers", "faults: fault injection on the real stack")
    config.addinivalue_line("markers", "load: load test against gunicorn")


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with tempfile.TemporaryDirectory(prefix="pollux-faults-") as tmp:
        s = Stack(Path(tmp))
        try:
            s.start_postgres()
            s.start_redis()
            s.create_database()
            s.start_web()
            s.start_worker()
            yield s
        finally:
            s.stop()
