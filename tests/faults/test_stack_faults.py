"""Fault injection on a real stack of our own: gunicorn, PostgreSQL, Redis, a Celery worker.

Each scenario counts what the experts were told was saved (a redirect after the POST) and what
the database holds, and asserts they are the same assignments, with no estimate stored twice
and no revision created by a retried request. Short by default; POLLUX_FULL_RELIABILITY=1 runs
more experts for longer (scripts/reliability).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.faults.conftest import FULL
from tests.faults.experts import Tally, crowd
from tests.faults.stack import Stack
from tests.faults.stackctl import PASSWORD

pytestmark = [pytest.mark.faults, pytest.mark.timeout(900 if FULL else 400)]

N_EXPERTS = 20 if FULL else 4
PER_EXPERT = 8 if FULL else 3
CAP_S = 300.0 if FULL else 120.0


def _wait(predicate: Any, timeout: float, interval: float = 0.3) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


@pytest.mark.parametrize("fault", ["web", "redis", "postgres"])
def test_no_score_is_lost_or_doubled_while_a_service_restarts(stack: Stack, fault: str) -> None:
    prefix = f"f{fault}"
    made = stack.ctl("experts", prefix, str(N_EXPERTS), str(PER_EXPERT))
    restart = {
        "web": stack.restart_web,
        "redis": stack.restart_redis,
        "postgres": stack.restart_postgres,
    }[fault]
    tally = Tally()
    experts = threading.Thread(
        target=crowd, args=(stack.base_url, made["usernames"], PASSWORD, PER_EXPERT, CAP_S, tally)
    )
    experts.start()
    # The fault hits once the experts are logged in and their first scores are acknowledged.
    assert _wait(lambda: tally.acknowledged or tally.errors, 60, 0.05), "no expert got going"
    restart()
    experts.join(CAP_S + 60)
    stored = stack.ctl("stored", prefix)
    report = (
        f"{fault}: acknowledged {len(tally.acknowledged)}, stored "
        f"{len(stored['submitted_assignments'])}, retries {tally.retries}, "
        f"errors {tally.errors[:8]}"
    )
    print(report)
    assert not [e for e in tally.errors if "stopped" in e or e.startswith("submit")], report
    assert set(stored["submitted_assignments"]) == tally.acknowledged, report
    if fault == "redis":
        # Sessions live in the database: no expert's request needs Redis, so none fails.
        assert tally.retries == 0, report
    assert len(tally.acknowledged) == min(made["assignments"], N_EXPERTS * PER_EXPERT), report
    assert stored["duplicate_estimates"] == 0
    assert stored["open_estimates_of_submitted"] == 0
    # A retried POST (same submission_key) changed nothing: no revision was written.
    assert stored["revisions"] == 0


def test_a_build_whose_worker_is_killed_completes_once_after_restart(stack: Stack) -> None:
    stack.ctl("experts", "fbuild", "6", "0")  # who the build hands the work to
    # Killed as soon as it runs: the build (triples, then slots in one transaction) takes longer.
    # On a loaded machine each probe of the job (a subprocess) is slow enough for a small build
    # to finish between "running" and the kill; the kill is then tried on a bigger build, so
    # the assertions below always concern a build that was killed while it ran.
    for size in ("4000", "12000") if FULL else ("2500", "10000"):
        job_id = stack.ctl("build-job", size)["job"]
        # Taken by the worker: running, or (a warm worker, a small build) already done.
        assert _wait(lambda j=job_id: stack.ctl("job", str(j))["status"] != "queued", 60, 0.05)
        stack.kill_worker()
        killed = stack.ctl("job", str(job_id))
        stack.start_worker()
        if killed["status"] == "running":
            break
        print(f"build of {size} answers finished before the kill: trying a bigger one")
    # The broker redelivers the unacknowledged task after its visibility timeout; the sweeper
    # (beat, every few minutes in production) re-sends a job whose heartbeat went stale, in case
    # the redelivery is late. Either way one claim runs it.
    _wait(lambda: bool(stack.ctl("requeue-stale", "1")["sent"]), 30, 1.0)
    assert _wait(lambda: stack.ctl("job", str(job_id))["status"] == "done", 240, 1.0), stack.ctl(
        "job", str(job_id)
    )
    done = stack.ctl("job", str(job_id))
    print(f"build: killed while {killed['status']}, finished after {done['attempts']} attempts")
    assert killed["status"] == "running", "the build finished before the kill: make it bigger"
    assert done["attempts"] >= 2
    assert done["over_slots"] == 0
    assert done["assignments"] > 0 and done["estimates"] > 0


def test_an_export_whose_worker_is_killed_publishes_one_complete_file(stack: Stack) -> None:
    made = stack.ctl("export-job")
    job_id = made["job"]
    # Killed once it has written its first rows.
    assert _wait(lambda: stack.ctl("job", str(job_id))["progress_done"] > 0, 60, 0.05)
    stack.kill_worker()
    stack.start_worker()
    # The sweeper (beat, every few minutes in production) re-sends jobs with a stale heartbeat.
    _wait(lambda: bool(stack.ctl("requeue-stale", "1")["sent"]), 30, 1.0)
    assert _wait(lambda: stack.ctl("job", str(job_id))["status"] == "done", 240, 1.0), stack.ctl(
        "job", str(job_id)
    )
    done = stack.ctl("job", str(job_id))
    assert done["file_path"].endswith(".xlsx")
    assert [f for f in done["files"] if f.startswith(f"dataset-{job_id}-")] == [
        done["file_path"].rsplit("/", 1)[-1]
    ], done["files"]
    assert not [f for f in done["files"] if f.endswith(".part")], done["files"]
