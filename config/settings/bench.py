"""Benchmarks: PostgreSQL (a database of their own), Redis, no debug."""

from __future__ import annotations

from .base import *  # noqa: F403
from .base import DATABASES, REDIS_URL, env

DEBUG = False
DATABASES["default"] = env.db(
    "BENCH_DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/pollux_bench"
)
DATABASES["default"]["CONN_MAX_AGE"] = 60
ALLOWED_HOSTS = ["*"]
AXES_ENABLED = False
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env("CACHE_URL", default=REDIS_URL.rsplit("/", 1)[0] + "/8"),
    }
}
