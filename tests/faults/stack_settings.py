"""Settings of the fault-injection stack: production-like (PostgreSQL, Redis cache and broker).

Only one thing differs from production on purpose: the broker's visibility timeout is seconds,
not hours, so a task whose worker was SIGKILLed is redelivered within the test's time bounds
(in production the same redelivery happens after CELERY_BROKER_TRANSPORT_OPTIONS' two hours).
"""

from __future__ import annotations

from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
DATABASES = {"default": env.db("DATABASE_URL")}
DATABASES["default"]["CONN_MAX_AGE"] = 60
AXES_ENABLED = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                      "LOCATION": env("CACHE_URL")}}  # fmt: skip
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.int("FAULTS_VISIBILITY_S", default=8)}
PRIVATE_STORAGE_ROOT = env.path("PRIVATE_STORAGE_ROOT")
# A redelivered task may take over a job whose heartbeat stopped a few seconds ago.
JOB_STALE_SECONDS = env.int("FAULTS_JOB_STALE_S", default=5)
