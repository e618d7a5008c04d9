"""Ratings of models from pairwise battles: Elo, Bradley–Terry, Glicko-2, bootstrap, Borda (numpy).

Battles are three parallel arrays: `model_a`, `model_b` (model indices 0..n_models-1, the two
sides of a battle differ) and `outcome`, A's score: 1.0 A wins, 0.0 B wins, 0.5 a tie. Which
labels count as a tie (REPA's "both good" / "both bad") is the caller's rule, not this module's.

Definitions followed:
- Elo: the Chatbot Arena online Elo (Chiang et al. 2024, FastChat's `compute_elo`): every battle
  in order moves both ratings by K·(S − E) computed from their ratings before the battle,
  E = 1 / (1 + base^((R_b − R_a) / scale)); initial 1000, K 4, scale 400, base 10.
- Bradley–Terry: the MM algorithm of Hunter (2004), "MM algorithms for generalized Bradley–Terry
  models", eq. (3): p_i ← W_i / Σ_j N_ij / (p_i + p_j), all models updated at once from the
  previous iterate, 50 iterations from p = 1 (REPA §3.1). A tie counts half a win to each side.
- Glicko-2: Glickman, "Example of the Glicko-2 system" (2012/2013), steps 1–8, the volatility by
  the Illinois algorithm of step 5 (see `glicko2` for the rating-period choice).
- Bootstrap: Arena's `get_bootstrap_result` — each round resamples the battles with replacement
  (as many as there are, in the drawn order) and refits; REPA §3.1 averages 1,000 rounds. We
  report the mean and the 2.5 / 97.5 % percentiles (linear interpolation) per model.
- Borda: a model ranked k-th (1-based) of m gets m − k points, summed over the rankings
  (REPA §3.1, after Colombo et al. 2022).

Speed: a plain fit (one sequence, the battles in their order) runs as scalar Python over plain
lists for Elo and Glicko-2 (sequential by nature; one numpy call per battle would cost more than
the arithmetic) and as Hunter's MM on the (m, m) win matrix counted once for Bradley–Terry.
A bootstrap runs in `lib.ratings_pass`, vectorised across the rounds; `rate_groups` adds each
group's plain fit to that pass as one more sequence, so the fits of every criterion cost one
extra round among a thousand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from lib.ratings_pass import (
    GLICKO2_SCALE,
    BattlePass,
    BradleyTerryParams,
    EloParams,
    FloatArray,
    Glicko2Params,
    IntArray,
    bradley_terry_mm,
    check_battles,
    new_log_volatility,
    pass_fit,
    resample_chunks,
)

__all__ = [
    "GLICKO2_SCALE",
    "BootstrapResult",
    "BradleyTerryParams",
    "EloParams",
    "Glicko2Params",
    "Glicko2Ratings",
    "GroupRatings",
    "Interval",
    "bootstrap",
    "bootstrap_groups",
    "borda",
    "bradley_terry",
    "elo",
    "glicko2",
    "glicko2_period",
    "ranking",
    "rate_groups",
]


class Glicko2Ratings(NamedTuple):
    rating: FloatArray
    rd: FloatArray
    volatility: FloatArray


@dataclass(frozen=True)
class Interval:
    """One system's bootstrap summary per model, and the per-round values behind it."""

    mean: FloatArray
    low: FloatArray
    high: FloatArray
    samples: FloatArray  # (rounds, n_models)


@dataclass(frozen=True)
class BootstrapResult:
    elo: Interval
    bradley_terry: Interval
    glicko2: Interval

    def borda(self) -> FloatArray:
        """Borda points of the three systems' mean ratings (each ranking best first)."""
        return borda(
            [ranking(self.elo.mean), ranking(self.bradley_terry.mean), ranking(self.glicko2.mean)]
        )


@dataclass(frozen=True)
class GroupRatings:
    """One group's plain fits (its battles in their own order) and, with rounds, its bootstrap."""

    elo: FloatArray
    bradley_terry: FloatArray
    glicko2: Glicko2Ratings
    bootstrap: BootstrapResult | None


