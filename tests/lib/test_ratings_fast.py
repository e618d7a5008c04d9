"""The fast paths of lib.ratings against the vectorised pass they replace and against
independent loops: the scalar plain fits (`elo`, `glicko2`), Bradley–Terry on the counted win
matrix, and `rate_groups`, whose plain fits ride in the bootstrap's pass."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lib.ratings import (
    BradleyTerryParams,
    EloParams,
    Glicko2Params,
    bootstrap_groups,
    bradley_terry,
    elo,
    glicko2,
    rate_groups,
)
from lib.ratings_pass import pass_fit
from tests.lib.test_ratings import (
    A,
    B,
    S,
    elo_reference,
    glicko_reference,
    random_battles,
)

CASES = [
    (A, B, S, 3),
    (*random_battles(400, 6, seed=21), 6),
    # Model 4 never plays: it keeps its initial values (and p = 1 in Bradley–Terry).
    (*random_battles(150, 4, seed=22), 5),
]
STRICT = Glicko2Params(rating=1300, rd=250, volatility=0.08, tau=0.9, epsilon=1e-12)


def bt_loop(a, b, s, m, iterations=50):
    """Hunter's MM on counts made battle by battle, centred on the models that played."""
    wins = [[0.0] * m for _ in range(m)]
    for i, j, x in zip(a, b, s, strict=True):
        wins[i][j] += x
        wins[j][i] += 1 - x
    played = [any(wins[i][j] + wins[j][i] for j in range(m)) for i in range(m)]
    p = [1.0] * m
    for _ in range(iterations):
        new = []
        for i in range(m):
            denom = sum((wins[i][j] + wins[j][i]) / (p[i] + p[j]) for j in range(m) if j != i)
            new.append(sum(wins[i]) / denom if played[i] else p[i])
        p = [x / max(new) for x in new]
    logs = [math.log10(x) for x in p]
    centre = sum(x for x, y in zip(logs, played, strict=True) if y) / sum(played)
    return [400 * (x - centre) + 1000 if y else 1000.0 for x, y in zip(logs, played, strict=True)]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_plain_fits_equal_the_pass_they_replace(case: int) -> None:
    a, b, s, m = CASES[case]
    for ep, bp, gp, tol in (
        (EloParams(), BradleyTerryParams(), Glicko2Params(), 1e-3),
        (
            EloParams(k=32, scale=200, base=math.e, initial=1500),
            BradleyTerryParams(7),
            STRICT,
            1e-8,
        ),
    ):
        old = pass_fit(a, b, s, m, elo=ep, bt=bp, glicko=gp)
        assert elo(a, b, s, m, ep).tolist() == pytest.approx(
            old.elo_ratings()[0].tolist(), abs=1e-9
        )
        assert bradley_terry(a, b, s, m, bp).tolist() == pytest.approx(
            old.bt_ratings()[0].tolist(), abs=1e-9
        )
        # Glicko-2's volatility search stops at |B - A| <= epsilon: with the default 1e-6 an exp
        # differing in its last bit may stop it one step apart (see test_ratings.py).
        got = glicko2(a, b, s, m, gp)
        rating, rd, vol = old.glicko_ratings()
        assert got.rating.tolist() == pytest.approx(rating[0].tolist(), abs=tol)
        assert got.rd.tolist() == pytest.approx(rd[0].tolist(), abs=tol)
        assert got.volatility.tolist() == pytest.approx(vol[0].tolist(), abs=tol * 1e-3)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_plain_fits_equal_independent_loops(case: int) -> None:
    a, b, s, m = CASES[case]
    assert elo(a, b, s, m).tolist() == pytest.approx(elo_reference(a, b, s, m), abs=1e-9)
    assert bradley_terry(a, b, s, m).tolist() == pytest.approx(bt_loop(a, b, s, m), abs=1e-9)
    got = glicko2(a, b, s, m, STRICT)
    want = glicko_reference(a, b, s, m, 1300, 250, 0.08, 0.9, 1e-12)
    assert got.rating.tolist() == pytest.approx(want[0], abs=1e-8)
    assert got.rd.tolist() == pytest.approx(want[1], abs=1e-8)
    assert got.volatility.tolist() == pytest.approx(want[2], abs=1e-11)


def test_elo_by_hand_with_a_tie() -> None:
    # Battle 1: equal ratings, E = 1/2, A ties: nothing moves. Battle 2: 0 beats 1 from equal
    # ratings: +2 / -2 (K 4). Battle 3: 1 (998) beats 0 (1002): E_1 = 1/(1 + 10^(4/400)).
    r = elo([0, 0, 1], [1, 1, 0], [0.5, 1.0, 1.0], 2)
    e1 = 1 / (1 + 10 ** (4 / 400))
    assert r.tolist() == pytest.approx([1002 - 4 * (1 - e1), 998 + 4 * (1 - e1)], abs=1e-12)


