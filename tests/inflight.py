"""Requests the test process is serving right now (the live server's threads included).

A browser test ends while requests it caused may still be running in the live server: a draft
autosaved by a timer, a fetch the browser cancelled on navigation (the server still runs it). The
test's flush must not start under them (their row locks against the TRUNCATE are a deadlock, and
a request that reaches the database after the test blocked it fails). The middleware counts them;
`wait_until_idle` waits until none has run for a moment. Installed by config/settings/test.py only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

_idle = threading.Condition()
_active = 0
_last_end = 0.0


class InFlightMiddleware:
    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        global _active, _last_end
        with _idle:
            _active += 1
        try:
            return self.get_response(request)
        finally:
            with _idle:
                _active -= 1
                _last_end = time.monotonic()
                _idle.notify_all()


def wait_until_idle(quiet: float = 0.3, timeout: float = 15.0) -> bool:
    """True once no request has been running for `quiet` seconds (False after `timeout`)."""
    deadline = time.monotonic() + timeout
    with _idle:
        while True:
            now = time.monotonic()
            if _active == 0 and now - _last_end >= quiet:
                return True
            if now >= deadline:
                return False
            _idle.wait(timeout=min(quiet, deadline - now))
