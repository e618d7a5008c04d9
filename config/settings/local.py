"""The embedded default: SQLite, Celery tasks in-process; a newcomer needs nothing else."""

from __future__ import annotations

from .base import *  # noqa: F403
from .base import env

DEBUG = env.bool("DJANGO_DEBUG", default=True)
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=True)
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default="memory://")
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", default="cache+memory://")
POLLUX_DEMO = True
# The demo's closed version is entered with the local test server as the endpoint.
SUBMISSION_ENDPOINT_ALLOW_PRIVATE = env.bool("SUBMISSION_ENDPOINT_ALLOW_PRIVATE", default=True)
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
