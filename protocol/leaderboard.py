"""Model scores for a leaderboard from the experts' (or a judge's) verdicts: POLLUX's mean
scores, with the critical criteria as gates (a board's rule) and bootstrap 95 % intervals.

Input: one row per verdict (an aggregated triple: an answer of a model on one criterion) with
the verdict's value normalised to [0, 1] on its rubric (1 the best end; `normalised`), the
answer, the model, the task type (POLLUX's task group) and the criterion; `critical` marks the
rows of critical criteria and `violated` gives, on those rows, the share of their scored votes
that are violations (True/False read as 1/0: a judge's single vote).

The rules (docs/leaderboards.md, with a worked example of each):

- **Scale.** Each verdict is put on [0, 1] of its rubric ((value − low) / (high − low), reversed
  where the rubric's best end is the lowest), so a binary criterion weighs as much as a 0–2 one;
  the pages report a mean × 2 (`reported`), POLLUX's 0–2 scale: on POLLUX's criteria (0/1/2,
  2 the best) that is the mean of the raw verdicts, the number the paper's tables give.
- **Critical criteria as gates.** A critical criterion is not averaged in (its scale is
  "violates / does not"). `protocol.critical.gates` says when it gates its answer and
  `protocol.critical.drops` what then happens, by the board's rule: `pollux` drops the answer's
  verdicts from every mean (the dataset's rule 2; the paper's tables), `any` and `majority`
  count them as 0 (a failure, so that forgetting its worst answers cannot raise a model's mean).
- **Means.** A model's overall score is the mean over its counted verdicts (POLLUX's
  dataset-level aggregation, Table 10); per task type and per criterion the mean over those.
- **Intervals.** The answers whose verdicts count are the units resampled (a cluster bootstrap:
  an answer's verdicts move together, as they are not independent), within each model, `rounds`
  times; the interval is the 2.5 and 97.5 percentiles of the resampled overall means.
- **Random baseline.** Each verdict drawn uniformly from its rubric's levels, the critical ones
  too (one random vote per critical triple, so `any` and `majority` coincide for it): a zeroing
  rule scores a verdict the mean of its normalised levels times the probability that its answer
  is not gated; `pollux` weighs the mean of its levels by that probability (a dropped answer is
  not in the mean).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from protocol.critical import DEFAULT_GATE_RULE, drops, gates

# The scale the pages report a score on: POLLUX's 0–2 (its tables' means).
REPORTED_LOW, REPORTED_HIGH = 0.0, 2.0


def reported(value: float) -> float:
    """A mean on [0, 1] as the pages report it, on POLLUX's 0–2 scale."""
    return REPORTED_LOW + value * (REPORTED_HIGH - REPORTED_LOW)


def normalise(value: float, levels: Sequence[float], *, best_is_lowest: bool = False) -> float:
    """A verdict on [0, 1] of its rubric's range, 1 the best end."""
    low, high = min(levels), max(levels)
    if high == low:
        return 1.0
    x = (value - low) / (high - low)
    return 1.0 - x if best_is_lowest else x


@dataclass
class ModelScore:
    model: int
    mean: float | None  # None: no verdict counts
    low: float | None
    high: float | None
    verdicts: int
    answers: int  # answers with a verdict that counts (a dropped answer does not)
    gated_answers: int  # answers gated by a critical criterion (dropped or scored 0)
    by_group: dict[int, float] = field(default_factory=dict)
    by_criterion: dict[int, float] = field(default_factory=dict)


@dataclass
class Gated:
    """Per row: `value`, what it counts as (0 where its answer is gated and the rule zeroes);
    `counted`, whether it is in the means (not critical, not dropped); `gated`, whether its
    answer is gated."""

    value: np.ndarray
    counted: np.ndarray
    gated: np.ndarray


def gate(
    *, answer: ArrayLike, normalised: ArrayLike, critical: ArrayLike, violated: ArrayLike, rule: str
) -> Gated:
    """The board's gate rule over the rows (protocol.critical.gates and .drops)."""
    a = np.asarray(answer, dtype=np.int64)
    v = np.asarray(normalised, dtype=float)
    crit = np.asarray(critical, dtype=bool)
    share = np.asarray(violated, dtype=float)
    closing = np.fromiter(
        (gates(float(x), rule) for x in share[crit]), dtype=bool, count=int(crit.sum())
    )
    gated = np.isin(a, np.unique(a[crit][closing]))
    if drops(rule):
        return Gated(v, ~crit & ~gated, gated)
    return Gated(np.where(gated, 0.0, v), ~crit, gated)


