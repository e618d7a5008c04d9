"""The test suite's own rules: what counts as slow, per-run isolation, no import-based skips."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from tests import conftest
from tests.celery_worker import ROOT, default_queue, judge_queue, purge_run_queues
from tests.ports import free_port


class _Item:
    """Just enough of a pytest item for the collection hook."""

    def __init__(self, *markers: str, nodeid: str = "tests/test_x.py::test_x") -> None:
        self.markers = set(markers)
        self.nodeid = nodeid
        self.group: str | None = None

    def get_closest_marker(self, name: str) -> Any:
        return name if name in self.markers else None

    def add_marker(self, marker: Any) -> None:
        self.markers.add(marker.name)
        if marker.name == "xdist_group":
            self.group = marker.args[0]


@pytest.mark.parametrize("marker", ["browser", "celery", "judge", "faults", "load"])
def test_every_minutes_long_kind_of_test_counts_as_slow(marker: str) -> None:
    item, quick = _Item(marker), _Item("django_db")
    conftest.pytest_collection_modifyitems(None, [item, quick])  # type: ignore[arg-type, list-item]
    assert "slow" in item.markers and "slow" not in quick.markers


@pytest.mark.parametrize(
    ("marker", "nodeid", "group"),
    [
        ("faults", "tests/faults/test_stack_faults.py::t", "stack"),
        ("load", "tests/load/test_load.py::t", "stack"),
        ("judge", "tests/judging/test_e2e_weights.py::t", "weights"),
        ("django_db", "tests/test_demo.py::t", None),
        ("browser", "tests/browser/test_exam_browser.py::t", None),
        ("django_db", "tests/work/test_scoring.py::t", None),
    ],
)
def test_what_shares_a_stack_weights_or_files_stays_on_one_xdist_worker(
    marker: str, nodeid: str, group: str | None
) -> None:
    item = _Item(marker, nodeid=nodeid)
    conftest.pytest_collection_modifyitems(None, [item])  # type: ignore[arg-type, list-item]
    assert item.group == group


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
    drop = ("REDIS_URL", "POLLUX_TEST_RUN", "POLLUX_TEST_REDIS_FOR", "PYTEST_XDIST_WORKER")
    env = {k: v for k, v in os.environ.items() if k not in drop}
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


def test_a_live_runs_claim_outlasts_its_expiry_and_a_killed_runs_lapses() -> None:
    """A run killed before it could release its database (CI's machine keeps Redis between runs)
    must not hold it for hours: the claim lives on a heartbeat, not a long expiry."""
    drop = ("REDIS_URL", "POLLUX_TEST_RUN", "POLLUX_TEST_REDIS_FOR", "PYTEST_XDIST_WORKER")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env |= {"DJANGO_SETTINGS_MODULE": "config.settings.test", "POLLUX_TEST_REDIS_LOCK_SECONDS": "3"}
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
    locks = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    try:
        live, killed = (p.stdout.readline().split()[0].rsplit("/", 1)[1] for p in procs)  # type: ignore[union-attr]
        procs[1].kill()
        procs[1].wait(timeout=30)
        deadline = time.monotonic() + 8  # over twice the expiry
        while time.monotonic() < deadline and locks.exists(f"pollux:test-redis-db:{killed}"):
            time.sleep(0.2)
        assert not locks.exists(f"pollux:test-redis-db:{killed}")
        assert locks.exists(f"pollux:test-redis-db:{live}")  # refreshed past its 3 s expiry
    finally:
        procs[0].communicate("", timeout=30)
    assert not locks.exists(f"pollux:test-redis-db:{live}")


_WORKER = """
import sys, _pytest, os
import config.settings.test as s
print(s.REDIS_URL, s.CELERY_TASK_DEFAULT_QUEUE, s.PRIVATE_STORAGE_ROOT, flush=True)
sys.stdin.read()
"""


def test_each_xdist_worker_is_a_run_of_its_own() -> None:
    """The controller's claim reaches the xdist workers through the environment; each worker must
    still get its own Redis database, queues and storage root (tasks of one worker's Celery
    worker must not be taken by the other's)."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "POLLUX_TEST_RUN")}
    env |= {"DJANGO_SETTINGS_MODULE": "config.settings.test", "POLLUX_TEST_RUN": "ctl123"}
    env |= {"REDIS_URL": "redis://127.0.0.1:6379/15", "POLLUX_TEST_REDIS_FOR": "ctl123"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER],
            cwd=ROOT,
            env=env | {"PYTEST_XDIST_WORKER": worker},
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for worker in ("gw0", "gw1")
    ]
    try:
        lines = [p.stdout.readline().split() for p in procs]  # type: ignore[union-attr]
    finally:
        for p in procs:
            p.communicate("", timeout=30)
    (url_0, queue_0, root_0), (url_1, queue_1, root_1) = lines
    assert queue_0 == "celery-test-ctl123-gw0" and queue_1 == "celery-test-ctl123-gw1"
    assert len({url_0, url_1, "redis://127.0.0.1:6379/15"}) == 3
    assert root_0.endswith("/gw0") and root_1.endswith("/gw1")


def test_a_redis_url_set_by_hand_is_kept_by_a_worker() -> None:
    env = {k: v for k, v in os.environ.items() if k != "POLLUX_TEST_REDIS_FOR"}
    env |= {"DJANGO_SETTINGS_MODULE": "config.settings.test", "PYTEST_XDIST_WORKER": "gw3"}
    env |= {"REDIS_URL": "redis://127.0.0.1:6379/14"}
    out = subprocess.run(
        [sys.executable, "-c", _WORKER], cwd=ROOT, env=env, text=True, input="",
        capture_output=True, check=True, timeout=60,
    ).stdout.split()  # fmt: skip
    assert out[0] == "redis://127.0.0.1:6379/14" and out[1].endswith("-gw3")


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


@pytest.mark.django_db(transaction=True)
def test_a_flush_puts_the_catalogue_back_and_new_rows_get_fresh_ids() -> None:
    """tests/catalogue_snapshot.py: after a flush that also resets the sequences (the flush
    command's default) the catalogue is back as it was, and a new row of a restored table takes
    an id past the restored ones."""
    from django.core.management import call_command

    from panels.models import Panel
    from taxonomy.models import Criterion, Task, TaskCriterion

    def catalogue() -> tuple[Any, ...]:
        return (
            sorted(Criterion.objects.values_list("pk", "key")),
            Task.objects.count(),
            TaskCriterion.objects.count(),
            sorted(Panel.objects.values_list("pk", "key")),
            sorted(Panel.tasks.through.objects.values_list("panel_id", "task_id")),
        )

    before = catalogue()
    assert before[1] > 100 and len(before[3]) >= 10
    call_command("flush", interactive=False, verbosity=0)
    assert catalogue() == before
    made = Panel.objects.create(number=999, key="hygiene", name_en="H", name_ru="Х")
    assert made.pk > max(pk for pk, _key in before[3])


def test_a_browser_tests_teardown_waits_for_the_requests_the_server_is_still_serving() -> None:
    """tests/inflight.py: wait_until_idle returns only after a request running in another thread
    (the live server's) has finished, and then some quiet time."""
    import threading
    import time

    from tests.inflight import InFlightMiddleware, wait_until_idle

    release = threading.Event()
    started = threading.Event()

    def slow_view(request: Any) -> str:
        started.set()
        release.wait(5)
        return "ok"

    server = threading.Thread(target=InFlightMiddleware(slow_view), args=(None,))
    server.start()
    assert started.wait(5)
    assert wait_until_idle(quiet=0.05, timeout=0.3) is False  # still serving
    finished_at = time.monotonic()
    threading.Timer(0.2, release.set).start()
    assert wait_until_idle(quiet=0.1, timeout=5) is True
    assert time.monotonic() - finished_at >= 0.3  # 0.2 s serving, then 0.1 s quiet
    server.join(5)


def test_each_worker_writes_files_under_its_own_folders() -> None:
    # The demo seed's example file once lay in one var/demo for every worker: a seed in one
    # worker rewrote the file another was uploading (a 422 for unknown instructions).
    from django.conf import settings

    worker = os.environ.get("PYTEST_XDIST_WORKER") or "main"
    assert settings.DEMO_DIR.name == worker
    assert settings.PRIVATE_STORAGE_ROOT.name == worker