# Where a scalar loop's arithmetic leaves the floats (an exp past 1e308, a division by an
# expectation of exactly 0 or 1) numpy's pass carries inf / nan on; the fit is then left to it,
# so the semantics at the edges stay the pass's.
_SCALAR_LIMITS = (OverflowError, ZeroDivisionError, ValueError)

# --------------------------------------------------------------------------- plain fits


def elo(
    model_a: ArrayLike,
    model_b: ArrayLike,
    outcome: ArrayLike,
    n_models: int,
    params: EloParams | None = None,
) -> FloatArray:
    """Online Elo over the battles in the given order; (n_models,) ratings."""
    a, b, s = check_battles(model_a, model_b, outcome, n_models)
    try:
        return _elo_loop(a.tolist(), b.tolist(), s.tolist(), n_models, params or EloParams())
    except _SCALAR_LIMITS:
        return pass_fit(a, b, s, n_models, elo=params).elo_ratings()[0]


def bradley_terry(
    model_a: ArrayLike,
    model_b: ArrayLike,
    outcome: ArrayLike,
    n_models: int,
    params: BradleyTerryParams | None = None,
) -> FloatArray:
    """Bradley–Terry ratings after `iterations` MM updates, on the scale of BradleyTerryParams.

    A model without a single win or tie has no finite maximum-likelihood strength (Hunter's
    condition A fails): its strength tends to 0 and its rating is -inf. A model without any
    battle keeps p = 1 and is left out of the centring (it shows at the anchor).
    """
    a, b, s = check_battles(model_a, model_b, outcome, n_models)
    wins = _win_matrix(a, b, s, n_models)
    return bradley_terry_mm(wins[None], params or BradleyTerryParams())[0]


def glicko2(
    model_a: ArrayLike,
    model_b: ArrayLike,
    outcome: ArrayLike,
    n_models: int,
    params: Glicko2Params | None = None,
) -> Glicko2Ratings:
    """Glicko-2 over the battles in order, **every battle one rating period** of its two models.

    Why per battle: REPA (§3.1) averages Glicko-2 over bootstrap rounds "to mitigate bias from
    the order of pairwise comparisons", as Arena does for its online Elo — so the ratings are
    order-dependent, i.e. updated battle by battle, not once over the whole set (one period would
    make the order irrelevant). Models not in a battle are not touched in that period: Glickman's
    step 6 for non-competitors (φ' = √(φ² + σ²)) would run once per battle for all the other
    models and inflate their RD with the number of battles, which measures nothing here. This is
    what per-game Glicko-2 implementations (e.g. a `Player.update_player` call per game for both
    players) do. Both models are updated from their values before the battle.
    """
    a, b, s = check_battles(model_a, model_b, outcome, n_models)
    try:
        return _glicko_loop(a.tolist(), b.tolist(), s.tolist(), n_models, params or Glicko2Params())
    except _SCALAR_LIMITS:
        r, rd, vol = pass_fit(a, b, s, n_models, glicko=params).glicko_ratings()
        return Glicko2Ratings(r[0], rd[0], vol[0])


def glicko2_period(
    rating: float,
    rd: float,
    volatility: float,
    opponent_ratings: ArrayLike,
    opponent_rds: ArrayLike,
    scores: ArrayLike,
    *,
    tau: float = 0.5,
    epsilon: float = 1e-6,
) -> tuple[float, float, float]:
    """One player's Glicko-2 update over one rating period of several games (Glickman, steps
    2–8), on the Glicko scale: (rating, RD, volatility). The per-battle pass uses the same
    volatility routine with one game per period."""
    mu = (rating - 1500.0) / GLICKO2_SCALE
    phi = rd / GLICKO2_SCALE
    mu_j = (np.asarray(opponent_ratings, dtype=np.float64) - 1500.0) / GLICKO2_SCALE
    phi_j = np.asarray(opponent_rds, dtype=np.float64) / GLICKO2_SCALE
    s = np.asarray(scores, dtype=np.float64)
    g = 1.0 / np.sqrt(1.0 + 3.0 * phi_j**2 / math.pi**2)
    e = 1.0 / (1.0 + np.exp(-g * (mu - mu_j)))
    v = 1.0 / float(np.sum(g**2 * e * (1.0 - e)))
    improvement = float(np.sum(g * (s - e)))
    log_sigma2_new = new_log_volatility(
        np.array([math.log(volatility**2)]),
        np.array([phi**2]),
        np.array([v]),
        np.array([v * improvement]),
        tau,
        epsilon,
    )[0]
    sigma2_new = math.exp(log_sigma2_new)
    sigma_new = math.sqrt(sigma2_new)
    phi_star = math.sqrt(phi**2 + sigma2_new)
    phi_new = 1.0 / math.sqrt(1.0 / phi_star**2 + 1.0 / v)
    mu_new = mu + phi_new**2 * improvement
    return GLICKO2_SCALE * mu_new + 1500.0, GLICKO2_SCALE * phi_new, float(sigma_new)


