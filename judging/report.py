"""The judge-vs-experts report of one run: selectors feed rows, metrics compute the numbers."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from judging import metrics
from judging.models import JudgeRun
from judging.selectors import ComparisonRow, comparison_rows
from judging.svg import confusion_svg


def run_report(run: JudgeRun) -> dict[str, Any]:
    rows = comparison_rows(run)
    with_experts = [r for r in rows if r.expert_scores]
    parsed = [r for r in with_experts if r.parse_ok and r.judge is not None]
    return {
        "n_judged": len(rows),
        "n_with_experts": len(with_experts),
        "n_failed_with_experts": len(with_experts) - len(parsed),
        "mae_mode": metrics.mae((r.judge, metrics.mode(r.expert_scores)) for r in parsed),  # type: ignore[misc]
        "mae_mean": metrics.mae((r.judge, metrics.mean(r.expert_scores)) for r in parsed),  # type: ignore[misc]
        "rho_all": metrics.spearman([_j(r) for r in parsed], [_m(r) for r in parsed]),
        "rho_model": _by(parsed, "model"),
        "rho_task": _by(parsed, "task"),
        "rho_criterion": _by(parsed, "criterion"),
        "confidence": _confidence(parsed),
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


def _j(row: ComparisonRow) -> float:
    assert row.judge is not None
    return row.judge


def _m(row: ComparisonRow) -> float:
    value = metrics.mean(row.expert_scores)
    assert value is not None
    return value


def _by(rows: list[ComparisonRow], attr: str) -> list[tuple[Any, float | None, int]]:
    result = metrics.spearman_by((getattr(r, attr), _j(r), _m(r)) for r in rows)
    return [(key, rho, n) for key, (rho, n) in result.items()]


def _confidence(rows: list[ComparisonRow]) -> dict[str, Any]:
    """Experts' own verdict confidence next to the one with the judge standing in for a random
    expert; over triples with two or more expert scores (with one, both are trivially 1)."""
    panels = [r for r in rows if len(r.expert_scores) >= 2]
    own = [metrics.verdict_confidence(r.expert_scores) or 0.0 for r in panels]
    # Seeded by the triple id: the same numbers every time the page is shown.
    substituted = [
        metrics.substituted_confidence(r.expert_scores, _j(r), seed=r.triple_id) or 0.0
        for r in panels
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
