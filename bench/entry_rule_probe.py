"""Same-run cost of the one-entry-per-answer rule (issue #18) on the scoring page's and the
queue's reads, at POLLUX scale (not a bench/run.py benchmark: a probe with medians).

    python bench/datagen.py --scale full
    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/pollux_bench_full \\
    DJANGO_SETTINGS_MODULE=config.settings.bench python bench/entry_rule_probe.py

Prints, for the expert with the most assignments: the scoring rows of 30 of his pages read for
one assignment (the rule off, as the API reads them) and for the entry (the rule on, as the page
reads them); his queue's first page and counts without and with the one-row-per-entry filter.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def _median_ms(fn: Callable[[], Any], n: int) -> float:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    import django

    django.setup()
    from django.db.models import Count

    from panels.models import Expert
    from work import entries, selectors
    from work.models import Assignment

    top = Assignment.objects.values("expert_id").annotate(n=Count("id")).order_by("-n").first()
    assert top is not None, "no bench data: run bench/datagen.py first"
    expert = Expert.objects.get(pk=top["expert_id"])
    print("expert", expert.pk, "assignments", top["n"])
    sample = list(Assignment.objects.filter(expert=expert).select_related("panel")[:30])

    def rows(entry: bool) -> None:
        for a in sample:
            selectors.scoring_rows(a, entry=entry)

    old, new = _median_ms(lambda: rows(False), 5), _median_ms(lambda: rows(True), 5)
    print(f"scoring rows, 30 pages: one assignment {old:.1f} ms, entry {new:.1f} ms")

    def queue(filtered: bool) -> None:
        qs = selectors.expert_assignments(expert).select_related("answer__instruction__task")
        if filtered:
            qs = entries.with_state_class(qs).exclude(entries.not_entry_lead())
        list(qs.order_by("id")[:50])

    def counts(filtered: bool) -> None:
        qs = Assignment.objects.filter(expert=expert)
        if filtered:
            qs = entries.with_state_class(qs).exclude(entries.not_entry_lead())
        qs.aggregate(n=Count("id"))

    for name, read in (("queue page", queue), ("queue counts", counts)):
        plain = _median_ms(lambda read=read: read(False), 30)  # type: ignore[misc]
        grouped = _median_ms(lambda read=read: read(True), 30)  # type: ignore[misc]
        print(f"{name}: plain {plain:.1f} ms, one row per entry {grouped:.1f} ms")


if __name__ == "__main__":
    main()
