"""Prepare the database when a web container starts: migrate, load the catalogue and panels.

Several web replicas may start at once (`docker compose up --scale web=2`); on PostgreSQL they
take turns through an advisory lock, so migrations never run twice concurrently. Every step is
idempotent, so the replicas that come second find nothing to do.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Run as a script: the project root (this file's parent's parent) must be importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

import django

BOOTSTRAP_LOCK_ID = 0x504F4C58  # "POLX": any constant unique among the app's advisory locks


def main() -> None:
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    steps = [("migrate", "--noinput"), ("load_pollux",), ("load_panels",)]
    if connection.vendor != "postgresql":
        for step in steps:
            call_command(*step)
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [BOOTSTRAP_LOCK_ID])
        try:
            for step in steps:
                call_command(*step)
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [BOOTSTRAP_LOCK_ID])


if __name__ == "__main__":
    main()
