"""Aggregation at POLLUX scale: python bench/run.py aggregation --scale full.

Fast: dataset.aggregation.aggregation_run (COPY out, vectorised rules, agreement report,
COPY of TripleAggregate back in). Floor (bench.floors): the same estimates out by the same COPY,
the same result rows (the fast step's, prepared untimed) back in by the same writer.
Baseline: ORM iteration row by row, the rationale rule called
per estimate, per-triple statistics in Python, bulk_create (no agreement report: less work).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any

from bench.datagen import ensure_dataset
from bench.steps import (
    BASELINE_SUBSAMPLE,
    every_kth_answer,
    result_line,
    run_child,
    run_floor,
    scale_baseline,
)


def fast(scale: str) -> dict[str, Any]:
    from dataset.aggregation import aggregation_run

    report = aggregation_run()
    return {k: report[k] for k in ("estimates_submitted", "triples_total", "triples_in_dataset")}


def floor(scale: str) -> dict[str, Any]:
    from bench.floors import aggregation_floor

    return aggregation_floor()


def naive(scale: str) -> dict[str, Any]:
    from django.db import transaction

    from dataset.models import TripleAggregate
    from protocol.rationale import RationaleRule, rationale_errors
    from work.models import Estimate

    k = BASELINE_SUBSAMPLE.get(scale, 1)
    votes: dict[int, list[tuple[int | None, bool]]] = defaultdict(list)
    answer_of: dict[int, int] = {}
    group_of: dict[int, str] = {}
    violating: set[int] = set()
    submitted = Estimate.objects.filter(status="submitted")
    total = submitted.count()
    mine = every_kth_answer(submitted, k)
    rows = mine.select_related("triple", "rubric", "triple__rubric").iterator(chunk_size=2000)
    rule = RationaleRule.current()
    seen = 0
    for est in rows:
        seen += 1
        rubric = est.rubric or est.triple.rubric
        top = rubric.max_value
        errors = rationale_errors(
            est.rationale, score=est.score, is_na=est.is_na, best_score=rubric.best_value, rule=rule
        )
        if errors:
            continue
        votes[est.triple_id].append((est.score, est.is_na))
        answer_of[est.triple_id] = est.triple.answer_id
        group_of[est.triple_id] = est.triple.group
        if est.triple.group == "critical" and not est.is_na and est.score == top:
            violating.add(est.triple.answer_id)
    objs = []
    for triple_id, vs in votes.items():
        scores = [s for s, na in vs if not na and s is not None]
        counts = Counter(scores).most_common()
        mode = (
            counts[0][0] if counts and (len(counts) == 1 or counts[0][1] > counts[1][1]) else None
        )
        reason = ""
        if answer_of[triple_id] in violating and group_of[triple_id] != "critical":
            reason = "critical_violation"
        elif len(vs) < 2:
            reason = "too_few_estimates"
        objs.append(
            TripleAggregate(
                triple_id=triple_id,
                n_estimates=len(vs),
                mean=statistics.fmean(scores) if scores else None,
                mode=mode,
                confidence=counts[0][1] / len(scores) if scores else None,
                all_na=not scores,
                excluded_reason=reason,
            )
        )
    with transaction.atomic():
        TripleAggregate.objects.all().delete()
        TripleAggregate.objects.bulk_create(objs, batch_size=5000)
    return {"triples_total": len(objs), "rows": seen, "scale_by": total / max(seen, 1)}


def main(scale: str) -> str:
    data = ensure_dataset(scale)
    fast_run = run_child("bench.aggregation", "fast", scale)
    # After the fast step: the floor writes back the rows the fast step wrote.
    floor_run = run_floor("bench.aggregation", scale)
    naive_run = run_child("bench.aggregation", "naive", scale)
    scale_baseline(naive_run)
    print(f"data: {data}\nfast: {fast_run}\nfloor: {floor_run}\nnaive: {naive_run}", flush=True)
    return result_line("aggregation", fast_run, naive_run, floor_run)
