"""Model rankings from pairwise labels: python bench/run.py pairwise-ranking --scale full.

Data (synthetic, seeded, built before timing): 10,000 pairs of two distinct models out of 20,
11 criteria, three annotators per pair and criterion, each picking one of the four REPA labels
(A better / B better / both good / both bad). A pair has a "true" label drawn from the two
models' latent strengths on the criterion; each annotator gives it with probability 0.7 and
otherwise draws again from the same distribution, so most pairs reach a majority and some do not
(REPA: 89–100 % majority per criterion).

Timed, per criterion, as the rankings job computes it: the majority (>= 2 of 3, else "no
consensus": the pair leaves that criterion), the tie mapping (both good, both bad -> 0.5), the
plain fits of Elo, Bradley–Terry and Glicko-2, the three over 1,000 bootstrap rounds (mean,
2.5 / 97.5 % percentiles) and the Borda aggregate. Fast: numpy majority and
`lib.ratings.rate_groups` (every criterion's rounds and fits in one pass).

Baseline, the last line's: Chatbot Arena's own functions (FastChat, restated below) on the same
battles — its online Elo and its Bradley–Terry maximum likelihood per criterion, and both
bootstraps (1,000 rounds each; FastChat has no Glicko-2, so it does less than the fast side).
Its Elo bootstrap is measured on a subsample of rounds and scaled (the output says so); its
plain fits are also timed against `elo` and `bradley_terry` alone, and their values compared.

Second baseline: the same computations as ours in straightforward Python loops, per pair and
per battle (Counter majority, `random.choices` resamples, Elo / Glicko-2 per battle,
Bradley–Terry counts and MM in loops), scaled from a subsample of rounds; its rounds are then
recomputed by `lib.ratings` on the same resamples and compared ("cross-check"), so both sides
are shown to compute the same numbers.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import random
import time
from collections import Counter, defaultdict
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit

from bench.common import line, peak_rss_mb
from lib.ratings import (
    BootstrapResult,
    BradleyTerryParams,
    bootstrap_groups,
    bradley_terry,
    elo,
    glicko2,
    ranking,
    rate_groups,
)

CRITERIA = 11
ANNOTATORS = 3
# Label codes of the synthetic data (the platform's own codes live with the pairwise protocol).
A_BETTER, B_BETTER, BOTH_GOOD, BOTH_BAD = 0, 1, 2, 3
OUTCOME = {A_BETTER: 1.0, B_BETTER: 0.0, BOTH_GOOD: 0.5, BOTH_BAD: 0.5}
SCALES: dict[str, dict[str, int]] = {
    "full": {
        "pairs": 10_000,
        "models": 20,
        "rounds": 1000,
        "baseline_rounds": 10,
        "fastchat_rounds": 20,
    },
    "small": {
        "pairs": 600,
        "models": 20,
        "rounds": 100,
        "baseline_rounds": 2,
        "fastchat_rounds": 2,
    },
}
SEED = 20261126
# The fast path splits the criteria between two threads (numpy releases the GIL inside its
# loops), as the rankings job does (comparison.services.RANKING_THREADS): the VM has two cores.
# The Python-loop baseline is one core; FastChat's Bradley–Terry bootstrap a pool of all cores.
WORKERS = 2

Q = 173.7178  # Glicko-2 scale


def make_labels(pairs: int, models: int, seed: int = SEED) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, size=(CRITERIA, models))
    quality = rng.normal(0.0, 1.0, size=(CRITERIA, models))
    a = rng.integers(0, models, pairs)
    b = (a + rng.integers(1, models, pairs)) % models  # distinct from a
    d = strength[:, a] - strength[:, b]  # (C, pairs)
    p_tie = np.full(d.shape, 0.35)  # about a third of the pairs look alike on a criterion
    p_a = (1.0 - p_tie) / (1.0 + np.exp(-1.5 * d))
    p_b = 1.0 - p_tie - p_a
    good = 1.0 / (1.0 + np.exp(-(quality[:, a] + quality[:, b])))
    probs = np.stack([p_a, p_b, p_tie * good, p_tie * (1.0 - good)], axis=-1)  # (C, pairs, 4)
    cum = probs.cumsum(axis=-1)

    def draw() -> np.ndarray:
        u = rng.random(size=(CRITERIA, pairs, 1))
        return np.minimum((u > cum).sum(axis=-1), 3)

    truth = draw()
    labels = np.empty((pairs, CRITERIA, ANNOTATORS), dtype=np.int64)
    for k in range(ANNOTATORS):
        keep = rng.random(size=(CRITERIA, pairs)) < 0.7
        labels[:, :, k] = np.where(keep, truth, draw()).T
    return {"model_a": a, "model_b": b, "labels": labels}


# --------------------------------------------------------------------------- fast


def fast(data: dict[str, np.ndarray], n_models: int, rounds: int) -> list[dict[str, Any]]:
    labels = data["labels"]  # (pairs, C, 3)
    counts = (labels[..., None] == np.arange(4)).sum(axis=2)  # (pairs, C, 4)
    top = counts.argmax(axis=2)
    has_majority = counts.max(axis=2) >= 2  # with 3 votes at most one label has 2 or more
    value = np.array([OUTCOME[k] for k in range(4)])[top]
    pair, crit = np.nonzero(has_majority)  # (pairs, C): pair-major order
    order = np.lexsort((pair, crit))  # criterion by criterion, pairs in order
    pair, crit = pair[order], crit[order]
    results = rate_groups(
        data["model_a"][pair],
        data["model_b"][pair],
        value[pair, crit],
        crit,
        n_models,
        rounds=rounds,
        seed=SEED,
        workers=WORKERS,
    )
    out = []
    for c, rated in enumerate(results):
        assert rated.bootstrap is not None
        out.append(
            {
                "majority_rate": float(has_majority[:, c].mean()),
                "battles": int(has_majority[:, c].sum()),
                "outcome_sum": float(value[:, c][has_majority[:, c]].sum()),
                "rated": rated,
                "result": rated.bootstrap,
                "borda": rated.bootstrap.borda(),
            }
        )
    return out


# --------------------------------------------------------------------------- FastChat


# Chatbot Arena's rating code as FastChat's `fastchat/serve/monitor/elo_analysis.py` runs it
# (lm-sys/FastChat, Apache-2.0), restated here on the same battles: battles as a pandas frame
# of model names and winner strings; the online Elo row by row (`compute_elo`); the
# Bradley–Terry maximum likelihood by L-BFGS-B on the distinct (a, b, outcome) rows weighted by
# their counts (`compute_elo_mle_with_tie`); the Elo bootstrap refitting `frac=1` resamples of
# the frame (`get_bootstrap_result`); the Bradley–Terry bootstrap as multinomial reweightings
# of the distinct rows fitted in a process pool of all cores
# (`get_bootstrap_result_elo_mle_with_tie`). FastChat has no Glicko-2 and no Borda.
WINNER = {1.0: "model_a", 0.0: "model_b", 0.5: "tie"}


def fc_frame(battles: list[tuple[int, int, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model_a": [f"model-{i:02d}" for i, _j, _s in battles],
            "model_b": [f"model-{j:02d}" for _i, j, _s in battles],
            "winner": [WINNER[s] for _i, _j, s in battles],
        }
    )


def fc_compute_elo(
    battles: pd.DataFrame, k: float = 4, scale: float = 400, base: float = 10, init: float = 1000
) -> dict[str, float]:
    rating: defaultdict[str, float] = defaultdict(lambda: init)
    for _, model_a, model_b, winner in battles[["model_a", "model_b", "winner"]].itertuples():
        ra, rb = rating[model_a], rating[model_b]
        ea = 1 / (1 + base ** ((rb - ra) / scale))
        eb = 1 / (1 + base ** ((ra - rb) / scale))
        sa = {"model_a": 1.0, "model_b": 0.0}.get(winner, 0.5)
        rating[model_a] += k * (sa - ea)
        rating[model_b] += k * (1 - sa - eb)
    return dict(rating)


def fc_bootstrap_elo(battles: pd.DataFrame, rounds: int) -> pd.DataFrame:
    rows = [fc_compute_elo(battles.sample(frac=1.0, replace=True)) for _ in range(rounds)]
    frame = pd.DataFrame(rows)
    return frame[frame.median().sort_values(ascending=False).index]


def fc_matchups(battles: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """The distinct (model a, model b, outcome) rows and their counts."""
    models = pd.unique(battles[["model_a", "model_b"]].values.ravel()).tolist()
    index = {name: i for i, name in enumerate(models)}
    schedule = np.empty((len(battles), 3), dtype=np.int32)
    schedule[:, [0, 1]] = battles[["model_a", "model_b"]].map(index.__getitem__).values
    schedule[:, 2] = np.select(
        [battles["winner"] == "model_a", battles["winner"] == "model_b"], [2, 0], default=1
    )
    rows, counts = np.unique(schedule, return_counts=True, axis=0)
    return rows[:, :2], rows[:, 2].astype(np.float64) / 2.0, counts.astype(np.float64), models


def fc_loss(
    ratings: np.ndarray, pairs: np.ndarray, outcomes: np.ndarray, weights: np.ndarray, alpha: float
) -> tuple[float, np.ndarray]:
    d = ratings[pairs]
    probs = expit(alpha * (d[:, 0] - d[:, 1]))
    loss = -((np.log(probs) * outcomes + np.log(1.0 - probs) * (1.0 - outcomes)) * weights).sum()
    grads = -alpha * (outcomes - probs) * weights
    model_grad = np.zeros_like(ratings)
    np.add.at(model_grad, pairs, grads[:, None] * np.array([1.0, -1.0]))
    return float(loss), model_grad


def fc_fit_bt(
    pairs: np.ndarray, outcomes: np.ndarray, weights: np.ndarray, n_models: int, alpha: float
) -> np.ndarray:
    result = minimize(
        fc_loss,
        np.zeros(n_models),
        args=(pairs, outcomes, weights, alpha),
        jac=True,
        method="L-BFGS-B",
        # FastChat's options (its "disp": False left out: deprecated by SciPy, a print switch).
        options={"maxiter": 100, "gtol": 1e-6},
    )
    return np.asarray(result["x"])


def fc_compute_mle(battles: pd.DataFrame, scale: float = 400, base: float = 10) -> pd.Series:
    pairs, outcomes, weights, models = fc_matchups(battles)
    ratings = fc_fit_bt(pairs, outcomes, weights, len(models), math.log(base))
    return pd.Series(ratings * scale + 1000, index=models).sort_values(ascending=False)


def fc_bootstrap_mle(battles: pd.DataFrame, rounds: int, scale: float = 400) -> pd.DataFrame:
    pairs, outcomes, weights, models = fc_matchups(battles)
    drawn = np.random.multinomial(len(battles), weights / weights.sum(), size=rounds)
    fit = partial(fc_fit_bt, pairs, outcomes, n_models=len(models), alpha=math.log(10.0))
    with mp.Pool(os.cpu_count()) as pool:
        results = pool.map(fit, drawn.astype(np.float64) / len(battles))
    frame = pd.DataFrame(np.array(results) * scale + 1000, columns=models)
    return frame[frame.median().sort_values(ascending=False).index]


def fastchat(
    battles: list[list[tuple[int, int, float]]], rounds: int, measured: int
) -> dict[str, Any]:
    """FastChat's four functions per criterion: both plain fits in full, both bootstraps on
    `measured` rounds scaled to `rounds` — each round is one resample and one refit; the
    Bradley–Terry pool's start-up (timed on its own, an empty pool) is counted once, not
    scaled."""
    frames = [fc_frame(b) for b in battles]
    t: dict[str, float] = {"elo": 0.0, "mle": 0.0, "boot_elo": 0.0, "boot_mle": 0.0}
    fits: dict[str, list[Any]] = {"elo": [], "mle": []}
    np.random.seed(SEED)
    t0 = time.perf_counter()
    with mp.Pool(os.cpu_count()) as pool:
        pool.map(abs, [0])
    startup = time.perf_counter() - t0
    for frame in frames:
        t0 = time.perf_counter()
        fits["elo"].append(fc_compute_elo(frame))
        t1 = time.perf_counter()
        fits["mle"].append(fc_compute_mle(frame))
        t2 = time.perf_counter()
        fc_bootstrap_elo(frame, measured)
        t3 = time.perf_counter()
        fc_bootstrap_mle(frame, measured)
        t4 = time.perf_counter()
        t["elo"] += t1 - t0
        t["mle"] += t2 - t1
        t["boot_elo"] += (t3 - t2) * rounds / measured
        t["boot_mle"] += startup + max(t4 - t3 - startup, 0.0) * rounds / measured
    return {"times": t, "total_s": sum(t.values()), "fits": fits, "pool_s": startup}


# --------------------------------------------------------------------------- baseline


def baseline_battles(
    data: dict[str, np.ndarray],
) -> tuple[list[list[tuple[int, int, float]]], list[float]]:
    """Majority per pair and criterion with a Counter, then the battles of each criterion."""
    a_list = data["model_a"].tolist()
    b_list = data["model_b"].tolist()
    labels = data["labels"].tolist()
    battles: list[list[tuple[int, int, float]]] = [[] for _ in range(CRITERIA)]
    kept = [0] * CRITERIA
    for p, per_criterion in enumerate(labels):
        for c, votes in enumerate(per_criterion):
            label, n = Counter(votes).most_common(1)[0]
            if n >= 2:
                battles[c].append((a_list[p], b_list[p], OUTCOME[label]))
                kept[c] += 1
    return battles, [k / len(labels) for k in kept]


def elo_loop(battles: list[tuple[int, int, float]], m: int) -> list[float]:
    r = [1000.0] * m
    for i, j, s in battles:
        ea = 1 / (1 + 10 ** ((r[j] - r[i]) / 400))
        r[i] += 4 * (s - ea)
        r[j] -= 4 * (s - ea)
    return r


def bt_loop(battles: list[tuple[int, int, float]], m: int) -> list[float]:
    wins = [[0.0] * m for _ in range(m)]
    for i, j, s in battles:
        wins[i][j] += s
        wins[j][i] += 1 - s
    won = [sum(row) for row in wins]
    p = [1.0] * m
    for _ in range(50):
        new = []
        for i in range(m):
            denom = 0.0
            for j in range(m):
                n = wins[i][j] + wins[j][i]
                if n:
                    denom += n / (p[i] + p[j])
            new.append(won[i] / denom if denom else p[i])
        top = max(new)
        p = [x / top for x in new]
    logs = [math.log10(x) if x > 0 else -math.inf for x in p]
    finite = [x for x in logs if math.isfinite(x)]
    centre = sum(finite) / len(finite)
    return [400 * (x - centre) + 1000 for x in logs]


def glicko_update(
    mu: float, phi: float, sigma: float, mu_j: float, phi_j: float, s: float
) -> tuple[float, float, float]:
    tau, eps = 0.5, 1e-6
    g = 1 / math.sqrt(1 + 3 * phi_j * phi_j / (math.pi * math.pi))
    e = 1 / (1 + math.exp(-g * (mu - mu_j)))
    v = 1 / (g * g * e * (1 - e))
    delta = v * g * (s - e)
    a = math.log(sigma * sigma)

    def f(x: float) -> float:
        ex = math.exp(x)
        return ex * (delta * delta - phi * phi - v - ex) / (2 * (phi * phi + v + ex) ** 2) - (
            x - a
        ) / (tau * tau)

    big_a = a
    if delta * delta > phi * phi + v:
        big_b = math.log(delta * delta - phi * phi - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    fa, fb = f(big_a), f(big_b)
    while abs(big_b - big_a) > eps:
        c = big_a + (big_a - big_b) * fa / (fb - fa)
        fc = f(c)
        if fc * fb <= 0:
            big_a, fa = big_b, fb
        else:
            fa /= 2
        big_b, fb = c, fc
    sigma_new = math.exp(big_a / 2)
    phi_new = 1 / math.sqrt(1 / (phi * phi + sigma_new * sigma_new) + 1 / v)
    return mu + phi_new * phi_new * g * (s - e), phi_new, sigma_new


def glicko_loop(battles: list[tuple[int, int, float]], m: int) -> list[float]:
    state = [(0.0, 350 / Q, 0.06)] * m
    for i, j, s in battles:
        (mi, pi, si), (mj, pj, sj) = state[i], state[j]
        state[i] = glicko_update(mi, pi, si, mj, pj, s)
        state[j] = glicko_update(mj, pj, sj, mi, pi, 1 - s)
    return [Q * x[0] + 1500 for x in state]


def percentile(sorted_values: list[float], q: float) -> float:
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def baseline(
    data: dict[str, np.ndarray], n_models: int, rounds: int, measured: int
) -> dict[str, Any]:
    """The whole computation in Python loops, `measured` rounds per criterion; returns the
    times, the drawn resamples and their ratings (for the cross-check)."""
    t0 = time.perf_counter()
    battles, _ = baseline_battles(data)
    t_majority = time.perf_counter() - t0
    rnd = random.Random(SEED)
    t0 = time.perf_counter()
    per_criterion = []
    for c in range(CRITERIA):
        n = len(battles[c])
        samples: dict[str, list[list[float]]] = {"elo": [], "bradley_terry": [], "glicko2": []}
        drawn = []
        for _ in range(measured):
            idx = rnd.choices(range(n), k=n)
            sample = [battles[c][i] for i in idx]
            drawn.append(idx)
            samples["elo"].append(elo_loop(sample, n_models))
            samples["bradley_terry"].append(bt_loop(sample, n_models))
            samples["glicko2"].append(glicko_loop(sample, n_models))
        summary = {}
        for name, rows in samples.items():
            cols = [sorted(col) for col in zip(*rows, strict=True)]
            summary[name] = [
                (sum(col) / len(col), percentile(col, 0.025), percentile(col, 0.975))
                for col in cols
            ]
        orders = []
        for intervals in summary.values():
            means = [row[0] for row in intervals]
            orders.append(sorted(range(n_models), key=means.__getitem__, reverse=True))
        points = [sum(n_models - 1 - o.index(i) for o in orders) for i in range(n_models)]
        per_criterion.append({"samples": samples, "indices": drawn, "borda": points})
    t_rounds = time.perf_counter() - t0
    return {
        "majority_s": t_majority,
        "rounds_s": t_rounds,
        "scaled_s": t_majority + t_rounds * rounds / measured,
        "per_criterion": per_criterion,
        "battles": battles,
    }


def cross_check(
    base: dict[str, Any], n_models: int, fast_out: list[dict[str, Any]]
) -> dict[str, float]:
    """Recompute the baseline's rounds with lib.ratings on the same resamples; max |diff|."""
    battles = base["battles"]
    a = np.array([x[0] for c in range(CRITERIA) for x in battles[c]])
    b = np.array([x[1] for c in range(CRITERIA) for x in battles[c]])
    s = np.array([x[2] for c in range(CRITERIA) for x in battles[c]])
    group = np.repeat(np.arange(CRITERIA), [len(x) for x in battles])
    indices = [np.array(pc["indices"]) for pc in base["per_criterion"]]
    measured = indices[0].shape[0]
    again: list[BootstrapResult] = bootstrap_groups(
        a, b, s, group, n_models, rounds=measured, indices=indices
    )
    diffs = {}
    for name in ("elo", "bradley_terry", "glicko2"):
        diffs[name] = max(
            float(
                np.max(
                    np.abs(
                        getattr(again[c], name).samples
                        - np.array(base["per_criterion"][c]["samples"][name])
                    )
                )
            )
            for c in range(CRITERIA)
        )
    # The fast majority must keep the baseline's battles: same count and outcome sum.
    diffs["majority"] = float(
        sum(
            abs(len(battles[c]) - fast_out[c]["battles"])
            + abs(sum(x[2] for x in battles[c]) - fast_out[c]["outcome_sum"])
            for c in range(CRITERIA)
        )
    )
    return diffs


