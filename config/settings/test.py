"""Tests run against the real PostgreSQL and Redis on 127.0.0.1 (see .ci/run)."""

from __future__ import annotations

from .base import *  # noqa: F403
from .base import BASE_DIR, DATABASES, env

DATABASES["default"] = env.db("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/pollux")
DATABASES["default"]["CONN_MAX_AGE"] = 0
# Several test runs (CI, helpers, a developer) can share one server without clobbering each other.
DATABASES["default"]["TEST"] = {"NAME": env("TEST_DB_NAME", default="test_pollux")}
REDIS_URL = env("REDIS_URL", default="redis://127.0.0.1:6379/9")
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=True)
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
PRIVATE_STORAGE_ROOT = BASE_DIR / "var" / "test-private"
AXES_ENABLED = env.bool("AXES_ENABLED", default=False)
# Per-process cache: tests flush the database between cases, a shared cache would outlive it.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Tests read messages in English unless a test asks for another language (Accept-Language).
LANGUAGE_CODE = "en"
