from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # The integrator registers these in pyproject; until then they are declared here.
    config.addinivalue_line("markers", "faults: fault injection on the real stack")
    config.addinivalue_line("markers", "load: load test against gunicorn")
