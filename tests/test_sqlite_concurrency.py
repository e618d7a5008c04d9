"""The embedded SQLite default survives one browser's concurrent autosaves and submission.

The suite runs on PostgreSQL, so the probe runs in a process of its own under
config.settings.local with a fresh SQLite file (see tests/sqlite_concurrency_probe.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_concurrent_drafts_and_submit_on_sqlite_give_no_500_and_lose_nothing(
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}",
        "PROBE_ROUNDS": "7",
    }
    env.pop("TEST_DB_NAME", None)
    done = subprocess.run(
        [sys.executable, "-m", "tests.sqlite_concurrency_probe"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["rounds"] == 7
    statuses = report["statuses"]
    assert not [s for s in statuses if s.endswith(" 500")], (statuses, done.stderr[-3000:])
    assert statuses.get("submit 302") == 7, statuses
    assert report["lost"] == []
