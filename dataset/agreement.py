"""Agreement of the experts on the dataset's triples, and the POLLUX result tables.

Pure functions on NumPy arrays / pandas frames, called by dataset.aggregation on the triples it
keeps: verdict confidence and mode share against what random labelling would give on the same
design, and Krippendorff's alpha (ordinal) per value of each dimension.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache
from typing import Any

import krippendorff
import numpy as np
import pandas as pd

# Agreement is reported along these dimensions of a triple.
DIMENSIONS = ("criterion", "group", "panel", "task", "model")


@lru_cache(maxsize=256)
def random_confidence_baseline(n_raters: int, n_values: int) -> tuple[float, float]:
    """(expected verdict confidence, probability of a unique mode) under random labelling.

    Exact, by enumerating how n raters choosing uniformly among k values split into counts:
    three raters, three values give 17/27 and 21/27.
    """
    if n_raters <= 0 or n_values <= 0:
        return (math.nan, math.nan)
    exp_conf = 0.0
    p_mode = 0.0
    total = n_values**n_raters
    # Compositions of n_raters into n_values non-negative parts (stars and bars).
    for bars in itertools.combinations(range(n_raters + n_values - 1), n_values - 1):
        parts = np.diff([-1, *bars, n_raters + n_values - 1]) - 1
        ways = math.factorial(n_raters)
        for part in parts:
            ways //= math.factorial(int(part))
        prob = ways / total
        top = int(parts.max())
        exp_conf += prob * top / n_raters
        if int((parts == top).sum()) == 1:
            p_mode += prob
    return (exp_conf, p_mode)


def krippendorff_ordinal(value_counts: np.ndarray, value_domain: list[int]) -> float | None:
    """Krippendorff's alpha (ordinal) from a units x values count matrix; None when undefined."""
    pairable = value_counts.sum(axis=1) >= 2
    counts = value_counts[pairable]
    if counts.shape[0] == 0 or (counts.sum(axis=0) > 0).sum() < 2:
        return None
    try:
        if counts.shape[0] > ALPHA_BLOCK_UNITS:
            value = _alpha_ordinal_blocked(counts, value_domain)
        else:
            value = float(
                krippendorff.alpha(
                    value_counts=counts, value_domain=value_domain, level_of_measurement="ordinal"
                )
            )
    except (ValueError, ZeroDivisionError):
        return None
    return None if math.isnan(value) else value


# Units whose coincidences are computed at once (see `_alpha_ordinal_blocked`).
ALPHA_BLOCK_UNITS = 4096


def _alpha_ordinal_blocked(counts: np.ndarray, value_domain: list[int]) -> float:
    """`krippendorff.alpha(value_counts=counts, ..., level_of_measurement="ordinal")`, the
    coincidence matrix summed over blocks of units.

    The library builds units x values x values arrays at once: ~100 MB for the "all" row at
    POLLUX scale (165,000 units, 5 values), the export's memory peak. Each block's units are
    summed here after the running total, in unit order, so every sum takes its terms in the
    library's own order and the result is the same float, bit for bit (tests check it); the
    rest is the library's code (krippendorff is pinned).
    """
    from krippendorff import krippendorff as module

    impl: Any = module  # its private helpers' annotations do not type-check as called
    dtype = np.dtype(np.float64)  # what alpha() passes them
    width = counts.shape[1]
    eye = np.eye(width)[np.newaxis, ...]
    total: np.ndarray | None = None
    for start in range(0, counts.shape[0], ALPHA_BLOCK_UNITS):
        block = counts[start : start + ALPHA_BLOCK_UNITS]
        # impl._coincidences, before its final sum over units.
        pairable = np.maximum(block.sum(axis=1), 2)
        pairs = block[..., np.newaxis] * block[:, np.newaxis, :] - block[:, np.newaxis, :] * eye
        terms = np.divide(pairs, (pairable - 1).reshape((-1, 1, 1)), dtype=dtype)
        total = terms.sum(axis=0) if total is None else np.concatenate([total[None], terms]).sum(0)
    assert total is not None
    n_v = total.sum(axis=0)
    expected = impl._random_coincidences(n_v, dtype=dtype)
    distances = impl._distances(
        np.asarray(value_domain), impl._distance_metric("ordinal"), n_v, dtype=dtype
    )
    return float(1 - (total * distances).sum() / (expected * distances).sum())


