"""Model scores for a leaderboard from the experts' (or a judge's) verdicts: POLLUX's mean
scores, normalised, with the critical criteria as gates and bootstrap 95 % intervals.

Input: one row per verdict (an aggregated triple: an answer of a model on one criterion) with
the verdict's value normalised to [0, 1] on its rubric (1 the best end; `normalised`), the
answer, the model, the task type (POLLUX's task group) and the criterion; `critical` marks the
rows of critical criteria and `violated` those whose verdict is a violation.

Choices where POLLUX is silent (docs/leaderboards.md):

- **Normalised.** POLLUX reports means on the 0–2 scale; a leaderboard over criteria with
  binary and 0–2 rubrics puts each on [0, 1] first ((value − low) / (high − low), reversed where
  the rubric's best end is the lowest), so a binary criterion weighs as much as a 0–2 one.
- **Critical criteria as gates.** A critical criterion is not averaged in (its scale is "violates
  / does not"); an answer with a violated critical criterion scores 0 on each of its other
  criteria. (The dataset drops those rows — rule 2 of the aggregation — which would raise a
  model's mean by forgetting its worst answers; here they count as failures.)
- **Means.** A model's overall score is the mean over its verdicts (POLLUX's dataset-level
  aggregation, Table 10); per task type and per criterion the mean over those verdicts.
- **Intervals.** The answers are the units resampled (a cluster bootstrap: an answer's verdicts
  move together, as they are not independent), within each model, `rounds` times; the interval
  is the 2.5 and 97.5 percentiles of the resampled overall means.
- **Random baseline.** Each verdict drawn uniformly from its rubric's levels, the critical ones
  too: the expected score of a verdict is the mean of its normalised levels times the
  probability that none of its answer's critical criteria is violated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike


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
    mean: float | None  # None: no scored verdict
    low: float | None
    high: float | None
    verdicts: int
    answers: int
    gated_answers: int  # answers with a violated critical criterion
    by_group: dict[int, float] = field(default_factory=dict)
    by_criterion: dict[int, float] = field(default_factory=dict)


def _gated_answers(answer: np.ndarray, critical: np.ndarray, violated: np.ndarray) -> np.ndarray:
    return np.unique(answer[critical & violated])


def model_scores(
    *,
    model: ArrayLike,
    answer: ArrayLike,
    group: ArrayLike,
    criterion: ArrayLike,
    normalised: ArrayLike,
    critical: ArrayLike,
    violated: ArrayLike,
    rounds: int = 1000,
    seed: int = 0,
) -> list[ModelScore]:
    """Per model (in increasing model id): the gated means and the bootstrap interval."""
    m = np.asarray(model, dtype=np.int64)
    a = np.asarray(answer, dtype=np.int64)
    g = np.asarray(group, dtype=np.int64)
    c = np.asarray(criterion, dtype=np.int64)
    v = np.asarray(normalised, dtype=float)
    crit = np.asarray(critical, dtype=bool)
    bad = np.asarray(violated, dtype=bool)
    gated = np.isin(a, _gated_answers(a, crit, bad))
    scored = ~crit
    value = np.where(gated, 0.0, v)[scored]
    m, a, g, c, gated_rows = m[scored], a[scored], g[scored], c[scored], gated[scored]
    rng = np.random.default_rng(seed)
    results = []
    for model_id in np.unique(np.asarray(model, dtype=np.int64)):
        rows = m == model_id
        answers, inverse = np.unique(a[rows], return_inverse=True)
        if not rows.any():
            results.append(ModelScore(int(model_id), None, None, None, 0, 0, 0))
            continue
        sums = np.bincount(inverse, weights=value[rows], minlength=len(answers))
        counts = np.bincount(inverse, minlength=len(answers)).astype(float)
        mean = float(sums.sum() / counts.sum())
        low = high = mean
        if rounds > 0 and len(answers) > 1:
            draws = rng.integers(0, len(answers), size=(rounds, len(answers)))
            boot = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
            low, high = (float(x) for x in np.percentile(boot, [2.5, 97.5]))
        by_group = _means(g[rows], value[rows])
        by_criterion = _means(c[rows], value[rows])
        gated_count = len(np.unique(a[rows][gated_rows[rows]]))
        results.append(
            ModelScore(
                int(model_id),
                mean,
                low,
                high,
                int(rows.sum()),
                len(answers),
                gated_count,
                by_group,
                by_criterion,
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
) -> tuple[float | None, dict[int, float], dict[int, float]]:
    """The expected overall, per-group and per-criterion score of uniformly random verdicts on
    the same rows: `level_mean` is the mean of the row's normalised levels, `levels` their
    number (a critical row is violated with probability 1 / levels)."""
    a = np.asarray(answer, dtype=np.int64)
    crit = np.asarray(critical, dtype=bool)
    n = np.asarray(levels, dtype=float)
    # P(answer not gated) = product over its critical rows of (1 − 1/levels).
    answers, inverse = np.unique(a, return_inverse=True)
    log_pass = np.zeros(len(answers))
    np.add.at(log_pass, inverse[crit], np.log1p(-1.0 / n[crit]))
    expected = np.asarray(level_mean, dtype=float) * np.exp(log_pass)[inverse]
    scored = ~crit
    if not scored.any():
        return None, {}, {}
    values = expected[scored]
    return (
        float(values.mean()),
        _means(np.asarray(group, dtype=np.int64)[scored], values),
        _means(np.asarray(criterion, dtype=np.int64)[scored], values),
    )
