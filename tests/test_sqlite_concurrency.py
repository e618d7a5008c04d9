"""The embedded SQLite default survives one browser's concurrent autosaves and submission.

The suite runs on PostgreSQL, so the probe runs in a process of its own under
config.settings.local with a fresh SQLite file (see tests/sqlite_concurrency_probe.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sqlite_probe import run_sqlite_probe


@pytest.mark.slow  # a process of its own seeding the demo on SQLite: not in --quick
def test_concurrent_drafts_and_submit_on_sqlite_give_no_500_and_lose_nothing(
    tmp_path: Path,
) -> None:
    report, stderr = run_sqlite_probe(
        ["-m", "tests.sqlite_concurrency_probe"], tmp_path, env={"PROBE_ROUNDS": "7"}, timeout=240
    )
    assert report["rounds"] == 7
    statuses = report["statuses"]
    assert not [s for s in statuses if s.endswith(" 500")], (statuses, stderr[-3000:])
    assert statuses.get("submit 302") == 7, statuses
    assert report["lost"] == []
