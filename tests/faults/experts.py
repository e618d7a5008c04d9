"""Simulated experts over HTTP: open the next answer, score it, submit; retry on failure.

A retried submission carries the same submission_key, as a browser resubmitting the same form
does: the server must store it once. Every acknowledged submission (302 after the POST, or a 409
that says the batch closed) is recorded by assignment id, to compare with what is stored.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field

import httpx

# One log line per request would drown the report.
logging.getLogger("httpx").setLevel(logging.WARNING)

SCORE_RE = re.compile(r'name="score_(\d+)" value="(\w+)"')
CSRF_RE = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
ASSIGNMENT_RE = re.compile(r"/assignments/(\d+)/")
RATIONALE = "Ответ соответствует критерию, замечаний нет."


@dataclass
class Tally:
    acknowledged: set[int] = field(default_factory=set)
    attempts: int = 0
    retries: int = 0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def form(html: str) -> dict[str, str]:
    values: dict[str, list[str]] = {}
    for triple, value in SCORE_RE.findall(html):
        values.setdefault(triple, []).append(value)
    data = {"csrfmiddlewaretoken": CSRF_RE.findall(html)[0], "submission_key": os.urandom(8).hex()}
    for triple, options in values.items():
        numeric = [int(v) for v in options if v.isdigit()]
        # Critical gates (binary, 1 = violation) get 0; the others their top score.
        data[f"score_{triple}"] = str(0 if numeric == [0, 1] else max(numeric))
        data[f"rationale_{triple}"] = RATIONALE
    return data


def _retrying(call: object, tally: Tally, deadline: float) -> httpx.Response:
    """Call until the server answers something other than a transport error or a 5xx."""
    delay = 0.2
    while True:
        try:
            response = call()  # type: ignore[operator]
            if response.status_code < 500:
                return response
            reason = f"HTTP {response.status_code}"
        except httpx.TransportError as exc:
            reason = type(exc).__name__
        with tally.lock:
            tally.retries += 1
            if len(tally.errors) < 50:
                tally.errors.append(reason)
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up retrying: {reason}")
        time.sleep(delay)
        delay = min(delay * 2, 2.0)


def expert(
    base: str, username: str, password: str, answers: int, tally: Tally, cap_s: float
) -> None:
    deadline = time.monotonic() + cap_s
    with httpx.Client(base_url=base, timeout=30.0) as client:
        page = _retrying(lambda: client.get("/accounts/login/"), tally, deadline)
        token = CSRF_RE.findall(page.text)[0]
        login = _retrying(
            lambda: client.post(
                "/accounts/login/",
                data={"username": username, "password": password, "csrfmiddlewaretoken": token},
            ),
            tally,
            deadline,
        )
        assert login.status_code == 302, f"{username} could not log in"
        done = 0
        while done < answers and time.monotonic() < deadline:
            nxt = _retrying(lambda: client.get("/queue/next/"), tally, deadline)
            location = nxt.headers.get("location", "")
            if "/accounts/login/" in location:
                raise AssertionError(f"{username} lost the session")
            match = ASSIGNMENT_RE.search(location)
            if nxt.status_code != 302 or not match:
                # The queue is empty: say so, the test compares it with the work it made.
                with tally.lock:
                    tally.errors.append(f"{username} queue empty after {done}: {nxt.status_code}")
                return
            page = _retrying(lambda loc=location: client.get(loc), tally, deadline)
            data = form(page.text)
            url = f"/assignments/{match.group(1)}/"
            # Same data, same submission_key on every retry: a double POST must store once.
            response = _retrying(lambda u=url, d=data: client.post(u, data=d), tally, deadline)
            with tally.lock:
                tally.attempts += 1
            if response.status_code == 302:
                with tally.lock:
                    tally.acknowledged.add(int(match.group(1)))
                done += 1
            else:
                with tally.lock:
                    tally.errors.append(f"submit {response.status_code}")
                return


def crowd(
    base: str,
    usernames: list[str],
    password: str,
    answers: int,
    cap_s: float,
    tally: Tally | None = None,
) -> Tally:
    """Every expert scores `answers` answers in a thread of its own. Pass `tally` to watch the
    progress from another thread (a fault injected once the first scores are acknowledged)."""
    tally = tally if tally is not None else Tally()

    def run(username: str) -> None:
        try:
            expert(base, username, password, answers, tally, cap_s)
        except Exception as exc:  # recorded: the test fails on any error it did not expect
            with tally.lock:
                tally.errors.append(f"{username} stopped: {exc!r}")

    threads = [threading.Thread(target=run, args=(u,)) for u in usernames]
    for t in threads:
        t.start()
    for t in threads:
        t.join(cap_s + 30)
    return tally
