"""Every judge-vs-experts statistic on small hand-made cases with exact numbers."""

from __future__ import annotations

import math
import random

import pytest
import scipy.stats

from judging import metrics


def test_mode_is_the_unique_most_frequent_score_and_none_on_a_tie() -> None:
    assert metrics.mode([2, 2, 1]) == 2
    assert metrics.mode([1]) == 1
    assert metrics.mode([0, 2]) is None
    assert metrics.mode([0, 0, 2, 2, 1]) is None
    assert metrics.mode([]) is None


def test_mae_skips_pairs_without_a_reference() -> None:
    assert metrics.mae([(2, 2), (1, 2), (0, None), (2, 0)]) == (1.0, 3)
    assert metrics.mae([(1, None)]) == (None, 0)


def test_ranks_give_ties_their_average_rank() -> None:
    assert metrics.ranks([10, 20, 20, 30]) == [1, 2.5, 2.5, 4]
    assert metrics.ranks([3, 1, 2]) == [3, 1, 2]


def test_spearman_with_ties_matches_the_hand_computation() -> None:
    # ranks y = [1, 2, 3.5, 5, 3.5]: sxy = 8, sxx = 10, syy = 9.5
    rho = metrics.spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7])
    assert rho == pytest.approx(8 / math.sqrt(95), abs=1e-12)
    assert metrics.spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert metrics.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_spearman_is_undefined_for_a_constant_side_or_a_single_pair() -> None:
    assert metrics.spearman([1, 2, 3], [2, 2, 2]) is None
    assert metrics.spearman([1], [1]) is None


def test_kendall_tau_b_matches_the_hand_computation() -> None:
    # One swapped neighbour pair among 4: C = 5, D = 1 of 6 pairs -> (5 - 1) / 6.
    assert metrics.kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    # Ties: x ties pair (1, 2), y ties pair (2, 3); the other 4 pairs concordant:
    # (4 - 0) / sqrt((6 - 1) (6 - 1)) = 0.8.
    assert metrics.kendall_tau_b([1, 2, 2, 3], [1, 2, 3, 3]) == pytest.approx(0.8)
    assert metrics.kendall_tau_b([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert metrics.kendall_tau_b([1, 2, 3], [5, 5, 5]) is None
    assert metrics.kendall_tau_b([1], [1]) is None


def test_kendall_tau_b_agrees_with_scipy_on_random_rankings_with_ties() -> None:
    rnd = random.Random(3)
    for _ in range(20):
        x = [rnd.randint(0, 5) for _ in range(12)]
        y = [rnd.randint(0, 5) for _ in range(12)]
        expected = scipy.stats.kendalltau(x, y, variant="b").statistic
        assert metrics.kendall_tau_b(x, y) == pytest.approx(expected)


def test_spearman_by_pools_every_row_of_a_key() -> None:
    rows = [("a", 0, 0), ("a", 1, 1), ("a", 2, 2), ("b", 2, 0), ("b", 0, 2), ("c", 1, 1)]
    result = metrics.spearman_by(rows)
    assert result["a"] == (pytest.approx(1.0), 3)
    assert result["b"] == (pytest.approx(-1.0), 2)
    assert result["c"] == (None, 1)


def test_verdict_confidence_is_the_share_of_the_modal_score() -> None:
    assert metrics.verdict_confidence([2, 2, 1]) == pytest.approx(2 / 3)
    assert metrics.verdict_confidence([1, 1, 1]) == 1.0
    assert metrics.verdict_confidence([0, 1, 2]) == pytest.approx(1 / 3)
    assert metrics.verdict_confidence([]) is None


def test_substituted_confidence_when_every_draw_gives_the_same_panel() -> None:
    assert metrics.substituted_confidence([1, 1], 1, seed=7) == 1.0
    # Whichever of two agreeing experts the judge replaces, the panel splits 1:1.
    assert metrics.substituted_confidence([2, 2], 0, seed=7) == 0.5


def test_substituted_confidence_averages_100_seeded_draws() -> None:
    # Replacing expert 0 keeps [0, 1, 2] (1/3); replacing expert 1 or 2 gives a 2:1 panel (2/3).
    rng = random.Random(42)
    picks = [rng.randrange(3) for _ in range(100)]
    k = picks.count(0)
    expected = (k * (1 / 3) + (100 - k) * (2 / 3)) / 100
    got = metrics.substituted_confidence([0, 1, 2], 0, seed=42)
    assert got == pytest.approx(expected, abs=1e-12)
    assert 0 < k < 100  # the case really mixes both outcomes
    assert metrics.substituted_confidence([0, 1, 2], 0, seed=42) == got  # reproducible


def test_confusion_counts_expert_mode_rows_against_judge_columns() -> None:
    conf = metrics.confusion([(2, 2), (2, 1), (1, 1), (0, 2), (2, 2)])
    assert conf.labels == [0, 1, 2]
    assert conf.matrix == [[0, 0, 1], [0, 1, 0], [0, 1, 2]]
    assert conf.total == 5
    assert conf.agreement == pytest.approx(0.6)


def test_length_bias_reports_both_sides_per_length_bin() -> None:
    rows = [(10, 2, 2), (20, 2, 1), (30, 1, 1), (40, 0, 0)]
    bias = metrics.length_bias(rows, bins=2)
    assert bias["bins"] == [
        {"from": 10, "to": 20, "n": 2, "judge": 2.0, "expert": 1.5},
        {"from": 30, "to": 40, "n": 2, "judge": 0.5, "expert": 0.5},
    ]
    assert bias["judge_rho"] == pytest.approx(-math.sqrt(0.9))
    assert bias["expert_rho"] == pytest.approx(-math.sqrt(0.9))


def test_self_preference_compares_the_judge_excess_on_its_family_and_others() -> None:
    rows = [(True, 2, 1), (True, 1, 1), (False, 1, 1), (False, 0, 1)]
    assert metrics.self_preference(rows) == {
        "same_gap": 0.5,
        "other_gap": -0.5,
        "delta": 1.0,
        "n_same": 2,
        "n_other": 2,
    }
    assert metrics.self_preference([(False, 1, 1)])["delta"] is None


def test_same_family_matches_the_family_inside_the_model_name() -> None:
    assert metrics.same_family("qwen", "Qwen2.5-7B-Instruct")
    assert not metrics.same_family("giga", "YandexGPT")
    assert not metrics.same_family("", "GigaChat")
