"""lib.ratings against independent computations on hand-made battles.

References: Elo by hand for the first two battles and by a per-battle Python loop written here
from Arena's formulas; Bradley–Terry by the `choix` package (Hunter's MM, its own code) and the
two-model closed form; Glicko-2 by Glickman's worked example and a per-battle Python loop of his
steps 2–8 written here; Borda by counting positions; bootstrap by refitting each drawn resample.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import choix
import numpy as np
import pytest

from lib.ratings import (
    BradleyTerryParams,
    EloParams,
    Glicko2Params,
    bootstrap,
    bootstrap_groups,
    borda,
    bradley_terry,
    elo,
    glicko2,
    glicko2_period,
    ranking,
)

# A 3-model round robin, three rounds: every pair meets three times, each side once or twice as
# A, with wins, losses and ties; every model wins at least once (so Bradley–Terry's maximum
# likelihood exists: Hunter's condition A).
ROUND_ROBIN = [
    (0, 1, 1.0),
    (1, 2, 0.5),
    (2, 0, 0.0),
    (1, 0, 1.0),
    (2, 1, 1.0),
    (0, 2, 0.5),
    (0, 1, 1.0),
    (2, 1, 0.0),
    (2, 0, 1.0),
]
A = [x[0] for x in ROUND_ROBIN]
B = [x[1] for x in ROUND_ROBIN]
S = [x[2] for x in ROUND_ROBIN]


def random_battles(n: int, m: int, seed: int) -> tuple[list[int], list[int], list[float]]:
    rnd = random.Random(seed)
    a, b, s = [], [], []
    for _ in range(n):
        i, j = rnd.sample(range(m), 2)
        a.append(i)
        b.append(j)
        s.append(rnd.choice([0.0, 0.5, 1.0, 1.0]))
    return a, b, s


# ---------------------------------------------------------------- independent references


def elo_reference(a, b, s, m, k=4.0, scale=400.0, base=10.0, initial=1000.0):
    """FastChat's compute_elo, per battle."""
    rating = [initial] * m
    for i, j, sa in zip(a, b, s, strict=True):
        ea = 1 / (1 + base ** ((rating[j] - rating[i]) / scale))
        eb = 1 / (1 + base ** ((rating[i] - rating[j]) / scale))
        rating[i] += k * (sa - ea)
        rating[j] += k * (1 - sa - eb)
    return rating


Q = 173.7178