def value_count_matrix(
    estimates: pd.DataFrame, triple_ids: np.ndarray
) -> tuple[np.ndarray, list[int]]:
    """Units (triple_ids, in order) x score values matrix of non-NA score counts."""
    # Membership by binary search in the sorted ids: a hash table of every estimate's triple id
    # (pandas' isin) cost ~100 MB at 10x POLLUX; the columns are read as arrays, not copied.
    triple_of = estimates["triple_id"].to_numpy(dtype=np.int64)
    at = np.searchsorted(triple_ids, triple_of)
    member = at < len(triple_ids)
    member[member] = triple_ids[at[member]] == triple_of[member]
    take = member & ~estimates["is_na"].to_numpy(dtype=bool)
    del at, member
    values = estimates["score"].to_numpy(dtype=float)[take].astype(np.int64)
    domain = sorted(int(v) for v in np.unique(values))
    if not domain:
        return np.zeros((len(triple_ids), 0)), []
    col = np.searchsorted(domain, values)
    row = np.searchsorted(triple_ids, triple_of[take])
    width = len(domain)
    flat = np.bincount(row * width + col, minlength=len(triple_ids) * width)
    return flat.reshape(len(triple_ids), width).astype(np.float64), domain


def agreement_report(
    triples: pd.DataFrame,
    estimates: pd.DataFrame,
    *,
    dimensions: tuple[str, ...] = DIMENSIONS,
) -> pd.DataFrame:
    """Agreement per value of each dimension, plus an "all" row.

    Columns: dimension, key, triples, estimates, mean_confidence, mode_share, alpha_ordinal,
    baseline_confidence, baseline_mode_share. The baselines are what random labelling would
    give on the same design: each triple's number of scores and scale size.
    `triples` needs triple_id, n_scores, confidence, mode, scale_size and the dimension columns;
    `estimates` needs triple_id, score, is_na (the estimates kept in the dataset).
    """
    if not triples["triple_id"].is_monotonic_increasing:
        # The aggregation's triples come sorted (their ids are np.unique's): no copy then.
        triples = triples.sort_values("triple_id")
    triples = triples.reset_index(drop=True)
    ids = triples["triple_id"].to_numpy(dtype=np.int64)
    matrix, domain = value_count_matrix(estimates, ids)
    n_scores = triples["n_scores"].to_numpy(dtype=np.int64)
    scale = triples["scale_size"].to_numpy(dtype=np.int64)
    pairs = list(zip(n_scores.tolist(), scale.tolist(), strict=True))
    base = np.array(
        [random_confidence_baseline(n, k) if n > 0 else (math.nan, math.nan) for n, k in pairs]
    ).reshape(-1, 2)
    conf = triples["confidence"].to_numpy(dtype=float)
    has_mode = ~np.isnan(triples["mode"].to_numpy(dtype=float))
    scored = n_scores > 0
    n_est = triples["n_estimates"].to_numpy(dtype=np.int64)

    def row(dimension: str, key: Any, idx: np.ndarray) -> dict[str, Any]:
        s = idx[scored[idx]]
        return {
            "dimension": dimension,
            "key": str(key),
            "triples": len(idx),
            "estimates": int(n_est[idx].sum()),
            "mean_confidence": _mean(conf[s]),
            "mode_share": _mean(has_mode[s].astype(float)),
            "alpha_ordinal": krippendorff_ordinal(matrix[idx], domain) if domain else None,
            "baseline_confidence": _mean(base[s, 0]),
            "baseline_mode_share": _mean(base[s, 1]),
        }

    rows = [row("all", "all", np.arange(len(triples)))]
    for dimension in dimensions:
        if dimension not in triples.columns:
            continue
        for key, idx in triples.groupby(dimension, sort=True).indices.items():
            rows.append(row(dimension, key, np.asarray(idx)))
    return pd.DataFrame(rows)


def _mean(values: np.ndarray) -> float | None:
    values = values[~np.isnan(values)]
    return float(values.mean()) if len(values) else None


def result_tables(triples: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Model x criterion and model x task tables of mean scores (the POLLUX result tables)."""
    scored = triples[~triples["all_na"].astype(bool)]
    tables: dict[str, pd.DataFrame] = {}
    for name, column in (("model_criterion", "criterion"), ("model_task", "task")):
        if column not in scored.columns or scored.empty:
            tables[name] = pd.DataFrame({"model": []})
            continue
        pivot = scored.pivot_table(
            index="model", columns=column, values="mean", aggfunc="mean", sort=True
        )
        pivot.columns = [str(c) for c in pivot.columns]
        tables[name] = pivot.reset_index()
    return tables