# --------------------------------------------------------------------------- bootstrap


def bootstrap(
    model_a: ArrayLike,
    model_b: ArrayLike,
    outcome: ArrayLike,
    n_models: int,
    *,
    rounds: int = 1000,
    seed: int | np.random.Generator | None = 0,
    indices: ArrayLike | None = None,
    elo_params: EloParams | None = None,
    bt_params: BradleyTerryParams | None = None,
    glicko2_params: Glicko2Params | None = None,
) -> BootstrapResult:
    """All three systems over `rounds` resamples of the battles (with replacement, same size,
    drawn order), seeded by a numpy Generator; `indices` (rounds, n_battles) replaces the draw
    (e.g. the identity resample)."""
    group = np.zeros(len(np.asarray(model_a)), dtype=np.int64)
    return bootstrap_groups(
        model_a,
        model_b,
        outcome,
        group,
        n_models,
        rounds=rounds,
        seed=seed,
        indices=None if indices is None else [indices],
        elo_params=elo_params,
        bt_params=bt_params,
        glicko2_params=glicko2_params,
    )[0]


def bootstrap_groups(
    model_a: ArrayLike,
    model_b: ArrayLike,
    outcome: ArrayLike,
    group: ArrayLike,
    n_models: int,
    *,
    rounds: int = 1000,
    seed: int | np.random.Generator | None = 0,
    indices: Sequence[ArrayLike] | None = None,
    elo_params: EloParams | None = None,
    bt_params: BradleyTerryParams | None = None,
    glicko2_params: Glicko2Params | None = None,
    workers: int = 1,
) -> list[BootstrapResult]:
    """`bootstrap` of several independent battle sets at once (e.g. one per criterion): battles
    of group g (0..G-1) are resampled among themselves; one result per group.

    All groups run in the same sequential pass (shorter groups padded with no-op battles): one
    numpy call per battle position serves every group's rounds. At a few rounds that makes
    eleven criteria cost little more than one; at 1,000 rounds the calls are long and the cost
    grows with the sequences (measured: 11 criteria 10x one). `indices[g]` is an optional
    (rounds, n_g) array of positions within group g's battles. Otherwise group g draws from
    its own generator, child g of `seed` (`Generator.spawn`), `(chunk, rounds)` positions per
    chunk of battle positions: the same seed gives the same rounds, whatever the other groups
    and however many workers.

    `workers` > 1 splits the groups among that many threads, each with its own pass (numpy
    releases the GIL inside its loops, so the threads overlap on several cores).

    Memory: per sequence 32 bytes per model of state and, for Bradley–Terry, (m+1)² cells per
    distinct outcome value (8 bytes each) — 11 groups x 1,000 rounds x 20 models x 3 outcome
    values: ~120 MB; it grows with m², so hundreds of models need fewer rounds per call.
    """
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    battles = _Groups(model_a, model_b, outcome, group, n_models)
    return [
        boot
        for boot, _fit in battles.run(
            rounds=rounds,
            seed=seed,
            indices=indices,
            params=(elo_params, bt_params, glicko2_params),
            workers=workers,
            fits=False,
        )
    ]


