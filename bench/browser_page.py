"""The console's data browser at POLLUX scale: python bench/run.py data-browser --scale full.

Setup: the bench dataset (11,500 answers, 172,502 triples, ~476,000 estimates), its aggregation
run once if the database has no verdicts yet (the browser filters on them), one bench admin and
one bench supervisor of the Science panel. Requests go through Django's test client in this
process (URL routing, middleware, access rules, the view, the template), no network.

Measured, each the median of REPEAT requests after one warm-up:
- the supervisor's first page of answers, of triples and of instructions (no filter);
- the admin's first page of answers, every panel;
- a filtered and searched page: the supervisor's triples of his panel, in the dataset, with
  confidence >= 0.5, whose answer or instruction has each of three words taken from one bench
  answer (the final line's figure; the bench's texts draw on 80 words, so such a search
  matches two answers in three: the page query must walk the newest rows, not join them all);
- the same searched page of answers with a complexity filter.

Baseline (same run, same data, same rows): the naive way to write that filtered and searched
page — one ORM queryset with, per word, `Q(answer__text__icontains=w) |
Q(answer__instruction__text__icontains=w)` across the join (no index serves an OR over two
tables, so answer and instruction texts are read), and Django's Paginator (a COUNT(*) of the
whole filtered set, then OFFSET) — the page's ids only, no template. The run checks that it
finds the same rows.
"""

from __future__ import annotations

import random
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.common import line

REPEAT = 15
TARGET_MS = 300.0


def _median_ms(fn: Callable[[], Any], repeat: int = REPEAT) -> float:
    fn()  # warm-up: connection, caches, plans
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _users() -> tuple[Any, Any, Any]:
    from django.contrib.auth import get_user_model

    from panels.models import Panel

    user_model = get_user_model()
    admin, _ = user_model.objects.get_or_create(
        username="bench_browser_admin", defaults={"is_staff": True, "is_superuser": True}
    )
    supervisor, _ = user_model.objects.get_or_create(username="bench_browser_supervisor")
    panel = Panel.objects.get(key="science")
    panel.supervisors.add(supervisor)
    return admin, supervisor, panel


def _ensure_verdicts() -> None:
    from dataset.aggregation import aggregation_run
    from dataset.models import TripleAggregate

    if not TripleAggregate.objects.exists():
        started = time.perf_counter()
        aggregation_run()
        print(f"aggregation (once, setup): {time.perf_counter() - started:.1f} s", flush=True)


def _phrase(panel_id: int) -> str:
    """Three consecutive words from a random answer of the panel: a quote a supervisor types."""
    from material.models import Answer
    from work.models import Triple

    answer_ids = list(
        Triple.objects.filter(panel_id=panel_id).values_list("answer_id", flat=True)[:2000]
    )
    rng = random.Random(20261126)
    text = Answer.objects.get(pk=rng.choice(answer_ids)).text
    words = text.rstrip(".").split()
    start = rng.randrange(0, max(1, len(words) - 3))
    return " ".join(words[start : start + 3]).lower()


def _naive_page(panel_id: int, q: str) -> list[Any]:
    """The baseline: the same filtered and searched triples, the obvious way."""
    from django.core.paginator import Paginator
    from django.db.models import Q

    from work.models import Triple

    qs = (
        Triple.objects.filter(
            panel_id=panel_id,
            answer__reserved__isnull=True,
            aggregate__isnull=False,
            aggregate__excluded_reason="",
            aggregate__confidence__gte=0.5,
        )
        .filter(
            Q(answer__external_id=q)
            | Q(answer__instruction__external_id=q)
            | Q(
                *[
                    Q(answer__text__icontains=w) | Q(answer__instruction__text__icontains=w)
                    for w in q.split()
                ]
            )
        )
        .select_related("panel", "criterion", "aggregate", "answer")
        .order_by("-id")
    )
    page = Paginator(qs, 50).page(1)
    return [t.pk for t in page.object_list] + [page.paginator.count]


def main(scale: str) -> str:
    from bench.datagen import ensure_dataset

    stats = ensure_dataset(scale, with_estimates=True)
    print(
        f"dataset: {stats.get('answers')} answers, {stats.get('triples')} triples, "
        f"{stats.get('estimates')} estimates",
        flush=True,
    )
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    _ensure_verdicts()
    admin, supervisor, panel = _users()
    with connection.cursor() as cursor:
        # Statistics of the verdicts just written (autovacuum's job in production, which a
        # bench cannot wait for): without them the planner takes 172,000 verdicts for 150.
        cursor.execute("VACUUM ANALYZE dataset_tripleaggregate")
        cursor.execute("ANALYZE material_answer")
        cursor.execute("ANALYZE material_instruction")
    sup, adm = Client(), Client()
    sup.force_login(supervisor)
    adm.force_login(admin)
    url = reverse("console_browser")
    q = _phrase(panel.pk)
    searched = {
        "kind": "triples",
        "panel": panel.pk,
        "status": "in_dataset",
        "conf_min": "0.5",
        "q": q,
    }

    def get(client: Client, params: dict[str, Any]) -> Callable[[], Any]:
        def run() -> Any:
            response = client.get(url, params)
            assert response.status_code == 200, response.status_code
            return response

        return run

    html = get(sup, searched)().content.decode()
    ids = [int(n) for n in re.findall(r'data-triple="(\d+)"', html)]
    naive = _naive_page(panel.pk, q)[:-1]
    print(
        f"search words: {q!r}; rows on the searched page: {len(ids)}; "
        f"the baseline's page has the same rows: {ids == naive}",
        flush=True,
    )
    figures = {
        "supervisor, answers, first page": _median_ms(get(sup, {})),
        "supervisor, triples, first page": _median_ms(get(sup, {"kind": "triples"})),
        "supervisor, instructions, first page": _median_ms(get(sup, {"kind": "instructions"})),
        "admin, answers, first page (every panel)": _median_ms(get(adm, {})),
        "admin, triples, first page (every panel)": _median_ms(get(adm, {"kind": "triples"})),
        "supervisor, answers, searched + complexity": _median_ms(
            get(sup, {"q": q, "complexity": "medium"})
        ),
        "supervisor, triples, searched + filtered": _median_ms(get(sup, searched)),
    }
    baseline = _median_ms(lambda: _naive_page(panel.pk, q), repeat=5)
    for name, ms in figures.items():
        print(f"{name}: {ms:.1f} ms (median of {REPEAT})", flush=True)
    print(f"baseline (naive OR-across-join icontains + Paginator COUNT): {baseline:.1f} ms")
    worst = max(figures.values())
    print(f"slowest page: {worst:.1f} ms; target < {TARGET_MS:.0f} ms: "
          f"{'met' if worst < TARGET_MS else 'NOT met'}")  # fmt: skip
    value = figures["supervisor, triples, searched + filtered"]
    return line("data-browser", value, "ms", baseline, baseline / value)