def single_fits(
    battles: list[list[tuple[int, int, float]]], n_models: int, fc: dict[str, Any]
) -> str:
    """`elo`, `bradley_terry` and `glicko2` alone per criterion against FastChat's two plain
    fits: times and values (Bradley–Terry: each side's distance from the exact maximum)."""
    t = {"elo": 0.0, "bradley_terry": 0.0, "glicko2": 0.0}
    d_elo = d_ours = d_fc = 0.0
    for c, rows in enumerate(battles):
        a, b, s = (np.array(x) for x in zip(*rows, strict=True))
        t0 = time.perf_counter()
        ours_elo = elo(a, b, s, n_models)
        t1 = time.perf_counter()
        ours_bt = bradley_terry(a, b, s, n_models)
        t2 = time.perf_counter()
        glicko2(a, b, s, n_models)
        t3 = time.perf_counter()
        t["elo"] += t1 - t0
        t["bradley_terry"] += t2 - t1
        t["glicko2"] += t3 - t2
        names = [f"model-{i:02d}" for i in range(n_models)]
        fc_elo = np.array([fc["fits"]["elo"][c][n] for n in names])
        d_elo = max(d_elo, float(np.abs(ours_elo - fc_elo).max()))
        # The maximum itself: MM run to convergence (it only climbs the likelihood).
        exact = bradley_terry(a, b, s, n_models, BradleyTerryParams(iterations=20_000))
        fc_bt = fc["fits"]["mle"][c][names].to_numpy()
        fc_bt = fc_bt - fc_bt.mean() + 1000.0  # FastChat does not centre; ours averages 1000
        d_ours = max(d_ours, float(np.abs(ours_bt - exact).max()))
        d_fc = max(d_fc, float(np.abs(fc_bt - exact).max()))
    ft = fc["times"]
    return (
        f"single fits, {len(battles)} criteria: elo {t['elo']:.3f} s (FastChat compute_elo "
        f"{ft['elo']:.3f} s), bradley_terry {t['bradley_terry']:.3f} s (FastChat "
        f"compute_elo_mle_with_tie {ft['mle']:.3f} s), glicko2 {t['glicko2']:.3f} s; values: "
        f"Elo vs FastChat {d_elo:.2g}, Bradley–Terry from the exact maximum: ours (50 MM "
        f"iterations) {d_ours:.2g}, FastChat (L-BFGS-B) {d_fc:.2g} rating points"
    )


