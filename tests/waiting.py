"""Wait for a condition, not for a time: a test goes on the moment what it waits for is true."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(
    predicate: Callable[[], object], timeout: float, what: str, interval: float = 0.05
) -> None:
    """Poll `predicate` until it is true; past `timeout` seconds, fail naming `what`."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
