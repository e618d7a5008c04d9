"""The judge-vs-experts report of one run: selectors feed rows, metrics compute the numbers."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from judging import metrics
from judging.models import JudgeRun
from judging.selectors import NOT_SCORED, ComparisonRow, comparison_rows
from judging.svg import confusion_svg


def run_report(run: JudgeRun) -> dict[str, Any]:
    """Judge-vs-experts numbers on the POLLUX dataset, as the paper computes them.

    Only triples in the dataset count (the aggregation's rules: invalid rationales dropped,
    answers with a critical-violation vote, triples left with too few estimates and all-NA
    triples excluded), with their kept expert scores. An unfiltered summary over every
    submitted expert score is given beside it, labelled as such. Breakdowns by answer model,
    task type (top-level task) and criterion name, the paper's pooling (Appendix D.2).
    """
    rows = comparison_rows(run)
    dataset = [r for r in rows if not r.excluded and r.expert_scores]
    parsed = [r for r in dataset if r.parse_ok and r.judge is not None]
    excluded = Counter(r.excluded for r in rows if r.excluded and r.excluded != NOT_SCORED)
    failures = sum(1 for r in rows if not r.parse_ok)
    return {
        "n_judged": len(rows),
        "n_with_experts": len(dataset),
        "n_failed_with_experts": len(dataset) - len(parsed),
        "parse_failure_rate": failures / len(rows) if rows else None,
        "excluded": sorted(excluded.items()),
        **_summary(parsed, lambda r: r.expert_scores),
        "unfiltered": _summary(
            [r for r in rows if r.all_scores and r.parse_ok and r.judge is not None],
            lambda r: r.all_scores,
        ),
        "by_model": _breakdown(parsed, "model"),
        "by_task": _breakdown(parsed, "task"),
        "by_criterion": _breakdown(parsed, "criterion"),
        "confusions": _confusions(parsed),
        "length": metrics.length_bias([(r.answer_length, _j(r), _m(r)) for r in parsed]),
        "self_preference": (
            metrics.self_preference(
                (metrics.same_family(run.config.model_family, r.model), _j(r), _m(r))
                for r in parsed
            )
            if run.config.model_family
            else None
        ),
    }


Scores = Callable[[ComparisonRow], list[float]]


def _dataset_scores(row: ComparisonRow) -> list[float]:
    return row.expert_scores


def _summary(rows: list[ComparisonRow], scores: Scores = _dataset_scores) -> dict[str, Any]:
    """MAE vs the expert mode (triples without a mode left out, D.2.1) and vs the mean (the
    reference of regression judges), Spearman's rho against the expert mean, and verdict
    confidence with the judge standing in for one expert (D.2.2)."""
    return {
        "n": len(rows),
        "mae_mode": metrics.mae((_j(r), metrics.mode(scores(r))) for r in rows),
        "mae_mean": metrics.mae((_j(r), metrics.mean(scores(r))) for r in rows),
        "rho_all": metrics.spearman([_j(r) for r in rows], [_m(r, scores) for r in rows]),
        "confidence": _confidence(rows, scores),
    }


def _breakdown(rows: list[ComparisonRow], attr: str) -> list[dict[str, Any]]:
    """`_summary` per value of `attr`, sorted by it."""
    groups: dict[str, list[ComparisonRow]] = defaultdict(list)
    for r in rows:
        groups[str(getattr(r, attr))].append(r)
    return [{"key": key, **_summary(groups[key])} for key in sorted(groups)]


def _j(row: ComparisonRow) -> float:
    assert row.judge is not None
    return row.judge


def _m(row: ComparisonRow, scores: Scores = _dataset_scores) -> float:
    value = metrics.mean(scores(row))
    assert value is not None
    return value


def _confidence(rows: list[ComparisonRow], scores: Scores = _dataset_scores) -> dict[str, Any]:
    """Experts' own verdict confidence next to the one with the judge standing in for a random
    expert; over triples with two or more expert scores (with one, both are trivially 1)."""
    panels = [r for r in rows if len(scores(r)) >= 2]
    own = [metrics.verdict_confidence(scores(r)) or 0.0 for r in panels]
    # Seeded by the triple id: the same numbers every time the page is shown.
    substituted = [
        metrics.substituted_confidence(scores(r), _j(r), seed=r.triple_id) or 0.0 for r in panels
    ]
    return {
        "n": len(panels),
        "experts": metrics.mean(own),
        "with_judge": metrics.mean(substituted),
        "draws": metrics.SUBSTITUTION_DRAWS,
    }


def _confusions(rows: list[ComparisonRow]) -> list[dict[str, Any]]:
    pairs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        expert_mode = metrics.mode(r.expert_scores)
        if expert_mode is not None:
            pairs[r.task_group].append((expert_mode, _j(r)))
    out = []
    for group in sorted(pairs):
        conf = metrics.confusion(pairs[group])
        out.append({"group": group, "confusion": conf, "svg": confusion_svg(conf, group)})
    return out
