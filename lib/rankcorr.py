"""Rank correlations of two rankings of the same items: Spearman's rho and Kendall's tau-b.

The one home of both (judging.metrics re-exports them; comparison compares the experts' model
rankings with a judge's). Inputs are scores of the same items in the same order, higher or
lower meaning the same on both sides; equal scores are ties. ±inf is a valid score (a
Bradley–Terry rating of a model that never won is −inf) and ties with itself; NaN is refused.

Undefined values are None, never 0 or NaN: fewer than two items, or a constant side (it has no
ranking to agree with). Meant for rankings of a few dozen models: tau-b is quadratic in memory.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def _scores(values: Sequence[float] | np.ndarray) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError("a ranking is a one-dimensional sequence of scores")
    if np.isnan(array).any():
        raise ValueError("a score is NaN: it has no place in a ranking")
    return array


def _pair(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    a, b = _scores(x), _scores(y)
    if len(a) != len(b):
        raise ValueError(f"rankings of different lengths ({len(a)} and {len(b)})")
    return a, b


def average_ranks(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """1-based ranks in ascending order of score, ties sharing their average rank."""
    array = _scores(values)
    _unique, inverse, counts = np.unique(array, return_inverse=True, return_counts=True)
    # The tied block of the k-th distinct value spans ranks (start + 1) .. (start + count).
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    average = starts + (counts + 1) / 2.0
    return np.asarray(average[inverse.reshape(-1)], dtype=np.float64)


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float | None:
    """Spearman's rho: Pearson's correlation of the average ranks (ties share their rank)."""
    a, b = _pair(x, y)
    if len(a) < 2:
        return None
    ra, rb = average_ranks(a), average_ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    denominator = math.sqrt(float(ra @ ra) * float(rb @ rb))
    if denominator == 0:
        return None
    return float(ra @ rb) / denominator


def kendall_tau_b(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float | None:
    """Kendall's tau-b (Kendall 1945): (C − D) / √((n0 − n1)(n0 − n2)) over the n0 = n(n−1)/2
    pairs, C concordant, D discordant, n1 / n2 the pairs tied in x / in y (a pair tied in both
    counts in neither C nor D)."""
    a, b = _pair(x, y)
    n = len(a)
    if n < 2:
        return None
    # Signs by comparison, not by difference: inf − inf is NaN, inf > inf is simply False.
    sx = np.sign((a[:, None] > a[None, :]).astype(np.int64) - (a[:, None] < a[None, :]))
    sy = np.sign((b[:, None] > b[None, :]).astype(np.int64) - (b[:, None] < b[None, :]))
    upper = np.triu_indices(n, k=1)
    dx, dy = sx[upper], sy[upper]
    product = dx * dy
    concordant = int((product > 0).sum())
    discordant = int((product < 0).sum())
    pairs = n * (n - 1) // 2
    tied_x = int((dx == 0).sum())
    tied_y = int((dy == 0).sum())
    denominator = math.sqrt((pairs - tied_x) * (pairs - tied_y))
    return (concordant - discordant) / denominator if denominator else None