def rate_groups(
    model_a: ArrayLike,
    model_b: ArrayLike,
    outcome: ArrayLike,
    group: ArrayLike,
    n_models: int,
    *,
    rounds: int = 1000,
    seed: int | np.random.Generator | None = 0,
    elo_params: EloParams | None = None,
    bt_params: BradleyTerryParams | None = None,
    glicko2_params: Glicko2Params | None = None,
    workers: int = 1,
) -> list[GroupRatings]:
    """Each group's plain fits of the three systems and (rounds > 0) its bootstrap, which is
    `bootstrap_groups` with the same arguments (the same rounds for the same seed).

    The plain fit of group g is its battles in their own order; it rides in the bootstrap's pass
    as one more sequence per group, so the fits cost what one more round costs. Without rounds
    the fits run one group after the other as `elo`, `bradley_terry` and `glicko2` do.
    """
    if rounds < 0:
        raise ValueError("rounds must be >= 0")
    battles = _Groups(model_a, model_b, outcome, group, n_models)
    if rounds == 0:
        out = []
        for first, n in zip(battles.starts.tolist(), battles.sizes.tolist(), strict=True):
            part = slice(first, first + n)
            a, b, s = battles.a[part], battles.b[part], battles.s[part]
            out.append(
                GroupRatings(
                    elo=elo(a, b, s, n_models, elo_params),
                    bradley_terry=bradley_terry(a, b, s, n_models, bt_params),
                    glicko2=glicko2(a, b, s, n_models, glicko2_params),
                    bootstrap=None,
                )
            )
        return out
    runs = battles.run(
        rounds=rounds,
        seed=seed,
        indices=None,
        params=(elo_params, bt_params, glicko2_params),
        workers=workers,
        fits=True,
    )
    out = []
    for boot, fit in runs:
        assert fit is not None
        out.append(GroupRatings(elo=fit[0], bradley_terry=fit[1], glicko2=fit[2], bootstrap=boot))
    return out


_Fit = tuple[FloatArray, FloatArray, Glicko2Ratings]


class _Groups:
    """Battles of G groups, checked and sorted by group (stably: each group keeps its order), so
    that group g is the contiguous range starts[g]..starts[g]+sizes[g] and a draw is an offset
    plus a position."""

    def __init__(
        self,
        model_a: ArrayLike,
        model_b: ArrayLike,
        outcome: ArrayLike,
        group: ArrayLike,
        n_models: int,
    ) -> None:
        a, b, s = check_battles(model_a, model_b, outcome, n_models)
        grp = np.asarray(group, dtype=np.int64)
        if grp.shape != a.shape:
            raise ValueError("group must have one entry per battle")
        if np.any(grp < 0):
            raise ValueError("every group 0..G-1 needs at least one battle")
        self.n_groups = int(grp.max()) + 1 if len(grp) else 0
        order = np.argsort(grp, kind="stable")
        self.a, self.b, self.s = a[order], b[order], s[order]
        self.sizes = np.bincount(grp, minlength=self.n_groups)
        if np.any(self.sizes == 0):
            raise ValueError("every group 0..G-1 needs at least one battle")
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self.n_models = n_models

    def run(
        self,
        *,
        rounds: int,
        seed: int | np.random.Generator | None,
        indices: Sequence[ArrayLike] | None,
        params: tuple[EloParams | None, BradleyTerryParams | None, Glicko2Params | None],
        workers: int,
        fits: bool,
    ) -> list[tuple[BootstrapResult, _Fit | None]]:
        sizes, starts, n_groups = self.sizes, self.starts, self.n_groups
        given = None
        if indices is not None:
            given = [np.asarray(ix, dtype=np.int64) for ix in indices]
            if len(given) != n_groups or any(
                ix.shape != (rounds, n) for ix, n in zip(given, sizes.tolist(), strict=True)
            ):
                raise ValueError("indices[g] must have shape (rounds, n_battles of group g)")
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        rngs = rng.spawn(n_groups)
        elo_p, bt_p, gl_p = params

        def fit(groups: list[int]) -> list[tuple[BootstrapResult, _Fit | None]]:
            n = len(groups)
            # One block of `rounds` sequences per group, then (fits) one block of the groups'
            # plain fits: the bootstrap blocks are laid out as without it.
            blocks = [rounds] * n + ([n] if fits else [])
            one = BattlePass(self.n_models, blocks, elo=elo_p, bt=bt_p, glicko=gl_p)
            one.run(
                self.a,
                self.b,
                self.s,
                resample_chunks(
                    [int(starts[g]) for g in groups],
                    [int(sizes[g]) for g in groups],
                    rounds,
                    [rngs[g] for g in groups],
                    None if given is None else [given[g] for g in groups],
                    fits=fits,
                ),
            )
            elo_r, bt_r = one.elo_ratings(), one.bt_ratings()
            gl_r, gl_rd, gl_vol = one.glicko_ratings()
            per_system = {"elo": elo_r, "bradley_terry": bt_r, "glicko2": gl_r}
            out: list[tuple[BootstrapResult, _Fit | None]] = []
            for j in range(n):
                boot = BootstrapResult(
                    **{
                        k: _interval(v[j * rounds : (j + 1) * rounds])
                        for k, v in per_system.items()
                    }
                )
                row = n * rounds + j
                plain = (
                    (elo_r[row], bt_r[row], Glicko2Ratings(gl_r[row], gl_rd[row], gl_vol[row]))
                    if fits
                    else None
                )
                out.append((boot, plain))
            return out

        # Contiguous shares of the groups, as equal in battles as the group sizes allow.
        shares = [
            part.tolist()
            for part in np.array_split(np.arange(n_groups), min(max(workers, 1), n_groups))
        ]
        if len(shares) == 1:
            return fit(shares[0])
        with ThreadPoolExecutor(max_workers=len(shares)) as pool:
            return [res for part in pool.map(fit, shares) for res in part]


