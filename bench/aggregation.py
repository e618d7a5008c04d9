"""Aggregation at POLLUX scale: python bench/run.py aggregation --scale full.

Fast: dataset.aggregation.aggregation_run (COPY out, vectorised rules, agreement report,
COPY of TripleAggregate back in). Baseline: ORM iteration row by row, the rationale rule called
per estimate, per-triple statistics in Python, bulk_create (no agreement report: less work).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any

from bench.datagen import ensure_dataset, result_line, run_child


def fast(scale: str) -> dict[str, Any]:
    from dataset.aggregation import aggregation_run

    report = aggregation_run()
    return {k: report[k] for k in ("estimates_submitted", "triples_total", "triples_in_dataset")}


def naive(scale: str) -> dict[str, Any]:
    from django.db import transaction

    from dataset.models import TripleAggregate
    from protocol.rationale import RationaleRule, rationale_errors
    from work.models import Estimate

    votes: dict[int, list[tuple[int | None, bool]]] = defaultdict(list)
    answer_of: dict[int, int] = {}
    group_of: dict[int, str] = {}
    violating: set[int] = set()
    rows = (
        Estimate.objects.filter(status="submitted")
        .select_related("triple", "rubric", "triple__rubric")
        .iterator(chunk_size=2000)
    )
    rule = RationaleRule.current()
    for est in rows:
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
    return {"triples_total": len(objs)}


def main(scale: str) -> str:
    data = ensure_dataset(scale)
    fast_run = run_child("bench.aggregation", "fast", scale)
    naive_run = run_child("bench.aggregation", "naive", scale)
    print(f"data: {data}\nfast: {fast_run}\nnaive: {naive_run}", flush=True)
    return result_line("aggregation", fast_run, naive_run)
