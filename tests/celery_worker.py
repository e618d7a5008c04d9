"""Start a real Celery worker process against Redis and the pytest database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def default_queue() -> str:
    """This test run's default Celery queue (config/settings/test.py names it per run)."""
    return str(settings.CELERY_TASK_DEFAULT_QUEUE)


def judge_queue() -> str:
    """This test run's queue of the judging tasks."""
    return str(settings.CELERY_TASK_ROUTES["judging.*"]["queue"])


def purge_run_queues() -> None:
    """Drop what this run left in Redis: its queues' messages and bindings, and the unacknowledged
    messages (a killed worker's) routed to them. Keys of other runs, sharing the database or not,
    are left alone: no FLUSHDB."""
    import redis

    queues = {default_queue(), judge_queue()}
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for queue in queues:
        # The queue itself, its priority sub-lists ("<queue>\x06\x16<n>") and its bindings
        # ("_kombu.binding.<queue>", "_kombu.binding_permanent.<queue>").
        keys = [*client.scan_iter(match=f"{queue}*"), *client.scan_iter(f"_kombu.binding*.{queue}")]
        if keys:
            client.delete(*keys)
    for tag, raw in client.hgetall("unacked").items():
        _payload, exchange, routing_key = json.loads(raw)
        if exchange in queues or routing_key in queues:
            client.hdel("unacked", tag)
            client.zrem("unacked_index", tag)


def worker_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    db = connection.settings_dict
    url = f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            # The worker must see the rows the test committed: point it at the test database.
            "DATABASE_URL": f"{url}/{db['NAME']}",
            "REDIS_URL": settings.CELERY_BROKER_URL,
            "CELERY_TASK_ALWAYS_EAGER": "0",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra or {})
    return env


@contextmanager
def celery_worker(
    queues: str | None = None, extra_env: dict[str, str] | None = None, log: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A worker on this run's queues (default: its default queue); they start and end empty."""
    purge_run_queues()
    queues = queues or default_queue()
    out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
            "-c", "1", "-Q", queues, "--without-gossip", "--without-mingle",
            "--without-heartbeat", "-l", "INFO",
        ],
        cwd=ROOT,
        env=worker_env(extra_env),
        stdout=out,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        if log:
            out.close()  # type: ignore[union-attr]
        purge_run_queues()


def wait_for(predicate: object, timeout: float = 60.0, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(interval)
    return False