def _interval(samples: FloatArray) -> Interval:
    # A Bradley–Terry rating of -inf (a model without a win or tie in a round) makes numpy's
    # interpolation compute -inf + inf = nan; the percentile there is -inf.
    with np.errstate(invalid="ignore"):
        low, high = np.percentile(samples, [2.5, 97.5], axis=0)
    low[np.isnan(low)] = -np.inf
    high[np.isnan(high)] = -np.inf
    return Interval(mean=samples.mean(axis=0), low=low, high=high, samples=samples)


# --------------------------------------------------------------------------- Borda


def ranking(scores: ArrayLike) -> IntArray:
    """Model indices best first (highest score first; equal scores keep index order)."""
    return np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable").astype(np.int64)


def borda(rankings: Sequence[ArrayLike]) -> FloatArray:
    """Borda points: in each ranking (model indices best first, a permutation of 0..m-1) the
    model at 1-based position k gets m − k points; points are summed over the rankings."""
    orders = [np.asarray(r, dtype=np.int64) for r in rankings]
    if not orders:
        raise ValueError("borda needs at least one ranking")
    m = len(orders[0])
    points = np.zeros(m)
    for order in orders:
        if sorted(order.tolist()) != list(range(m)):
            raise ValueError("each ranking must be a permutation of the same models")
        points[order] += m - np.arange(1, m + 1)
    return points


# --------------------------------------------------------------------------- scalar loops
# One sequence in plain Python: per battle a few float operations, where a numpy call each
# would cost a microsecond or more. The arithmetic is the pass's, operation for operation
# (`lib.ratings_pass`), so the two agree to the last bits of an exp.


def _win_matrix(a: IntArray, b: IntArray, s: FloatArray, m: int) -> FloatArray:
    """W[i, j]: i's points against j — A's score in i-against-j battles, B's in j-against-i."""
    won: FloatArray = np.bincount(a * m + b, weights=s, minlength=m * m).astype(np.float64)
    won += np.bincount(b * m + a, weights=1.0 - s, minlength=m * m)
    return won.reshape(m, m)


def _elo_loop(
    a: list[int], b: list[int], s: list[float], n_models: int, p: EloParams
) -> FloatArray:
    r = [p.initial] * n_models
    k, c = p.k, math.log(p.base) / p.scale
    exp = math.exp
    for i, j, x in zip(a, b, s, strict=True):
        d = k * (x - 1.0 / (1.0 + exp(c * (r[j] - r[i]))))
        r[i] += d
        r[j] -= d
    return np.array(r, dtype=np.float64)


