"""The side-by-side kind end to end on the SQLite default (config.settings.local).

Run by tests/test_sqlite_pairwise.py in a process of its own (the suite runs on PostgreSQL):
`python -m tests.sqlite_pairwise_probe` with DATABASE_URL pointing at a fresh SQLite file. It
seeds the demo, has the three annotators of every demo pair save their labels through the page,
runs the aggregation and a rankings job, then opens every side-by-side page an admin, the
supervisor and the demo expert use, and exports the dataset in both formats. It prints one JSON
line: the HTTP status of each page and what the aggregation, rankings and export produced.
"""

from __future__ import annotations

import json
import sys
import tempfile
from io import StringIO
from pathlib import Path


def main() -> int:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client
    from django.urls import reverse

    from comparison import services as rankings
    from dataset.aggregation import aggregation_run
    from dataset.export import ExportOptions, dataset_export
    from demo.demo_data import DEMO_ADMIN, DEMO_EXPERT, DEMO_SUPERVISOR
    from demo.demo_pairs import DEMO_PAIRS, DEMO_PAIRS_PANEL, PAST_PREFIX, pair_external_id
    from material.models import AnswerPair
    from panels.models import Panel
    from taxonomy.services import comparison_criteria
    from work.models import Assignment

    quiet = StringIO()
    call_command("migrate", verbosity=0, stdout=quiet)
    call_command("seed_demo", "--no-judge", stdout=quiet)
    users = get_user_model().objects
    statuses: dict[str, int] = {}

    def client(username: str) -> Client:
        c = Client(raise_request_exception=False, SERVER_NAME="127.0.0.1")
        c.force_login(users.get(username=username))
        return c

    keys = [c.key for c in comparison_criteria()]
    # The pairs of the login expert's queue, each by its three annotators (the panel's past
    # pairs the seed labelled already).
    pairs = Assignment.objects.filter(
        pair__external_id__in=[pair_external_id(p) for p in DEMO_PAIRS]
    ).select_related("expert__user")
    for n, assignment in enumerate(pairs.order_by("pair_id", "pk")):
        c = client(assignment.expert.user.username)
        page = c.get(reverse("assignment", args=[assignment.pk]))
        statuses[f"compare page {page.status_code}"] = (
            statuses.get(f"compare page {page.status_code}", 0) + 1
        )
        label = "a" if n % 3 else "both_bad"
        saved = c.post(
            reverse("compare_submit", args=[assignment.pk]),
            {**{f"label_{k}": label for k in keys}, "time_total": "1000"},
        )
        statuses[f"save {saved.status_code}"] = statuses.get(f"save {saved.status_code}", 0) + 1
    report = aggregation_run()
    job, _queued = rankings.rankings_request(data={"rounds": "50"}, user=None)
    job.refresh_from_db()
    panel = Panel.objects.get(key=DEMO_PAIRS_PANEL)
    pages = {
        "rankings": (DEMO_ADMIN.username, reverse("comparison_rankings")),
        "rankings xlsx": (DEMO_ADMIN.username, reverse("comparison_rankings_xlsx")),
        "console panel": (DEMO_SUPERVISOR.username, reverse("console_panel", args=[panel.pk])),
        "queue": (DEMO_EXPERT, reverse("queue")),
        "pairs import page": (DEMO_ADMIN.username, reverse("material_pairs")),
        "judging": (DEMO_ADMIN.username, reverse("judging_runs")),
    }
    for name, (username, url) in pages.items():
        statuses[f"{name} {client(username).get(url).status_code}"] = 1
    exported = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, name in (("parquet", "d.zip"), ("xlsx", "d.xlsx")):
            result = dataset_export(Path(tmp) / name, ExportOptions(fmt=fmt))
            exported[fmt] = result["rows"]["pairs"]
    print(
        json.dumps(
            {
                "statuses": statuses,
                "pairwise": report.get("pairwise"),
                "rankings_job": job.status,
                "exported_pairs": exported,
                "past_pairs": AnswerPair.objects.filter(
                    external_id__startswith=PAST_PREFIX
                ).count(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