def test_bradley_terry_two_models_with_a_tie_by_hand() -> None:
    # 0 beats 1 twice and they tie once: W_0 = 2.5, W_1 = 0.5; the MM fixed point after one
    # step already has p_0 / p_1 = W_0 / W_1 = 5, so the ratings sit at ±200·log10(5).
    r = bradley_terry([0, 1, 0], [1, 0, 1], [1.0, 0.0, 0.5], 2)
    half = 200 * math.log10(5)
    assert r.tolist() == pytest.approx([1000 + half, 1000 - half], abs=1e-9)


def test_elo_past_the_floats_falls_back_to_the_pass() -> None:
    # A huge K over a tiny scale sends the ratings past e^709 within a few battles: Python's
    # exp raises where numpy's gives inf, so the fit is the pass's, inf and nan included.
    a, b, s = random_battles(40, 3, seed=5)
    params = EloParams(k=1e6, scale=1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        want = pass_fit(a, b, s, 3, elo=params).elo_ratings()[0]
        got = elo(a, b, s, 3, params)
    assert np.array_equal(got, want, equal_nan=True)


def grouped(seed: int) -> tuple[np.ndarray, ...]:
    """Three groups' battles interleaved at random, each group keeping its own order (which
    its fit reads): the slots of a shuffled group column take that group's battles in turn."""
    parts = [random_battles(n, 5, seed=seed + n) for n in (60, 25, 90)]
    group = np.repeat([0, 1, 2], [60, 25, 90])
    a, b, s = (np.concatenate([p[i] for p in parts]) for i in range(3))
    owner = np.random.default_rng(seed).permutation(group)
    taken = np.empty(len(group), dtype=np.int64)
    for g in range(3):
        taken[owner == g] = np.flatnonzero(group == g)
    return a[taken], b[taken], s[taken], owner


def test_rate_groups_fits_ride_in_the_bootstrap_pass() -> None:
    a, b, s, group = grouped(1)
    ep, bp, gp = EloParams(k=8), BradleyTerryParams(30), STRICT
    boots = bootstrap_groups(
        a, b, s, group, 5, rounds=6, seed=4, elo_params=ep, bt_params=bp, glicko2_params=gp
    )
    for workers in (1, 2):
        rated = rate_groups(
            a, b, s, group, 5, rounds=6, seed=4,
            elo_params=ep, bt_params=bp, glicko2_params=gp, workers=workers,
        )  # fmt: skip
        for g, (res, boot) in enumerate(zip(rated, boots, strict=True)):
            # The same rounds as bootstrap_groups (the fits are one block after them).
            assert res.bootstrap is not None
            for name in ("elo", "bradley_terry", "glicko2"):
                assert np.array_equal(
                    getattr(res.bootstrap, name).samples, getattr(boot, name).samples
                )
            ga, gb, gs = (x[group == g] for x in (a, b, s))
            assert res.elo.tolist() == pytest.approx(elo_reference(ga, gb, gs, 5, k=8), abs=1e-9)
            assert res.bradley_terry.tolist() == pytest.approx(bt_loop(ga, gb, gs, 5, 30), abs=1e-9)
            want = glicko_reference(ga, gb, gs, 5, 1300, 250, 0.08, 0.9, 1e-12)
            assert res.glicko2.rating.tolist() == pytest.approx(want[0], abs=1e-8)
            assert res.glicko2.rd.tolist() == pytest.approx(want[1], abs=1e-8)
            assert res.glicko2.volatility.tolist() == pytest.approx(want[2], abs=1e-11)


def test_rate_groups_without_rounds_is_the_plain_fits() -> None:
    a, b, s, group = grouped(2)
    rated = rate_groups(a, b, s, group, 5, rounds=0)
    for g, res in enumerate(rated):
        ga, gb, gs = a[group == g], b[group == g], s[group == g]
        assert res.bootstrap is None
        assert np.array_equal(res.elo, elo(ga, gb, gs, 5))
        assert np.array_equal(res.bradley_terry, bradley_terry(ga, gb, gs, 5))
        assert np.array_equal(res.glicko2.rating, glicko2(ga, gb, gs, 5).rating)
    with pytest.raises(ValueError):
        rate_groups(a, b, s, group, 5, rounds=-1)


def test_the_bench_fastchat_functions_compute_what_ours_do() -> None:
    # bench/pairwise_ranking.py times Chatbot Arena's functions (restated from FastChat) as the
    # baseline: they must compute the same ratings on the same battles for the ratio to mean
    # anything — Elo exactly, Bradley–Terry the same maximum (FastChat stops L-BFGS-B at a
    # gradient of 1e-6 and does not centre: compared centred, to a fraction of a point).
    from bench.pairwise_ranking import fc_compute_elo, fc_compute_mle, fc_frame

    a, b, s = random_battles(500, 6, seed=31)
    frame = fc_frame(list(zip(a, b, s, strict=True)))
    names = [f"model-{i:02d}" for i in range(6)]
    fc_elo = fc_compute_elo(frame)
    assert [fc_elo[n] for n in names] == pytest.approx(elo(a, b, s, 6).tolist(), abs=1e-9)
    fc_bt = fc_compute_mle(frame)[names].to_numpy()
    exact = bradley_terry(a, b, s, 6, BradleyTerryParams(iterations=5000))
    assert (fc_bt - fc_bt.mean() + 1000).tolist() == pytest.approx(exact.tolist(), abs=0.05)
