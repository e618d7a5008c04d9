"""lib.rankcorr against scipy.stats (the reference), ties and infinities included, and by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from lib.rankcorr import average_ranks, kendall_tau_b, spearman


def test_average_ranks_share_ties() -> None:
    assert average_ranks([10, 20, 20, 30]).tolist() == [1, 2.5, 2.5, 4]
    assert average_ranks([3, 1, 2]).tolist() == [3, 1, 2]
    assert average_ranks([-math.inf, 5, -math.inf]).tolist() == [1.5, 3, 1.5]


def test_by_hand() -> None:
    # One discordant pair of six: (5 − 1) / 6; a tie in each side: (4 − 0) / √(5·5).
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert kendall_tau_b([1, 2, 2, 3], [1, 2, 3, 3]) == pytest.approx(0.8)
    # Ranks 1..4 against 1,3,2,4: d² = 0+1+1+0, rho = 1 − 6·2 / (4·15) = 0.8.
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)


def test_undefined_is_none_and_nan_is_refused() -> None:
    for f in (spearman, kendall_tau_b):
        assert f([1], [1]) is None
        assert f([], []) is None
        assert f([1, 2, 3], [5, 5, 5]) is None
        with pytest.raises(ValueError, match="NaN"):
            f([1, math.nan], [1, 2])
        with pytest.raises(ValueError, match="lengths"):
            f([1, 2], [1, 2, 3])


@pytest.mark.parametrize("seed", range(40))
def test_agrees_with_scipy_on_random_rankings_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    # Few distinct values: many ties on both sides.
    x = rng.integers(0, 5, n).astype(float)
    y = rng.integers(0, 5, n).astype(float)
    if seed % 4 == 0:
        x[: n // 3] = -math.inf  # never-winning Bradley–Terry ratings tie at −∞
    if len(set(x)) < 2 or len(set(y)) < 2:
        assert spearman(x, y) is None and kendall_tau_b(x, y) is None
        return
    # scipy ranks −∞ like any other value; replace it by a finite minimum for its arithmetic.
    fx = np.where(np.isinf(x), -1e9, x)
    assert kendall_tau_b(x, y) == pytest.approx(
        scipy.stats.kendalltau(fx, y, variant="b").statistic
    )
    assert spearman(x, y) == pytest.approx(scipy.stats.spearmanr(fx, y).statistic)