def glicko_step_reference(mu, phi, sigma, opponents, tau, eps=1e-6):
    """Glickman's steps 3–7 for one player and one period, on the Glicko-2 scale.
    opponents: list of (mu_j, phi_j, s_j)."""

    def g(p):
        return 1 / math.sqrt(1 + 3 * p * p / math.pi**2)

    def e(m_, mj, pj):
        return 1 / (1 + math.exp(-g(pj) * (m_ - mj)))

    v = 1 / sum(g(pj) ** 2 * e(mu, mj, pj) * (1 - e(mu, mj, pj)) for mj, pj, _ in opponents)
    delta = v * sum(g(pj) * (sj - e(mu, mj, pj)) for mj, pj, sj in opponents)
    a = math.log(sigma**2)

    def f(x):
        return (
            math.exp(x)
            * (delta**2 - phi**2 - v - math.exp(x))
            / (2 * (phi**2 + v + math.exp(x)) ** 2)
            - (x - a) / tau**2
        )

    big_a = a
    if delta**2 > phi**2 + v:
        big_b = math.log(delta**2 - phi**2 - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    while abs(big_b - big_a) > eps:
        c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a = f_a / 2
        big_b, f_b = c, f_c
    sigma_new = math.exp(big_a / 2)
    phi_star = math.sqrt(phi**2 + sigma_new**2)
    phi_new = 1 / math.sqrt(1 / phi_star**2 + 1 / v)
    mu_new = mu + phi_new**2 * sum(g(pj) * (sj - e(mu, mj, pj)) for mj, pj, sj in opponents)
    return mu_new, phi_new, sigma_new


def glicko_reference(a, b, s, m, rating=1500.0, rd=350.0, vol=0.06, tau=0.5, eps=1e-6):
    """Every battle one rating period of its two models, both updated from pre-battle values."""
    st = [((rating - 1500) / Q, rd / Q, vol) for _ in range(m)]
    for i, j, sa in zip(a, b, s, strict=True):
        (mi, pi, si), (mj, pj, sj) = st[i], st[j]
        st[i] = glicko_step_reference(mi, pi, si, [(mj, pj, sa)], tau, eps)
        st[j] = glicko_step_reference(mj, pj, sj, [(mi, pi, 1 - sa)], tau, eps)
    return [Q * x[0] + 1500 for x in st], [Q * x[1] for x in st], [x[2] for x in st]


def choix_pairs(a, b, s):
    """choix takes (winner, loser) pairs: a win counts twice, a tie once each way, which scales
    every count by 2 and leaves the likelihood's maximiser and every MM iterate unchanged."""
    pairs = []
    for i, j, sa in zip(a, b, s, strict=True):
        if sa == 1.0:
            pairs += [(i, j), (i, j)]
        elif sa == 0.0:
            pairs += [(j, i), (j, i)]
        else:
            pairs += [(i, j), (j, i)]
    return pairs


def centred_elo_scale(log_e_params):
    x = np.asarray(log_e_params) / math.log(10)
    return 400 * (x - x.mean()) + 1000


# ---------------------------------------------------------------- Elo


def test_elo_first_two_battles_by_hand() -> None:
    # Battle 1: 0 vs 1 at 1000/1000, E = 1/2, A wins: 0 -> 1000 + 4·(1 − 1/2) = 1002, 1 -> 998.
    r = elo(A[:1], B[:1], S[:1], 3)
    assert r.tolist() == pytest.approx([1002.0, 998.0, 1000.0], abs=1e-12)
    # Battle 2: 1 (998) vs 2 (1000), a tie: E_1 = 1 / (1 + 10^(2/400)) = 0.4971218..., so
    # d = 4·(0.5 − 0.4971218) = 0.0115127...: 1 -> 998.0115127, 2 -> 999.9884873.
    e1 = 1 / (1 + 10 ** (2 / 400))
    assert e1 == pytest.approx(0.4971218, abs=1e-7)
    r = elo(A[:2], B[:2], S[:2], 3)
    assert r.tolist() == pytest.approx([1002.0, 998.0115127, 999.9884873], abs=1e-7)
    assert r.sum() == pytest.approx(3000.0)  # Elo moves points, it does not create them


@pytest.mark.parametrize(
    "params", [EloParams(), EloParams(k=32.0, scale=400.0, base=10.0, initial=1500.0)]
)
def test_elo_equals_a_per_battle_loop(params: EloParams) -> None:
    for a, b, s, m in [(A, B, S, 3), (*random_battles(300, 6, seed=1), 6)]:
        got = elo(a, b, s, m, params)
        want = elo_reference(a, b, s, m, params.k, params.scale, params.base, params.initial)
        assert got.tolist() == pytest.approx(want, abs=1e-9)


def test_elo_depends_on_order() -> None:
    assert not np.allclose(elo(A, B, S, 3), elo(A[::-1], B[::-1], S[::-1], 3))


# ---------------------------------------------------------------- Bradley–Terry


def test_bradley_terry_two_models_closed_form() -> None:
    # Two models: the MLE has p0/p1 = W0/W1, here (3 + 0.5)/(1 + 0.5) = 7/3, reached by the
    # first MM step; centred: ±200·log10(7/3) around 1000.
    a, b, s = [0, 0, 1, 0, 1], [1, 1, 0, 1, 0], [1.0, 1.0, 1.0, 0.5, 0.0]
    half = 200 * math.log10(7 / 3)
    assert bradley_terry(a, b, s, 2).tolist() == pytest.approx([1000 + half, 1000 - half])


def test_bradley_terry_fifty_mm_iterations_equal_choix() -> None:
    pairs = choix_pairs(A, B, S)
    # choix.mm_pairwise runs exactly 2 MM updates with tol=inf (its convergence test needs two
    # iterates); chained 25 times from its own output: 50 updates of choix's code.
    params = np.zeros(3)
    for _ in range(25):
        params = choix.mm_pairwise(3, pairs, initial_params=params, max_iter=2, tol=math.inf)
    assert bradley_terry(A, B, S, 3).tolist() == pytest.approx(
        centred_elo_scale(params).tolist(), abs=1e-9
    )


def test_bradley_terry_converges_to_choix_maximum_likelihood() -> None:
    for a, b, s, m in [(A, B, S, 3), (*random_battles(400, 7, seed=2), 7)]:
        mle = choix.mm_pairwise(m, choix_pairs(a, b, s), tol=1e-12, max_iter=100_000)
        got = bradley_terry(a, b, s, m, BradleyTerryParams(iterations=5000))
        assert got.tolist() == pytest.approx(centred_elo_scale(mle).tolist(), abs=1e-6)


def test_bradley_terry_ignores_order_and_reports_the_scale() -> None:
    r = bradley_terry(A, B, S, 3)
    assert r.tolist() == pytest.approx(bradley_terry(A[::-1], B[::-1], S[::-1], 3).tolist())
    assert r.mean() == pytest.approx(1000.0)  # centred: mean log-strength at the anchor
    other = bradley_terry(A, B, S, 3, BradleyTerryParams(scale=1.0, base=math.e, anchor=0.0))
    # Natural-log strengths: the 400/ln(10) factor and the anchor are the only difference.
    assert (other * 400 / math.log(10) + 1000).tolist() == pytest.approx(r.tolist())


def bt_reference(a, b, s, m, iterations=50):
    """Hunter's MM in plain Python loops, fractional outcomes split between the two sides."""
    wins = [[0.0] * m for _ in range(m)]
    for i, j, sa in zip(a, b, s, strict=True):
        wins[i][j] += sa
        wins[j][i] += 1 - sa
    p = [1.0] * m
    for _ in range(iterations):
        p = [
            sum(wins[i])
            / sum((wins[i][j] + wins[j][i]) / (p[i] + p[j]) for j in range(m) if j != i)
            for i in range(m)
        ]
    logs = [math.log10(x) for x in p]
    return [400 * (x - sum(logs) / m) + 1000 for x in logs]


def test_bradley_terry_with_many_distinct_outcomes_equals_loops() -> None:
    # More distinct outcome values than the per-value counting takes: the weighted path.
    a, b, _ = random_battles(200, 5, seed=9)
    s = [round(random.Random(i).random(), 3) for i in range(200)]
    assert len(set(s)) > 8
    assert bradley_terry(a, b, s, 5).tolist() == pytest.approx(bt_reference(a, b, s, 5))
    res = bootstrap(a, b, s, 5, rounds=1, indices=np.arange(200)[None, :])
    assert res.bradley_terry.mean.tolist() == pytest.approx(bt_reference(a, b, s, 5))


def test_bradley_terry_without_a_win_is_minus_infinity() -> None:
    # Model 2 loses both its battles: no finite maximum-likelihood strength. Models 0 and 1
    # beat each other once: equal, centred at the anchor.
    r = bradley_terry([0, 1, 2, 2], [1, 0, 0, 1], [1.0, 1.0, 0.0, 0.0], 3)
    assert r[2] == -math.inf
    assert r[:2].tolist() == pytest.approx([1000.0, 1000.0])
    res = bootstrap([0, 1, 2, 2], [1, 0, 0, 1], [1.0, 1.0, 0.0, 0.0], 3, rounds=30, seed=2)
    assert res.bradley_terry.low[2] == -math.inf
    assert not np.isnan(res.bradley_terry.low).any() and not np.isnan(res.bradley_terry.high).any()


# ---------------------------------------------------------------- Glicko-2


def test_glicko2_glickman_worked_example() -> None:
    # Glickman (2012), "Example of the Glicko-2 system": 1500/200/0.06 against 1400/30 (win),
    # 1550/100 (loss), 1700/300 (loss), tau 0.5 -> r' = 1464.06, RD' = 151.52, sigma' = 0.05999.
    # The paper rounds its intermediate values (mu' = -0.2069); the exact computation gives
    # 1464.0507, hence the 0.02 tolerance on r'.
    r, rd, vol = glicko2_period(1500, 200, 0.06, [1400, 1550, 1700], [30, 100, 300], [1, 0, 0])
    assert r == pytest.approx(1464.06, abs=0.02)
    assert rd == pytest.approx(151.52, abs=0.005)
    assert vol == pytest.approx(0.05999, abs=1e-5)  # 0.059996, printed as 0.05999
    # The same period by the reference written in this file, to full precision.
    mu, phi, sigma = glicko_step_reference(
        0.0,
        200 / Q,
        0.06,
        [((1400 - 1500) / Q, 30 / Q, 1), (50 / Q, 100 / Q, 0), (200 / Q, 300 / Q, 0)],
        0.5,
    )
    assert (r, rd, vol) == pytest.approx((Q * mu + 1500, Q * phi, sigma), abs=1e-9)


def test_glicko2_equals_a_per_battle_loop() -> None:
    cases = [(A, B, S, 3), (*random_battles(300, 5, seed=3), 5)]
    strict = Glicko2Params(rating=1200, rd=200, volatility=0.09, tau=1.2, epsilon=1e-12)
    for a, b, s, m in cases:
        for p, tol in ((Glicko2Params(), 1e-3), (strict, 1e-8)):
            got = glicko2(a, b, s, m, p)
            want = glicko_reference(a, b, s, m, p.rating, p.rd, p.volatility, p.tau, p.epsilon)
            # The Illinois search stops once |B - A| <= epsilon, so sigma' is defined only to
            # about epsilon: numpy's and math's exp differ in the last bit, which can end the
            # search one step earlier on one side, and the difference then travels down the
            # sequence (1e-7 to 1e-4 rating points over 300 battles at epsilon = 1e-6). With
            # epsilon = 1e-12 the search runs to machine precision and the two agree tightly.
            assert got.rating.tolist() == pytest.approx(want[0], abs=tol)
            assert got.rd.tolist() == pytest.approx(want[1], abs=tol)
            assert got.volatility.tolist() == pytest.approx(want[2], abs=tol * 1e-3)


def test_glicko2_volatility_search_widens_its_bracket() -> None:
    # A tiny tau and a surprising result (a 2000-rated favourite with RD 30 loses) makes
    # f(a - tau) < 0, so the search for B must step k past 1; a big surprise with a wide RD
    # takes the Δ² > φ² + v branch. Both against the reference.
    for r0, rd0, tau, opp in [(2000, 30, 0.05, (1200, 30, 0)), (1500, 350, 0.3, (2500, 30, 1))]:
        got = glicko2_period(r0, rd0, 0.06, [opp[0]], [opp[1]], [opp[2]], tau=tau)
        mu, phi, sigma = glicko_step_reference(
            (r0 - 1500) / Q, rd0 / Q, 0.06, [((opp[0] - 1500) / Q, opp[1] / Q, opp[2])], tau
        )
        assert got == pytest.approx((Q * mu + 1500, Q * phi, sigma), abs=1e-9)


# ---------------------------------------------------------------- Borda


def test_borda_gives_m_minus_k_points() -> None:
    rankings = [[0, 1, 2], [1, 0, 2], [0, 2, 1]]
    # By hand: model 0 is 1st, 2nd, 1st -> 2 + 1 + 2 = 5; model 1: 2nd, 1st, 3rd -> 1 + 2 + 0
    # = 3; model 2: 3rd, 3rd, 2nd -> 0 + 0 + 1 = 1.
    assert borda(rankings).tolist() == [5.0, 3.0, 1.0]
    four = [[3, 1, 0, 2], [2, 3, 1, 0]]
    counted = [sum(4 - (order.index(model) + 1) for order in four) for model in range(4)]
    assert borda(four).tolist() == counted
    with pytest.raises(ValueError):
        borda([[0, 1], [0, 0]])


def test_ranking_is_best_first_with_stable_ties() -> None:
    assert ranking([1000.0, 1010.0, 990.0, 1010.0]).tolist() == [1, 3, 0, 2]


# ---------------------------------------------------------------- bootstrap


def test_bootstrap_with_the_identity_resample_is_the_plain_fit() -> None:
    res = bootstrap(A, B, S, 3, rounds=1, indices=np.arange(len(A))[None, :])
    assert res.elo.mean.tolist() == pytest.approx(elo(A, B, S, 3).tolist(), abs=1e-12)
    assert res.bradley_terry.mean.tolist() == pytest.approx(bradley_terry(A, B, S, 3).tolist())
    assert res.glicko2.mean.tolist() == pytest.approx(glicko2(A, B, S, 3).rating.tolist())
    assert res.elo.low.tolist() == res.elo.mean.tolist() == res.elo.high.tolist()


def test_bootstrap_rounds_are_refits_of_the_drawn_resamples() -> None:
    a, b, s = (np.asarray(x) for x in random_battles(60, 4, seed=4))
    rounds = 7
    idx = np.random.default_rng(5).integers(0, len(a), size=(rounds, len(a)))
    res = bootstrap(a, b, s, 4, rounds=rounds, indices=idx)
    for r in range(rounds):
        ra, rb, rs = a[idx[r]], b[idx[r]], s[idx[r]]
        assert res.elo.samples[r].tolist() == pytest.approx(elo_reference(ra, rb, rs, 4))
        assert res.glicko2.samples[r].tolist() == pytest.approx(
            glicko_reference(ra, rb, rs, 4)[0],
            abs=1e-3,  # see the per-battle test
        )
        assert res.bradley_terry.samples[r].tolist() == pytest.approx(
            bradley_terry(ra, rb, rs, 4).tolist()
        )
    # Mean and the 2.5/97.5 % percentiles with linear interpolation, computed by hand.
    col = sorted(res.elo.samples[:, 2].tolist())
    pos = 0.025 * (rounds - 1)
    low = col[int(pos)] + (col[int(pos) + 1] - col[int(pos)]) * (pos - int(pos))
    assert res.elo.low[2] == pytest.approx(low)
    assert res.elo.mean[2] == pytest.approx(sum(col) / rounds)


def test_bootstrap_is_reproducible_with_a_seed() -> None:
    one = bootstrap(A, B, S, 3, rounds=50, seed=11)
    two = bootstrap(A, B, S, 3, rounds=50, seed=11)
    other = bootstrap(A, B, S, 3, rounds=50, seed=12)
    for name in ("elo", "bradley_terry", "glicko2"):
        assert np.array_equal(getattr(one, name).samples, getattr(two, name).samples)
    assert not np.array_equal(one.elo.samples, other.elo.samples)
    assert one.elo.samples.shape == (50, 3)


def test_bootstrap_groups_equal_separate_bootstraps() -> None:
    # Groups of different sizes share one pass (the shorter padded with no-op battles); each
    # must equal its own bootstrap on the same resamples.
    g1 = random_battles(40, 5, seed=6)
    g2 = random_battles(25, 5, seed=7)
    a, b, s = (np.concatenate([g1[i], g2[i]]) for i in range(3))
    group = np.repeat([0, 1], [40, 25])
    rng = np.random.default_rng(8)
    idx = [rng.integers(0, 40, (6, 40)), rng.integers(0, 25, (6, 25))]
    both = bootstrap_groups(a, b, s, group, 5, rounds=6, indices=idx)
    for g, battles in enumerate((g1, g2)):
        alone = bootstrap(*battles, 5, rounds=6, indices=idx[g])
        for name in ("elo", "bradley_terry", "glicko2"):
            assert getattr(both[g], name).samples == pytest.approx(getattr(alone, name).samples)
    drawn = bootstrap_groups(a, b, s, group, 5, rounds=6, seed=3)
    again = bootstrap_groups(a, b, s, group, 5, rounds=6, seed=3)
    assert np.array_equal(drawn[1].glicko2.samples, again[1].glicko2.samples)


def test_bootstrap_groups_draw_the_same_rounds_whatever_the_workers() -> None:
    # Each group draws from its own child generator: splitting the groups among threads, or
    # running a group alone, changes none of its rounds.
    g1 = random_battles(30, 4, seed=10)
    g2 = random_battles(50, 4, seed=11)
    a, b, s = (np.concatenate([g1[i], g2[i]]) for i in range(3))
    group = np.repeat([0, 1], [30, 50])
    one = bootstrap_groups(a, b, s, group, 4, rounds=5, seed=9)
    two = bootstrap_groups(a, b, s, group, 4, rounds=5, seed=9, workers=2)
    for x, y in zip(one, two, strict=True):
        for name in ("elo", "bradley_terry", "glicko2"):
            assert np.array_equal(getattr(x, name).samples, getattr(y, name).samples)
    # Child 0 of a seed is the same however many children are spawned.
    alone = bootstrap(*g1, 4, rounds=5, seed=9)
    assert np.array_equal(alone.glicko2.samples, one[0].glicko2.samples)


def test_small_bench_agrees_with_its_python_baseline() -> None:
    # bench/pairwise_ranking.py recomputes its baseline's rounds with lib.ratings and prints
    # the largest differences: the vectorised and the loop versions must agree.
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [sys.executable, "bench/run.py", "pairwise-ranking", "--scale", "small"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = run.stdout.strip().splitlines()
    assert lines[-1].startswith("pairwise-ranking: ")
    check = next(x for x in lines if x.startswith("cross-check: "))
    values = check.removeprefix("cross-check: ").split(" (", 1)[0]
    diffs = dict(item.split() for item in values.split(", "))
    assert set(diffs) == {"elo", "bradley_terry", "glicko2", "majority"}
    assert float(diffs["elo"]) < 1e-9
    assert float(diffs["bradley_terry"]) < 1e-9
    assert float(diffs["glicko2"]) < 1e-3  # the Illinois stop, see test_glicko2_equals_...
    assert float(diffs["majority"]) == 0


def test_borda_of_a_bootstrap_result() -> None:
    res = bootstrap(A, B, S, 3, rounds=20, seed=1)
    orders = [ranking(res.elo.mean), ranking(res.bradley_terry.mean), ranking(res.glicko2.mean)]
    counted = [sum(2 - order.tolist().index(m) for order in orders) for m in range(3)]
    assert res.borda().tolist() == counted


def test_bad_battles_are_refused() -> None:
    with pytest.raises(ValueError):
        elo([0], [0], [1.0], 2)  # a model against itself
    with pytest.raises(ValueError):
        elo([0], [2], [1.0], 2)  # index out of range
    with pytest.raises(ValueError):
        elo([0], [1], [1.5], 2)  # outcome outside [0, 1]
