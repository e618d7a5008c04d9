"""Settings of the Celery worker subprocess started by the resumption test.

Short heartbeat and staleness so a killed worker's claim goes stale in seconds, not minutes.
"""

from __future__ import annotations

from config.settings.test import *  # noqa: F403
from config.settings.test import INSTALLED_APPS

if "judging" not in INSTALLED_APPS:
    INSTALLED_APPS = [*INSTALLED_APPS, "judging"]
JUDGE_HEARTBEAT_SECONDS = 0.5
JUDGE_CLAIM_STALE_SECONDS = 3
