"""The fault tests run on the private stack that tests/conftest.py starts once per worker."""

from __future__ import annotations

import os

import pytest

FULL = os.environ.get("POLLUX_FULL_RELIABILITY") == "1"


def pytest_configure(config: pytest.Config) -> None:
    # The integrator registers these in pyproject; until then they are declared here.
    config.addinivalue_line("markers", "faults: fault injection on the real stack")
    config.addinivalue_line("markers", "load: load test against gunicorn")
