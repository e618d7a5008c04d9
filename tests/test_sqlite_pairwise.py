"""The side-by-side kind on the embedded SQLite default: pages, aggregation, rankings, export.

The suite runs on PostgreSQL, so the probe runs in a process of its own under
config.settings.local with a fresh SQLite file (see tests/sqlite_pairwise_probe.py). It once
caught the rankings page using PostgreSQL's DISTINCT ON.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from demo.demo_pairs import DEMO_PAIRS
from tests.sqlite_probe import run_sqlite_probe


@pytest.mark.slow  # a process of its own seeding the demo on SQLite: not in --quick
def test_the_side_by_side_demo_runs_end_to_end_on_sqlite(tmp_path: Path) -> None:
    report, stderr = run_sqlite_probe(["-m", "tests.sqlite_pairwise_probe"], tmp_path)
    statuses = report["statuses"]
    n = 3 * len(DEMO_PAIRS)
    assert statuses.pop("compare page 200") == n, statuses
    assert statuses.pop("save 302") == n, statuses
    assert all(key.endswith(" 200") for key in statuses), (statuses, stderr[-3000:])
    assert len(statuses) == 6
    # The demo's pairs and the panel's past pairs, labelled by the seed (three labels each).
    pairs = len(DEMO_PAIRS) + report["past_pairs"]
    assert report["past_pairs"] >= 10
    assert report["pairwise"]["labels_submitted"] == 3 * pairs * 11
    assert report["pairwise"]["triples_total"] == pairs * 11
    assert report["rankings_job"] == "done"
    assert report["exported_pairs"] == {"parquet": pairs, "xlsx": pairs}
