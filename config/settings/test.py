"""Tests run against the real PostgreSQL and Redis on 127.0.0.1 (see .ci/run)."""

from __future__ import annotations

import atexit
import os
import sys
import uuid

from .base import *  # noqa: F403
from .base import BASE_DIR, DATABASES, MIDDLEWARE, env

# Each test run (CI, a developer, a helper beside them) has its own Redis database and Celery queue
# names, so concurrent runs neither steal each other's tasks nor wipe each other's keys. Both are
# chosen once, in the pytest process, and handed to the Celery workers a test starts through the
# environment (POLLUX_TEST_RUN, REDIS_URL), which those workers inherit.
TEST_RUN_ID = os.environ.setdefault("POLLUX_TEST_RUN", uuid.uuid4().hex[:12])
# Under pytest-xdist each worker is a run of its own (its queues, its Redis database, its storage
# root; pytest-django gives it its own test database): the controller's claim, inherited through
# the environment, is not reused. A Celery worker started by a test inherits the suffixed id.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if XDIST_WORKER and not TEST_RUN_ID.endswith(f"-{XDIST_WORKER}"):
    TEST_RUN_ID = os.environ["POLLUX_TEST_RUN"] = f"{TEST_RUN_ID}-{XDIST_WORKER}"
TEST_REDIS_SERVER = "redis://127.0.0.1:6379"
TEST_REDIS_LOCK = "pollux:test-redis-db:{db}"
# A claim lives this long unless its holder refreshes it: a run killed before it could release its
# database (SIGKILL, a lost machine) frees it within this time. A live run's heartbeat thread
# refreshes it every third of it, however long the run.
TEST_REDIS_LOCK_SECONDS = env.int("POLLUX_TEST_REDIS_LOCK_SECONDS", default=120)
# Refresh while the key holds this run's token; set it again where it is gone (a Redis restarted
# without persistence, as the fault tests do); give up where another run holds it (ours lapsed).
_REFRESH_IF_MINE = (
    "local v = redis.call('get', KEYS[1]) "
    "if v == ARGV[1] then return redis.call('expire', KEYS[1], ARGV[2]) end "
    "if not v then redis.call('set', KEYS[1], ARGV[1], 'EX', ARGV[2]) return 1 end return 0"
)


def claim_redis_db(server: str, token: str, dbs: range = range(1, 16)) -> int | None:
    """Take the first Redis database of `dbs` that no running test run holds: a key per database
    in db 0, SET NX with an expiry that a daemon thread keeps refreshing while this process lives.
    None when all are taken or Redis is not there."""
    import redis

    try:
        client = redis.Redis.from_url(f"{server}/0", socket_connect_timeout=2)
        for db in dbs:
            key = TEST_REDIS_LOCK.format(db=db)
            if client.set(key, token, nx=True, ex=TEST_REDIS_LOCK_SECONDS):
                _keep_alive(client, key, token)
                return db
    except redis.RedisError:
        return None
    return None


_RELEASED: set[str] = set()


def _keep_alive(client: object, key: str, token: str) -> None:
    import threading
    import time

    import redis

    refresh = client.register_script(_REFRESH_IF_MINE)  # type: ignore[attr-defined]

    def beat() -> None:
        while True:
            time.sleep(TEST_REDIS_LOCK_SECONDS / 3)
            if key in _RELEASED:
                return
            try:
                if not refresh(keys=[key], args=[token, TEST_REDIS_LOCK_SECONDS]):
                    return  # lapsed and retaken by another run: no longer ours to keep
            except redis.RedisError:
                continue  # a Redis restart mid-run (the fault tests): try again next beat

    threading.Thread(target=beat, name=f"hold {key}", daemon=True).start()


def release_redis_db(server: str, db: int, token: str) -> None:
    """Free the database if this run still holds it (a lock that expired and was retaken stays)."""
    import redis

    try:
        client = redis.Redis.from_url(f"{server}/0", socket_connect_timeout=2)
        key = TEST_REDIS_LOCK.format(db=db)
        _RELEASED.add(key)
        if client.get(key) == token.encode():
            client.delete(key)
    except redis.RedisError:
        pass


# POLLUX_TEST_REDIS_FOR names the run that claimed REDIS_URL, so an xdist worker can tell the
# controller's claim from a REDIS_URL set by hand.
_claimed_for = os.environ.get("POLLUX_TEST_REDIS_FOR")
_inherited_claim = _claimed_for is not None and _claimed_for != TEST_RUN_ID
if ("REDIS_URL" not in os.environ or _inherited_claim) and "_pytest" in sys.modules:
    # Only a pytest process claims a database (mypy's django plugin and manage.py also import
    # these settings); REDIS_URL set by hand, or inherited by a worker, is used as it is.
    _db = claim_redis_db(TEST_REDIS_SERVER, TEST_RUN_ID)
    if _db is not None:
        os.environ["REDIS_URL"] = f"{TEST_REDIS_SERVER}/{_db}"
        os.environ["POLLUX_TEST_REDIS_FOR"] = TEST_RUN_ID
        atexit.register(release_redis_db, TEST_REDIS_SERVER, _db, TEST_RUN_ID)

DATABASES["default"] = env.db("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/pollux")
DATABASES["default"]["CONN_MAX_AGE"] = 0
# Several test runs (CI, helpers, a developer) can share one server without clobbering each other.
DATABASES["default"]["TEST"] = {"NAME": env("TEST_DB_NAME", default="test_pollux")}
REDIS_URL = env("REDIS_URL", default="redis://127.0.0.1:6379/9")
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=True)
# This run's queues; a test's worker consumes them by name (tests/celery_worker.py: run_queues).
CELERY_TASK_DEFAULT_QUEUE = f"celery-test-{TEST_RUN_ID}"
CELERY_TASK_ROUTES = {
    "judging.*": {"queue": f"judge-test-{TEST_RUN_ID}"},
    "generation.*": {"queue": f"judge-test-{TEST_RUN_ID}"},
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
PRIVATE_STORAGE_ROOT = BASE_DIR / "var" / "test-private" / (XDIST_WORKER or "main")
# Per worker: a demo seed in one worker must not rewrite the files another worker reads.
DEMO_DIR = BASE_DIR / "var" / "test-demo" / (XDIST_WORKER or "main")
AXES_ENABLED = env.bool("AXES_ENABLED", default=False)
# Per-process cache: tests flush the database between cases, a shared cache would outlive it.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Tests read messages in English unless a test asks for another language (Accept-Language).
LANGUAGE_CODE = "en"
# Counts the requests being served, so a browser test's teardown can wait for the live server's
# (tests/inflight.py).
MIDDLEWARE = ["tests.inflight.InFlightMiddleware", *MIDDLEWARE]
