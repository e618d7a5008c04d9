"""Concurrent autosaves and submissions against the SQLite default (config.settings.local).

Run by tests/test_sqlite_concurrency.py in a process of its own (the test suite itself runs on
PostgreSQL): `python -m tests.sqlite_concurrency_probe` with DATABASE_URL pointing at a fresh
SQLite file. It builds the demo, then, for several answers of one expert, fires the autosaves
of every criterion and the submission of the whole form at the same moment from threads that
share one browser session, as a fast Ctrl+Enter during autosave does. It prints one JSON line:
the HTTP statuses seen and every submitted rationale that did not end up in the database.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import uuid
from collections import Counter
from io import StringIO

ROUNDS = int(os.environ.get("PROBE_ROUNDS", "7"))
DRAFTS_PER_CRITERION = int(os.environ.get("PROBE_DRAFTS", "2"))


def main() -> int:
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client
    from django.urls import reverse

    from demo.demo_data import DEMO_EXPERT
    from work.models import Assignment, AssignmentStatus, Estimate

    quiet = StringIO()
    call_command("migrate", verbosity=0, stdout=quiet)
    call_command("load_pollux", stdout=quiet)
    call_command("seed_demo", "--no-judge", stdout=quiet)

    from django.contrib.auth import get_user_model

    browser = Client(SERVER_NAME="127.0.0.1")
    browser.force_login(get_user_model().objects.get(username=DEMO_EXPERT))
    cookies = browser.cookies

    def tab() -> Client:
        # Every request of one browser carries the same session cookie.
        client = Client(raise_request_exception=False, SERVER_NAME="127.0.0.1")
        client.cookies = cookies
        return client

    statuses: Counter[str] = Counter()
    lost: list[str] = []
    lock = threading.Lock()
    work = list(
        Assignment.objects.filter(
            expert__user__username=DEMO_EXPERT, kind="work", status=AssignmentStatus.ASSIGNED
        ).order_by("pk")[:ROUNDS]
    )
    for assignment in work:
        tab().get(reverse("assignment", args=[assignment.pk]))  # opens it (in progress)
        estimates = list(
            assignment.estimates.select_related("triple__rubric", "triple__criterion").order_by(
                "triple__position"
            )
        )
        form: dict[str, str] = {"submission_key": str(uuid.uuid4()), "time_total": "5000"}
        for e in estimates:
            values = e.triple.rubric.values if e.triple.rubric else [0, 1]
            # The lowest value of a critical gate is "no violation"; the top elsewhere needs
            # no more than the rationale every score needs.
            score = min(values) if e.triple.group == "critical" else max(values)
            form[f"score_{e.triple_id}"] = str(score)
            form[f"rationale_{e.triple_id}"] = f"Проверка {assignment.pk} критерий {e.triple_id}."
            form[f"time_{e.triple_id}"] = "1000"
        barrier = threading.Barrier(1 + len(estimates) * DRAFTS_PER_CRITERION)

        def post(
            url: str, data: dict[str, str], kind: str, barrier: threading.Barrier = barrier
        ) -> None:
            client = tab()
            barrier.wait()
            response = client.post(url, data)
            with lock:
                statuses[f"{kind} {response.status_code}"] += 1

        threads = [
            threading.Thread(
                target=post, args=(reverse("assignment", args=[assignment.pk]), form, "submit")
            )
        ]
        draft_url = reverse("assignment_draft", args=[assignment.pk])
        for e in estimates:
            tid = e.triple_id
            draft = {
                "triple": str(tid),
                f"score_{tid}": form[f"score_{tid}"],
                f"rationale_{tid}": form[f"rationale_{tid}"],
                f"time_{tid}": "900",
            }
            threads += [
                threading.Thread(target=post, args=(draft_url, draft, "draft"))
                for _ in range(DRAFTS_PER_CRITERION)
            ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assignment.refresh_from_db()
        if assignment.status != AssignmentStatus.SUBMITTED:
            lost.append(f"assignment {assignment.pk} is {assignment.status}")
        for e in Estimate.objects.filter(assignment=assignment):
            if e.rationale != form[f"rationale_{e.triple_id}"]:
                lost.append(f"estimate {e.pk}: {e.rationale!r}")
    print(json.dumps({"rounds": len(work), "statuses": dict(statuses), "lost": lost}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