def model_scores(
    *,
    model: ArrayLike,
    answer: ArrayLike,
    group: ArrayLike,
    criterion: ArrayLike,
    normalised: ArrayLike,
    critical: ArrayLike,
    violated: ArrayLike,
    rule: str = DEFAULT_GATE_RULE,
    rounds: int = 1000,
    seed: int = 0,
) -> list[ModelScore]:
    """Per model (in increasing model id): the gated means and the bootstrap interval."""
    every = np.asarray(model, dtype=np.int64)
    a = np.asarray(answer, dtype=np.int64)
    rows_gated = gate(
        answer=a, normalised=normalised, critical=critical, violated=violated, rule=rule
    )
    crit = np.asarray(critical, dtype=bool)
    # A gated answer counts once per model, whether its verdicts are dropped or zeroed.
    gated_of = {
        int(m): len(np.unique(a[(every == m) & rows_gated.gated & ~crit])) for m in np.unique(every)
    }
    keep = rows_gated.counted
    value = rows_gated.value[keep]
    m, a = every[keep], a[keep]
    g = np.asarray(group, dtype=np.int64)[keep]
    c = np.asarray(criterion, dtype=np.int64)[keep]
    rng = np.random.default_rng(seed)
    results = []
    for model_id in np.unique(every):
        rows = m == model_id
        gated_count = gated_of[int(model_id)]
        if not rows.any():
            results.append(ModelScore(int(model_id), None, None, None, 0, 0, gated_count))
            continue
        answers, inverse = np.unique(a[rows], return_inverse=True)
        sums = np.bincount(inverse, weights=value[rows], minlength=len(answers))
        counts = np.bincount(inverse, minlength=len(answers)).astype(float)
        mean = float(sums.sum() / counts.sum())
        low = high = mean
        if rounds > 0 and len(answers) > 1:
            draws = rng.integers(0, len(answers), size=(rounds, len(answers)))
            boot = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
            low, high = (float(x) for x in np.percentile(boot, [2.5, 97.5]))
        results.append(
            ModelScore(
                int(model_id),
                mean,
                low,
                high,
                int(rows.sum()),
                len(answers),
                gated_count,
                _means(g[rows], value[rows]),
                _means(c[rows], value[rows]),
            )
        )
    return results


def _means(keys: np.ndarray, values: np.ndarray) -> dict[int, float]:
    uniq, inverse = np.unique(keys, return_inverse=True)
    sums = np.bincount(inverse, weights=values, minlength=len(uniq))
    counts = np.bincount(inverse, minlength=len(uniq))
    return {int(k): float(s / n) for k, s, n in zip(uniq, sums, counts, strict=True)}


def random_baseline(
    *,
    answer: ArrayLike,
    group: ArrayLike,
    criterion: ArrayLike,
    level_mean: ArrayLike,
    critical: ArrayLike,
    levels: ArrayLike,
    rule: str = DEFAULT_GATE_RULE,
) -> tuple[float | None, dict[int, float], dict[int, float]]:
    """The expected overall, per-group and per-criterion score of uniformly random verdicts on
    the same rows: `level_mean` is the mean of the row's normalised levels, `levels` their
    number (a critical row is one random vote, a violation with probability 1 / levels)."""
    a = np.asarray(answer, dtype=np.int64)
    crit = np.asarray(critical, dtype=bool)
    n = np.asarray(levels, dtype=float)
    # P(answer not gated) = product over its critical rows of (1 − 1/levels).
    answers, inverse = np.unique(a, return_inverse=True)
    log_pass = np.zeros(len(answers))
    np.add.at(log_pass, inverse[crit], np.log1p(-1.0 / n[crit]))
    passing = np.exp(log_pass)[inverse]
    means = np.asarray(level_mean, dtype=float)
    scored = ~crit
    if not scored.any():
        return None, {}, {}
    if drops(rule):
        # A dropped answer is not in the mean: each row weighs as the chance that it stays.
        values, weights = means[scored], passing[scored]
    else:
        values, weights = (means * passing)[scored], np.ones(int(scored.sum()))
    if weights.sum() == 0:
        return None, {}, {}
    groups = np.asarray(group, dtype=np.int64)[scored]
    crits = np.asarray(criterion, dtype=np.int64)[scored]
    return (
        float((values * weights).sum() / weights.sum()),
        _weighted(groups, values, weights),
        _weighted(crits, values, weights),
    )


def _weighted(keys: np.ndarray, values: np.ndarray, weights: np.ndarray) -> dict[int, float]:
    uniq, inverse = np.unique(keys, return_inverse=True)
    sums = np.bincount(inverse, weights=values * weights, minlength=len(uniq))
    total = np.bincount(inverse, weights=weights, minlength=len(uniq))
    return {int(k): float(s / w) for k, s, w in zip(uniq, sums, total, strict=True) if w > 0}
