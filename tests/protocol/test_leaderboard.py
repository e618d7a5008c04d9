"""protocol.leaderboard against plain-Python computations on hand-made verdicts."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from protocol.critical import (
    DEFAULT_GATE_RULE,
    GATE_ANY,
    GATE_MAJORITY,
    GATE_POLLUX,
    gates,
    violation_share,
)
from protocol.leaderboard import model_scores, normalise, random_baseline, reported

# (model, answer, group, criterion, normalised, critical, violated)
ROWS = [
    (1, 10, 100, 1, 1.0, False, False),
    (1, 10, 100, 2, 0.5, False, False),
    (1, 10, 100, 9, 0.0, True, False),  # critical, not violated
    (1, 11, 200, 1, 0.0, False, False),
    (1, 11, 200, 2, 1.0, False, False),
    (1, 12, 200, 1, 1.0, False, False),  # answer 12 is gated: its criteria count 0
    (1, 12, 200, 9, 1.0, True, True),
    (2, 20, 100, 1, 0.5, False, False),
    (2, 21, 100, 1, 1.0, False, False),
]


def columns(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    names = ("model", "answer", "group", "criterion", "normalised", "critical", "violated")
    return {n: [r[i] for r in rows] for i, n in enumerate(names)}


def plain(rows: list[tuple[Any, ...]], model: int) -> tuple[float, dict[int, float], int]:
    gated = {r[1] for r in rows if r[5] and r[6]}
    kept = [
        (r[2], r[3], 0.0 if r[1] in gated else r[4]) for r in rows if r[0] == model and not r[5]
    ]
    mean = sum(x for *_k, x in kept) / len(kept)
    groups: dict[int, list[float]] = {}
    for grp, _c, x in kept:
        groups.setdefault(grp, []).append(x)
    return mean, {k: sum(v) / len(v) for k, v in groups.items()}, len(kept)


def test_gated_means_per_model_group_and_criterion() -> None:
    # The "any vote" rule: a gated answer's criteria count 0.
    scores = {s.model: s for s in model_scores(**columns(ROWS), rule=GATE_ANY, rounds=0)}
    for model in (1, 2):
        mean, groups, verdicts = plain(ROWS, model)
        assert scores[model].mean == pytest.approx(mean)
        assert scores[model].by_group == pytest.approx(groups)
        assert scores[model].verdicts == verdicts
    # Model 1: (1 + 0.5 + 0 + 1 + 0) / 5; answer 12 gated, the critical rows not averaged.
    assert scores[1].mean == pytest.approx(2.5 / 5)
    assert scores[1].by_criterion == pytest.approx({1: 1 / 3, 2: 0.75})
    assert (scores[1].answers, scores[1].gated_answers) == (3, 1)


def test_the_interval_of_two_opposite_answers_spans_both() -> None:
    rows = [(1, 1, 1, 1, 0.0, False, False), (1, 2, 1, 1, 1.0, False, False)]
    (score,) = model_scores(**columns(rows), rounds=4000, seed=3)
    # The resampled means are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4.
    assert (score.low, score.mean, score.high) == (0.0, 0.5, 1.0)


def test_the_interval_resamples_answers_not_verdicts() -> None:
    # Answer 1 has 3 verdicts of 1, answer 2 one of 0: resampling answers gives the means
    # 1 (both draws answer 1), 3/4 (one of each) and 0 — never anything else.
    rows = [(1, 1, 1, c, 1.0, False, False) for c in (1, 2, 3)] + [(1, 2, 1, 1, 0.0, False, False)]
    (score,) = model_scores(**columns(rows), rounds=2000, seed=1)
    assert score.mean == pytest.approx(0.75)
    assert score.low == 0.0 and score.high == 1.0
    same = [(1, a, 1, 1, 0.5, False, False) for a in range(5)]
    (flat,) = model_scores(**columns(same), rounds=500)
    assert flat.low == flat.high == flat.mean == 0.5


def test_the_interval_covers_the_mean_and_narrows_with_more_answers() -> None:
    rng = np.random.default_rng(7)
    widths = []
    for n in (20, 500):
        rows = [(1, a, 1, 1, float(rng.integers(0, 3)) / 2, False, False) for a in range(n)]
        (score,) = model_scores(**columns(rows), rounds=1000)
        assert score.low is not None and score.high is not None and score.mean is not None
        assert score.low <= score.mean <= score.high
        widths.append(score.high - score.low)
        # The normal approximation of a mean's 95 % interval, computed independently.
        values = np.array([r[4] for r in rows])
        half = 1.96 * values.std(ddof=1) / math.sqrt(n)
        assert score.high - score.low == pytest.approx(2 * half, rel=0.25)
    assert widths[1] < widths[0]


def test_normalise_respects_the_rubrics_best_end() -> None:
    assert normalise(1, [0, 1, 2]) == 0.5
    assert normalise(2, [0, 1, 2]) == 1.0
    assert normalise(1, [0, 1], best_is_lowest=True) == 0.0
    assert normalise(3, [1, 2, 3, 4, 5]) == 0.5


def test_the_random_baseline_is_the_expectation_over_every_random_verdict() -> None:
    # One answer: two 0-2 criteria and one binary critical criterion; another: one binary.
    rows = [  # (answer, group, criterion, levels as normalised values, critical)
        (1, 1, 1, [0.0, 0.5, 1.0], False),
        (1, 1, 2, [0.0, 0.5, 1.0], False),
        (1, 1, 9, [0.0, 1.0], True),
        (2, 2, 3, [0.0, 1.0], False),
    ]
    overall, by_group, _by_criterion = random_baseline(
        answer=[r[0] for r in rows],
        group=[r[1] for r in rows],
        criterion=[r[2] for r in rows],
        level_mean=[sum(r[3]) / len(r[3]) for r in rows],
        critical=[r[4] for r in rows],
        levels=[len(r[3]) for r in rows],
        rule=GATE_ANY,
    )
    # Enumerate every equally likely combination of verdicts (violation = the critical's 2nd
    # level) and average the gated mean of the non-critical rows.
    totals = []
    for combo in itertools.product(*(r[3] for r in rows)):
        gated = {r[0] for r, x in zip(rows, combo, strict=True) if r[4] and x == 1.0}
        kept = [0.0 if r[0] in gated else x for r, x in zip(rows, combo, strict=True) if not r[4]]
        totals.append(sum(kept) / len(kept))
    assert overall == pytest.approx(sum(totals) / len(totals))
    assert by_group == pytest.approx({1: 0.25, 2: 0.5})


# The worked example of docs/leaderboards.md: one model, three answers, each with two 0–2
# criteria (normalised: 2 → 1.0, 1 → 0.5) and a critical criterion voted on by five experts.
# (answer, raw verdicts on the two criteria, violation votes of five)
EXAMPLE = [(1, (2, 1), 1), (2, (1, 1), 0), (3, (2, 2), 3)]


def example_columns() -> dict[str, Any]:
    rows = []
    for answer, verdicts, votes in EXAMPLE:
        rows += [(1, answer, 100, c, v / 2, False, 0.0) for c, v in enumerate(verdicts, 1)]
        rows.append((1, answer, 100, 9, votes / 5, True, votes / 5))
    return columns(rows)


@pytest.mark.parametrize(
    ("rule", "mean", "answers", "gated"),
    [
        # Any vote: answers 1 (1 vote of 5) and 3 (3 of 5) score 0 on both criteria:
        # (0 + 0 + 0.5 + 0.5 + 0 + 0) / 6.
        (GATE_ANY, 1 / 6, 3, 2),
        # Majority: only answer 3 (3 of 5 > half): (1 + 0.5 + 0.5 + 0.5 + 0 + 0) / 6.
        (GATE_MAJORITY, 2.5 / 6, 3, 1),
        # POLLUX: answers 1 and 3 leave the means; answer 2 alone: (0.5 + 0.5) / 2.
        (GATE_POLLUX, 0.5, 1, 2),
    ],
)
def test_each_gate_rule_on_the_worked_example(
    rule: str, mean: float, answers: int, gated: int
) -> None:
    (score,) = model_scores(**example_columns(), rule=rule, rounds=200)
    assert score.mean == pytest.approx(mean)
    assert (score.answers, score.gated_answers) == (answers, gated)
    assert score.verdicts == 2 * answers
    assert score.by_criterion == pytest.approx(
        {
            GATE_ANY: {1: 1 / 6, 2: 1 / 6},
            GATE_MAJORITY: {1: 1.5 / 3, 2: 1 / 3},
            GATE_POLLUX: {1: 0.5, 2: 0.5},
        }[rule]
    )


def test_the_pollux_rule_is_the_default_and_reports_the_papers_0_to_2_means() -> None:
    # POLLUX drops an answer with a violation vote and its tables give raw 0–2 means: answer 2
    # alone, raw verdicts 1 and 1, so 1.0 on the reported scale.
    assert DEFAULT_GATE_RULE == GATE_POLLUX
    (score,) = model_scores(**example_columns(), rounds=0)
    assert score.mean is not None
    assert reported(score.mean) == pytest.approx((1 + 1) / 2)
    raw_kept = [v for _a, verdicts, votes in EXAMPLE if votes == 0 for v in verdicts]
    assert reported(score.mean) == pytest.approx(sum(raw_kept) / len(raw_kept))


def test_a_model_whose_every_answer_is_dropped_has_no_score() -> None:
    rows = [(1, 1, 1, 1, 1.0, False, 0.0), (1, 1, 1, 9, 1.0, True, 1.0)]
    (score,) = model_scores(**columns(rows), rule=GATE_POLLUX, rounds=10)
    assert (score.mean, score.answers, score.gated_answers) == (None, 0, 1)


def test_the_gate_of_a_share_of_votes() -> None:
    # One vote of five gates under "any" and POLLUX, not under "majority"; a tie does not.
    assert gates(0.2, GATE_ANY) and gates(0.2, GATE_POLLUX) and not gates(0.2, GATE_MAJORITY)
    assert gates(0.6, GATE_MAJORITY) and not gates(0.5, GATE_MAJORITY)
    assert not any(gates(0.0, rule) for rule in (GATE_ANY, GATE_MAJORITY, GATE_POLLUX))
    with pytest.raises(ValueError, match="gate rule"):
        gates(0.5, "sometimes")
    # A binary critical scale: the mean of five votes 0, 0, 1, 1, 1 is 0.6.
    assert violation_share(0.6, low=0, top=1) == pytest.approx(0.6)


def test_the_random_baseline_under_pollux_pools_the_kept_verdicts() -> None:
    rows = [  # (answer, group, criterion, levels as normalised values, critical)
        (1, 1, 1, [0.0, 0.5, 1.0], False),
        (1, 1, 9, [0.0, 1.0], True),
        (2, 1, 3, [0.0, 1.0], False),
    ]
    overall, by_group, _by_criterion = random_baseline(
        answer=[r[0] for r in rows],
        group=[r[1] for r in rows],
        criterion=[r[2] for r in rows],
        level_mean=[sum(r[3]) / len(r[3]) for r in rows],
        critical=[r[4] for r in rows],
        levels=[len(r[3]) for r in rows],
        rule=GATE_POLLUX,
    )
    # Over every equally likely combination, the kept verdicts pooled (the long-run mean of a
    # random judge over many answers): a gated answer's verdicts are not in it.
    total = count = 0.0
    for combo in itertools.product(*(r[3] for r in rows)):
        gated = {r[0] for r, x in zip(rows, combo, strict=True) if r[4] and x == 1.0}
        kept = [x for r, x in zip(rows, combo, strict=True) if not r[4] and r[0] not in gated]
        total, count = total + sum(kept), count + len(kept)
    assert overall == pytest.approx(total / count)
    assert by_group == pytest.approx({1: total / count})
