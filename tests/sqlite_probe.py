"""Runs a probe in a process of its own on the embedded SQLite default (config.settings.local).

The suite runs on PostgreSQL; what only SQLite does (its locking, its integer range, its SQL
dialect) is probed by a fresh process with a fresh database file. Every file the process writes
(the database, media, private storage, the demo's files) lies under the test's own folder, so
parallel workers and the user's own `var/` never meet.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_sqlite_probe(
    args: list[str], folder: Path, *, env: dict[str, str] | None = None, timeout: int = 300
) -> tuple[dict[str, Any], str]:
    """Runs `python ARGS` under config.settings.local in `folder`; returns the JSON object the
    probe printed last and its stderr. Fails the test with the stderr's tail when it exits
    non-zero."""
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": f"sqlite:///{folder / 'probe.sqlite3'}",
        "MEDIA_ROOT": str(folder / "media"),
        "PRIVATE_STORAGE_ROOT": str(folder / "private"),
        "DEMO_DIR": str(folder / "demo"),
        **(env or {}),
    }
    environment.pop("TEST_DB_NAME", None)
    done = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr
