"""A real Celery worker is killed mid-run; another worker and `run_resume` finish the run, and
every triple ends up judged exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.db.models import F

from jobs.models import Job
from judging import services
from judging.models import BatchStatus, JudgeBatch, JudgeEstimate, JudgeRun, RunStatus
from tests.celery_worker import judge_queue, purge_run_queues
from tests.judging.fake_openai import fake_openai

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def worker_env(tmp_path: Path) -> dict[str, str]:
    db = settings.DATABASES["default"]
    url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    purge_run_queues()  # this run's judge queue starts empty; other runs' keys stay
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.judging.worker_settings",
        "DATABASE_URL": url,
        "REDIS_URL": settings.CELERY_BROKER_URL,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "PYTHONPATH": str(ROOT),
    }


@pytest.fixture
def start_worker(worker_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[[str], Any]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(name: str) -> subprocess.Popen[bytes]:
        log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 -- closed with the process
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", judge_queue(),
                "--pool", "solo", "-c", "1", "-n", f"{name}@%h", "-l", "info",
                "--without-gossip", "--without-mingle", "--without-heartbeat",
            ],
            cwd=ROOT, env=worker_env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
    purge_run_queues()


def test_a_killed_worker_loses_nothing_and_resume_judges_each_triple_once(
    material: Any,
    start_worker: Callable[[str], subprocess.Popen[bytes]],
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from config.celery_app import app

    # This process only enqueues; the workers judge.
    monkeypatch.setitem(app.conf, "task_always_eager", False)
    settings.JUDGE_CLAIM_STALE_SECONDS = 3
    m = material(n_answers=4)
    with fake_openai(delay=0.5) as server:
        config = services.config_save(
            name="remote", backend="openai", endpoint=server["url"], batch_size=2
        )
        first = start_worker("first")
        run = services.run_create(config=config, scope={"panel": m.panel.pk})
        assert run.total == 12 and run.batches.count() == 6

        def one_done_one_running() -> bool:
            statuses = list(run.batches.values_list("job__status", flat=True))
            return BatchStatus.DONE in statuses and BatchStatus.RUNNING in statuses

        wait_for(one_done_one_running, 60, "the first worker to be mid-run")
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        connection.close()
        killed = JudgeBatch.objects.get(run=run, job__status=BatchStatus.RUNNING)
        done_before = set(
            JudgeBatch.objects.filter(run=run, job__status=BatchStatus.DONE).values_list(
                "pk", flat=True
            )
        )

        start_worker("second")
        # The second worker drains the queue; the killed batch's task is not redelivered (Redis
        # would only do so after the visibility timeout), so the run cannot finish by itself.
        wait_for(
            lambda: (
                not run.batches.filter(job__status=BatchStatus.QUEUED).exists()
                and run.batches.filter(job__status=BatchStatus.DONE).count() == 5
            ),
            60,
            "the second worker to drain the queue",
        )
        killed.refresh_from_db()
        assert killed.status == BatchStatus.RUNNING
        # The killed worker beats no more: age its last heartbeat past the limit rather than wait
        # for it to age (the worker processes judge staleness by their own clocks).
        Job.objects.filter(pk=killed.job_id).update(
            heartbeat_at=F("heartbeat_at")
            - timedelta(seconds=settings.JUDGE_CLAIM_STALE_SECONDS + 1)
        )

        services.run_resume(run=run)
        wait_for(lambda: JudgeRun.objects.get(pk=run.pk).status == RunStatus.DONE, 60, "the run")

    run.refresh_from_db()
    assert (run.done, run.total, run.parse_failures) == (12, 12, 0)
    per_triple = list(
        JudgeEstimate.objects.filter(run=run).values_list("triple_id", flat=True).order_by()
    )
    assert sorted(per_triple) == sorted(t.pk for t in m.triples())
    killed.refresh_from_db()
    assert (killed.status, killed.attempts) == (BatchStatus.DONE, 2)
    # Finished batches were never judged again.
    assert (
        set(
            JudgeBatch.objects.filter(pk__in=done_before, job__attempts=1).values_list(
                "pk", flat=True
            )
        )
        == done_before
    )
