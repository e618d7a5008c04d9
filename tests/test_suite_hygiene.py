"""The test suite's own rules: what counts as slow, per-run isolation, no import-based skips."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis

from tests import conftest
from tests.celery_worker import ROOT, default_queue, judge_queue, purge_run_queues
from tests.ports import free_port


class _Item:
    """Just enough of a pytest item for the collection hook."""

    def __init__(self, *markers: str) -> None:
        self.markers = set(markers)

    def get_closest_marker(self, name: str) -> Any:
        return name if name in self.markers else None

    def add_marker(self, marker: Any) -> None:
        self.markers.add(marker.name)


@pytest.mark.parametrize("marker", ["browser", "celery", "judge", "faults", "load"])
def test_every_minutes_long_kind_of_test_counts_as_slow(marker: str) -> None:
    item, quick = _Item(marker), _Item("django_db")
    conftest.pytest_collection_modifyitems(None, [item, quick])  # type: ignore[arg-type, list-item]
    assert "slow" in item.markers and "slow" not in quick.markers


def test_this_run_has_queue_names_of_its_own(settings: Any) -> None:
    run = settings.TEST_RUN_ID
    assert f"celery-test-{run}" == settings.CELERY_TASK_DEFAULT_QUEUE
    assert settings.CELERY_TASK_ROUTES["judging.*"]["queue"] == f"judge-test-{run}"
    assert os.environ["POLLUX_TEST_RUN"] == run  # what the workers a test starts inherit


_CLAIM = """
import sys, _pytest, os
import config.settings.test as s
print(os.environ["REDIS_URL"], s.REDIS_URL, s.CELERY_TASK_DEFAULT_QUEUE, flush=True)
sys.stdin.read()  # hold the database until the test lets go
"""


def test_two_concurrent_runs_take_different_redis_databases_and_release_them() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "POLLUX_TEST_RUN")}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings.test"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CLAIM],
            cwd=ROOT,
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    try:
        lines = [p.stdout.readline().split() for p in procs]  # type: ignore[union-attr]
    finally:
        for p in procs:
            p.communicate("", timeout=30)
    (env_a, url_a, queue_a), (env_b, url_b, queue_b) = lines
    assert env_a == url_a and env_b == url_b
    assert url_a != url_b and queue_a != queue_b
    assert not url_a.endswith("/0") and not url_b.endswith("/0")  # db 0 holds the locks
    locks = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    for url in (url_a, url_b):
        assert not locks.exists(f"pollux:test-redis-db:{url.rsplit('/', 1)[1]}")  # released


def test_purging_this_runs_queues_leaves_other_runs_keys(settings: Any) -> None:
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    mine, other = default_queue(), "celery-test-someone-else"
    try:
        client.rpush(mine, "m")
        client.rpush(judge_queue(), "j")
        client.sadd(f"_kombu.binding_permanent.{mine}", "b")
        client.rpush(other, "o")
        client.hset("unacked", "t-mine", json.dumps([{}, mine, mine]))
        client.hset("unacked", "t-other", json.dumps([{}, other, other]))
        purge_run_queues()
        assert not client.exists(mine) and not client.exists(judge_queue())
        assert not client.exists(f"_kombu.binding_permanent.{mine}")
        assert client.lrange(other, 0, -1) == [b"o"]
        assert set(client.hkeys("unacked")) >= {b"t-other"}
        assert b"t-mine" not in client.hkeys("unacked")
    finally:
        client.delete(other)
        client.hdel("unacked", "t-other")


def test_no_test_skips_itself_on_a_missing_import() -> None:
    """Everything the tests import is installed by scripts/test (the judge extra included): a
    module that fails to import is a regression to see, not a skip to scroll past."""
    this = Path(__file__).resolve()
    guards = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if path.resolve() != this
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "importorskip" in line or "find_spec" in line
    ]
    assert guards == []


def test_free_ports_are_outside_the_ephemeral_range_and_never_repeat() -> None:
    """A port picked now and bound by a server later must not be one the kernel hands out to
    outgoing connections meanwhile (`bind(0)` picks exactly those)."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50 and max(ports) < low
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports[-1]))  # free indeed