def _glicko_loop(
    a: list[int], b: list[int], s: list[float], n_models: int, p: Glicko2Params
) -> Glicko2Ratings:
    """Glickman's steps 3–7 per battle for both models from their values before it."""
    mu = [(p.rating - 1500.0) / GLICKO2_SCALE] * n_models
    phi = [p.rd / GLICKO2_SCALE] * n_models
    log_sig2 = [math.log(p.volatility**2)] * n_models
    tau, eps = p.tau, p.epsilon
    c3 = 3.0 / math.pi**2
    exp, sqrt, vol = math.exp, math.sqrt, _volatility_one
    for i, j, x in zip(a, b, s, strict=True):
        mu_i, mu_j, phi2_i, phi2_j = mu[i], mu[j], phi[i] * phi[i], phi[j] * phi[j]
        g_i = 1.0 / sqrt(1.0 + c3 * phi2_i)  # g of i's φ: weighs j's game against i
        g_j = 1.0 / sqrt(1.0 + c3 * phi2_j)
        e = 1.0 / (1.0 + exp(g_j * (mu_j - mu_i)))
        v_i = 1.0 / (g_j * g_j * e * (1.0 - e))
        gs_i = g_j * (x - e)
        e = 1.0 / (1.0 + exp(g_i * (mu_i - mu_j)))
        v_j = 1.0 / (g_i * g_i * e * (1.0 - e))
        gs_j = g_i * ((1.0 - x) - e)
        new_i = vol(log_sig2[i], phi2_i, v_i, v_i * gs_i, tau, eps)
        new_j = vol(log_sig2[j], phi2_j, v_j, v_j * gs_j, tau, eps)
        phi_i = 1.0 / sqrt(1.0 / (phi2_i + exp(new_i)) + 1.0 / v_i)
        phi_j = 1.0 / sqrt(1.0 / (phi2_j + exp(new_j)) + 1.0 / v_j)
        mu[i] = mu_i + phi_i * phi_i * gs_i
        mu[j] = mu_j + phi_j * phi_j * gs_j
        phi[i], phi[j], log_sig2[i], log_sig2[j] = phi_i, phi_j, new_i, new_j
    return Glicko2Ratings(
        GLICKO2_SCALE * np.array(mu) + 1500.0,
        GLICKO2_SCALE * np.array(phi),
        np.exp(0.5 * np.array(log_sig2)),
    )


def _volatility_one(a: float, phi2: float, v: float, delta: float, tau: float, eps: float) -> float:
    """`lib.ratings_pass.volatility` for one element: Glickman's step 5 from a = ln σ² to the
    new ln σ'² by the Illinois algorithm, the same three exp-free starting values."""
    sig2 = math.exp(a)
    p2v = phi2 + v
    c1 = delta * delta - p2v
    inv_t2 = 1.0 / (tau * tau)
    den = p2v + sig2
    f_a = sig2 * (c1 - sig2) / (2.0 * den * den)
    if c1 > 0:  # B = ln(Δ² − φ² − v), where f(B) = −(B − a)/τ²
        x_b = math.log(c1)
        f_b = (a - x_b) * inv_t2
    else:  # B = a − kτ for the smallest k >= 1 with f(a − kτ) >= 0
        low = sig2 * math.exp(-tau)
        den = p2v + low
        f_b = low * (c1 - low) / (2.0 * den * den) + 1.0 / tau
        x_b, k = a - tau, 1.0
        while f_b < 0:
            k += 1.0
            x_b = a - k * tau
            ex = math.exp(x_b)
            den = p2v + ex
            f_b = ex * (c1 - ex) / (2.0 * den * den) - (x_b - a) * inv_t2
    x_a = a
    while abs(x_b - x_a) > eps:
        x_c = x_a + (x_a - x_b) * f_a / (f_b - f_a)
        ex = math.exp(x_c)
        den = p2v + ex
        f_c = ex * (c1 - ex) / (2.0 * den * den) - (x_c - a) * inv_t2
        if f_c * f_b <= 0:
            x_a, f_a = x_b, f_b
        else:
            f_a *= 0.5
        x_b, f_b = x_c, f_c
    return x_a
