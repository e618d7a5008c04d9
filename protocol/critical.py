"""The POLLUX critical gate: when a score is a critical-violation vote.

A critical criterion (group "critical") is scored on a binary scale whose top (1) means "the
answer violates it". A vote is a non-NA score of a critical criterion equal to the top of its
scale. One vote stops the expert's work on the answer (work.services) and, in the dataset, drops
the answer's non-critical triples (dataset.aggregation, rule 2).

`is_violation` is the rule; `violation_mask` is the same rule over numpy columns for the
aggregation, tested against `is_violation` on tests/data/critical_cases.json.

A leaderboard turns the votes into a gate by one of three rules (a board's setting,
docs/leaderboards.md): `gates` says whether a critical criterion gates its answer, `drops` what
a gated answer then does to the means.

- `pollux` (the default): one vote gates the answer and the answer leaves the means, as the
  dataset drops it (rule 2): the board's means are the paper's (Tables 1, 9, 10).
- `any`: one vote gates the answer and it scores 0 on every other criterion.
- `majority`: the answer is gated when more than half of a critical criterion's scored votes
  (NA is no vote) are violations, and it then scores 0 on every other criterion.
"""

from __future__ import annotations

import numpy as np

GATE_POLLUX = "pollux"
GATE_ANY = "any"
GATE_MAJORITY = "majority"
GATE_RULES = (GATE_POLLUX, GATE_ANY, GATE_MAJORITY)
DEFAULT_GATE_RULE = GATE_POLLUX


def is_violation(*, critical: bool, is_na: bool, score: float | None, top: float) -> bool:
    """Is this score a critical-violation vote? (`top`: the top of the criterion's scale.)"""
    return critical and not is_na and score is not None and score == top


def violation_mask(
    critical: np.ndarray, is_na: np.ndarray, score: np.ndarray, top: np.ndarray
) -> np.ndarray:
    """`is_violation` per row of numpy columns (a missing score is NaN, which equals nothing)."""
    score = np.asarray(score, dtype=float)
    return (
        np.asarray(critical, dtype=bool)
        & ~np.asarray(is_na, dtype=bool)
        & ~np.isnan(score)
        & (score == np.asarray(top, dtype=float))
    )


def violation_share(mean: float, *, low: float, top: float) -> float:
    """The share of a critical triple's scored votes that are violations, from their mean: on a
    binary scale (`low`, `top`: the violation) the mean is low + share × (top − low)."""
    if top == low:
        return 1.0 if mean == top else 0.0
    return min(1.0, max(0.0, (mean - low) / (top - low)))


def gates(share: float, rule: str) -> bool:
    """Does a critical criterion whose scored votes are `share` violations gate its answer?"""
    if rule not in GATE_RULES:
        raise ValueError(f"gate rule must be one of {', '.join(GATE_RULES)}")
    if rule == GATE_MAJORITY:
        return share > 0.5
    return share > 0.0


def drops(rule: str) -> bool:
    """Does a gated answer leave the means (POLLUX), rather than score 0 on each criterion?"""
    if rule not in GATE_RULES:
        raise ValueError(f"gate rule must be one of {', '.join(GATE_RULES)}")
    return rule == GATE_POLLUX
