"""The side-by-side kind on the embedded SQLite default: pages, aggregation, rankings, export.

The suite runs on PostgreSQL, so the probe runs in a process of its own under
config.settings.local with a fresh SQLite file (see tests/sqlite_pairwise_probe.py). It once
caught the rankings page using PostgreSQL's DISTINCT ON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from demo.demo_pairs import DEMO_PAIRS

ROOT = Path(__file__).resolve().parent.parent


def test_the_side_by_side_demo_runs_end_to_end_on_sqlite(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}",
    }
    env.pop("TEST_DB_NAME", None)
    done = subprocess.run(
        [sys.executable, "-m", "tests.sqlite_pairwise_probe"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    statuses = report["statuses"]
    n = 3 * len(DEMO_PAIRS)
    assert statuses.pop("compare page 200") == n, statuses
    assert statuses.pop("save 302") == n, statuses
    assert all(key.endswith(" 200") for key in statuses), (statuses, done.stderr[-3000:])
    assert len(statuses) == 6
    assert report["pairwise"]["labels_submitted"] == n * 11
    assert report["pairwise"]["triples_total"] == len(DEMO_PAIRS) * 11
    assert report["rankings_job"] == "done"
    assert report["exported_pairs"] == {"parquet": len(DEMO_PAIRS), "xlsx": len(DEMO_PAIRS)}
