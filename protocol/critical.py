"""The POLLUX critical gate: when a score is a critical-violation vote.

A critical criterion (group "critical") is scored on a binary scale whose top (1) means "the
answer violates it". A vote is a non-NA score of a critical criterion equal to the top of its
scale. One vote stops the expert's work on the answer (work.services) and, in the dataset, drops
the answer's non-critical triples (dataset.aggregation, rule 2).

`is_violation` is the rule; `violation_mask` is the same rule over numpy columns for the
aggregation, tested against `is_violation` on tests/data/critical_cases.json.
"""

from __future__ import annotations

import numpy as np


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