def main(scale: str) -> str:
    cfg = SCALES[scale]
    m, rounds, measured = cfg["models"], cfg["rounds"], cfg["baseline_rounds"]
    data = make_labels(cfg["pairs"], m)
    print(
        f"data: {cfg['pairs']} pairs, {m} models, {CRITERIA} criteria, {ANNOTATORS} labels each; "
        f"{rounds} bootstrap rounds; fast path on {WORKERS} threads; load average "
        f"{os.getloadavg()[0]:.2f}",
        flush=True,
    )
    started = time.perf_counter()
    cpu0 = time.process_time()
    out = fast(data, m, rounds)
    fast_s = time.perf_counter() - started
    fast_cpu = time.process_time() - cpu0
    for c, row in enumerate(out):
        res = row["result"]
        top = {
            k: int(ranking(getattr(res, k).mean)[0]) for k in ("elo", "bradley_terry", "glicko2")
        }
        print(
            f"  criterion {c:2d}: majority {row['majority_rate']:.1%}, top model "
            f"Elo {top['elo']} / BT {top['bradley_terry']} / Glicko-2 {top['glicko2']}, "
            f"Borda top {int(np.argmax(row['borda']))}",
            flush=True,
        )
    print(
        f"fast (plain fits and bootstrap): {fast_s:.2f} s wall, {fast_cpu:.2f} s CPU, peak "
        f"{peak_rss_mb():.0f} MB",
        flush=True,
    )

    battles, _ = baseline_battles(data)
    fc = fastchat(battles, rounds, cfg["fastchat_rounds"])
    ft = fc["times"]
    print(
        f"FastChat: {fc['total_s']:.1f} s — compute_elo {ft['elo']:.2f} s, "
        f"compute_elo_mle_with_tie {ft['mle']:.2f} s, get_bootstrap_result (Elo) "
        f"{ft['boot_elo']:.1f} s, get_bootstrap_result_elo_mle_with_tie {ft['boot_mle']:.1f} s "
        f"(pool of {os.cpu_count()}, start-up {fc['pool_s']:.2f} s); bootstraps: "
        f"{cfg['fastchat_rounds']} of {rounds} rounds per criterion measured, scaled",
        flush=True,
    )
    print(single_fits(battles, m, fc), flush=True)
    fits_check = 0.0
    for row, rows in zip(out, battles, strict=True):
        a, b, s = (np.array(x) for x in zip(*rows, strict=True))
        alone = elo(a, b, s, m)
        fits_check = max(fits_check, float(np.abs(row["rated"].elo - alone).max()))
    print(f"fits in the pass vs elo alone: {fits_check:.2g}", flush=True)

    base = baseline(data, m, rounds, measured)
    print(
        f"baseline: majority {base['majority_s']:.2f} s (all pairs); {measured} of {rounds} "
        f"rounds per criterion measured in {base['rounds_s']:.2f} s, scaled x{rounds / measured:g}"
        f" -> {base['scaled_s']:.1f} s (ratio {base['scaled_s'] / fast_s:.1f})",
        flush=True,
    )
    diffs = cross_check(base, m, out)
    print(
        "cross-check: "
        + ", ".join(f"{k} {v:.2g}" for k, v in diffs.items())
        + " (max |fast - baseline| over the baseline's resamples, rating points; majority: "
        "differences in kept battles and outcome sums)",
        flush=True,
    )
    print(f"load average at end {os.getloadavg()[0]:.2f}", flush=True)
    return line("pairwise-ranking", fast_s, "s", fc["total_s"], fc["total_s"] / fast_s)
