"""The judge-vs-experts report of one run, computed with numpy/pandas once and stored.

`run_report(run)` reads the run's judge estimates and the expert estimates of the answers it
judged in one snapshot and returns the report as JSON-safe data; the service
`judging.services.report_compute` stores it (JudgeReport) with the fingerprint of its inputs
(`report_fingerprint`), and the run page only reads it. The numbers are the paper's (Appendix
D.2) on the POLLUX dataset: the aggregation's rules (dataset.aggregation) decide which
triples and expert scores count, and its numpy code gives each triple's mean, mode and verdict
confidence, so the report and the dataset agree by construction. judging.metrics keeps the same
statistics in plain Python as the independent reference of the tests.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
from django.db.models import Count, Max
from django.db.models.functions import Length

from dataset.aggregation import (
    AggregationSettings,
    aggregate_estimates,
    read_estimate_frame,
    snapshot,
)
from judging import kinds
from judging.models import JudgeEstimate, JudgeRun
from material.models import LanguageModel
from protocol.rationale import RationaleRule
from taxonomy.models import Criterion, Task
from taxonomy.services import task_tops
from work.models import Estimate, EstimateStatus, Triple, TripleKind

# Bump when the report's content or shape changes: every stored report becomes stale.
REPORT_VERSION = 1
# The paper's procedure for the judge's verdict confidence: 100 draws per triple (D.2.2).
SUBSTITUTION_DRAWS = 100
LENGTH_BINS = 4

# Why a judged triple has no dataset scores although the aggregation gave it no reason: no
# submitted estimate at all, or every one of them dropped for its rationale (rule 1).
NOT_SCORED = "no_expert_scores"
ALL_RATIONALES_INVALID = "invalid_rationale"

JUDGE_COLUMNS = (
    "triple_id",
    "score",
    "parse_ok",
    "model_id",
    "task_id",
    "criterion_id",
    "answer_length",
)


# --- inputs -----------------------------------------------------------------------------------


def judged_answers_sql(run_id: int) -> str:
    """A trusted SELECT of the answers the run judged (rule 2 needs whole answers)."""

    return (
        f"SELECT DISTINCT jt.answer_id FROM {JudgeEstimate._meta.db_table} je "  # noqa: S608 (trusted names, an integer)
        f"JOIN {Triple._meta.db_table} jt ON jt.id = je.triple_id WHERE je.run_id = {int(run_id)}"
    )


def report_fingerprint(run: JudgeRun) -> dict[str, Any]:
    """What the stored report was computed from; a different value means it is stale (each
    kind has its own: judging.kinds)."""
    return kinds.of(run).fingerprint(run)


def pointwise_fingerprint(run: JudgeRun) -> dict[str, Any]:
    """A pointwise run's report fingerprint.

    The judge side costs no query: judge estimates are only ever added, and the run's `done`
    and `parse_failures` are recounted from them in the transaction that adds them. The expert
    side is one aggregate over the submitted estimates of the answers the run judged (a
    submission, an edit, a reopening or a deletion changes their count or latest `updated_at`).
    The dataset rules' settings are part of it: changing them changes the dataset.
    """
    experts = Estimate.objects.filter(
        status=EstimateStatus.SUBMITTED,
        # Rubric scores only: a side-by-side label on a pair whose answer A was judged changes
        # nothing the report compares with the judge.
        triple__kind=TripleKind.POINTWISE,
        triple__answer_id__in=JudgeEstimate.objects.filter(run_id=run.pk).values(
            "triple__answer_id"
        ),
    ).aggregate(n=Count("id"), last=Max("updated_at"))
    rule = RationaleRule.current()
    return {
        "version": REPORT_VERSION,
        "judged": [run.done, run.parse_failures],
        "experts": [experts["n"], experts["last"].isoformat() if experts["last"] else None],
        "rules": [rule.min_words, rule.script, rule.script_share],
    }


def _judge_frame(run: JudgeRun) -> pd.DataFrame:
    rows = (
        JudgeEstimate.objects.filter(run=run)
        .annotate(answer_length=Length("triple__answer__text"))
        .values_list(
            "triple_id",
            "score",
            "parse_ok",
            "triple__answer__model_id",
            "triple__answer__instruction__task_id",
            "triple__criterion_id",
            "answer_length",
        )
        .order_by("triple_id")
    )
    return pd.DataFrame.from_records(list(rows), columns=list(JUDGE_COLUMNS))


def _labels(judged: pd.DataFrame) -> pd.DataFrame:
    """Names for the breakdowns: model, task type (top-level task), task group, criterion."""

    tops = task_tops()
    tasks = {
        pk: (name, group)
        for pk, name, group in Task.objects.values_list("pk", "name_en", "group__name_en")
    }
    models = dict(LanguageModel.objects.values_list("pk", "name"))
    criteria = dict(Criterion.objects.values_list("pk", "name_en"))
    out = judged.copy()
    out["model"] = [str(models.get(m)) for m in out["model_id"].tolist()]
    out["task"] = [tasks.get(tops.get(t, t), ("", ""))[0] for t in out["task_id"].tolist()]
    out["task_group"] = [tasks.get(t, ("", ""))[1] for t in out["task_id"].tolist()]
    out["criterion"] = [str(criteria.get(c)) for c in out["criterion_id"].tolist()]
    return out


def run_report(run: JudgeRun) -> tuple[dict[str, Any], dict[str, Any]]:
    """(report, fingerprint) of the run, read in one consistent snapshot."""

    with snapshot():
        run = JudgeRun.objects.select_related("config").get(pk=run.pk)
        return kinds.of(run).report(run)


def pointwise_report(run: JudgeRun) -> tuple[dict[str, Any], dict[str, Any]]:
    """A pointwise run's (report, fingerprint), inside the caller's snapshot."""
    fingerprint = pointwise_fingerprint(run)
    judged = _labels(_judge_frame(run))
    frame = read_estimate_frame(answers_sql=judged_answers_sql(run.pk))
    return compute_report(judged, frame, family=run.config.model_family), fingerprint


# --- the computation --------------------------------------------------------------------------


def compute_report(judged: pd.DataFrame, estimates: pd.DataFrame, *, family: str) -> dict[str, Any]:
    """The report from frames: `judged` (JUDGE_COLUMNS plus model, task, task_group, criterion
    labels, sorted by triple_id) and `estimates` (dataset.aggregation.read_estimate_frame of
    the judged answers).

    Only triples in the dataset count (the aggregation's rules: invalid rationales dropped,
    answers with a critical-violation vote, triples left with too few estimates and all-NA
    triples excluded), with their kept expert scores. An unfiltered summary over every
    submitted expert score is given beside it, labelled as such. Breakdowns by answer model,
    task type and criterion name: the paper's pooling (Appendix D.2).
    """

    judged = judged.sort_values("triple_id", kind="stable").reset_index(drop=True)
    triple_ids = judged["triple_id"].to_numpy(dtype=np.int64)
    judge = judged["score"].to_numpy(dtype=float)
    parsed = judged["parse_ok"].to_numpy(dtype=bool) & ~np.isnan(judge)
    n_judged = len(judged)

    # The dataset's view of the judged triples (the aggregation's own rules).
    result = aggregate_estimates(estimates, AggregationSettings())
    reasons = pd.Series(
        result.triples["excluded_reason"].astype(str).to_numpy(),
        index=result.triples["triple_id"].to_numpy(dtype=np.int64),
    )
    submitted = np.isin(triple_ids, estimates["triple_id"].to_numpy(dtype=np.int64))
    known = np.isin(triple_ids, reasons.index.to_numpy())
    excluded = np.where(
        known,
        reasons.reindex(triple_ids).fillna("").to_numpy(dtype=object),
        np.where(submitted, ALL_RATIONALES_INVALID, NOT_SCORED),
    )
    in_dataset = excluded == ""
    kept = estimates[estimates["estimate_id"].isin(result.kept_estimate_ids).to_numpy()]
    dataset = _panels(kept, triple_ids, judge)
    # The labelled unfiltered view: every submitted non-NA score of the judged triples.
    everything = _panels(estimates, triple_ids, judge)

    rows = np.flatnonzero(in_dataset & parsed)
    unfiltered_rows = np.flatnonzero((everything["n"] > 0) & parsed)
    reasons_count = Counter(r for r in excluded.tolist() if r and r != NOT_SCORED)
    labels = {
        k: judged[k].astype(str).to_numpy(dtype=object) for k in ("model", "task", "criterion")
    }
    report: dict[str, Any] = {
        "n_judged": n_judged,
        "n_with_experts": int(in_dataset.sum()),
        "n_failed_with_experts": int((in_dataset & ~parsed).sum()),
        "parse_failure_rate": _num(float((~parsed).sum()) / n_judged) if n_judged else None,
        "excluded": [[reason, n] for reason, n in sorted(reasons_count.items())],
        **_summary(judge, dataset, rows),
        "unfiltered": _summary(judge, everything, unfiltered_rows),
        "by_model": _breakdown(judge, dataset, rows, labels["model"]),
        "by_task": _breakdown(judge, dataset, rows, labels["task"]),
        "by_criterion": _breakdown(judge, dataset, rows, labels["criterion"]),
        "confusions": _confusions(
            judge, dataset, rows, judged["task_group"].astype(str).to_numpy(dtype=object)
        ),
        "length": _length_bias(
            judged["answer_length"].fillna(0).to_numpy(dtype=np.int64)[rows],
            judge[rows],
            dataset["mean"][rows],
        ),
        "self_preference": (
            _self_preference(family, labels["model"][rows], judge[rows], dataset["mean"][rows])
            if family
            else None
        ),
        # Triples where the judge differs from a unanimous panel of two or more.
        "contradictions": triple_ids[
            rows[
                (dataset["n"][rows] >= 2)
                & (dataset["confidence"][rows] == 1.0)
                & (judge[rows] != dataset["mode"][rows])
            ]
        ].tolist(),
    }
    return report


def _panels(
    estimates: pd.DataFrame, triple_ids: np.ndarray, judge: np.ndarray
) -> dict[str, np.ndarray]:
    """Per judged triple (aligned with `triple_ids`): number of non-NA expert scores, their mean,
    mode (NaN on a tie), verdict confidence (aggregation's numpy code, no rule applied: the
    estimates given are the ones that count), and the confidence with the judge in for one
    random expert."""

    mine = estimates[estimates["triple_id"].isin(triple_ids).to_numpy()]
    scored = mine[~mine["is_na"].to_numpy(dtype=bool) & mine["score"].notna().to_numpy()]
    n = np.zeros(len(triple_ids), dtype=np.int64)
    out = {
        "n": n,
        "mean": np.full(len(triple_ids), np.nan),
        "mode": np.full(len(triple_ids), np.nan),
        "confidence": np.full(len(triple_ids), np.nan),
        "with_judge": np.full(len(triple_ids), np.nan),
    }
    if scored.empty:
        return out
    stats = aggregate_estimates(
        scored,
        AggregationSettings(
            drop_invalid_rationale=False, drop_after_critical=False, min_estimates=0
        ),
    ).triples
    pos = np.searchsorted(triple_ids, stats["triple_id"].to_numpy(dtype=np.int64))
    n[pos] = stats["n_scores"].to_numpy(dtype=np.int64)
    out["mean"][pos] = stats["mean"].to_numpy(dtype=float)
    out["mode"][pos] = stats["mode"].to_numpy(dtype=float)
    out["confidence"][pos] = stats["confidence"].to_numpy(dtype=float)
    row = np.searchsorted(triple_ids, scored["triple_id"].to_numpy(dtype=np.int64))
    out["with_judge"] = substituted_confidence(
        row, scored["score"].to_numpy(dtype=float), n, judge, triple_ids
    )
    return out


def substituted_confidence(
    row: np.ndarray,
    scores: np.ndarray,
    n: np.ndarray,
    judge: np.ndarray,
    seeds: np.ndarray,
    draws: int = SUBSTITUTION_DRAWS,
) -> np.ndarray:
    """Verdict confidence with the judge standing in for one randomly chosen expert, averaged
    over `draws` draws per triple (NaN where fewer than two scores or no judge score).

    `row`/`scores`: each expert score and the index of its triple. Each triple's draws come from
    `random.Random(triple id)`, picking a position in its sorted scores (as the plain-Python
    reference, judging.metrics.substituted_confidence, does): the same numbers on every
    computation. Replacing an expert depends only on the value he gave, so the draws are
    counted per value and every replacement is evaluated once, on a triples x values table.
    """
    out = np.full(len(n), np.nan)
    panel = (n >= 2) & ~np.isnan(judge)
    if not panel.any():
        return out
    use = panel[row]
    row, scores = row[use], scores[use]
    domain, value = np.unique(np.concatenate([scores, judge[panel]]), return_inverse=True)
    score_idx, judge_idx_p = value[: len(scores)], value[len(scores) :]
    width = len(domain)
    counts = np.bincount(row * width + score_idx, minlength=len(n) * width).reshape(len(n), width)
    judge_idx = np.zeros(len(n), dtype=np.int64)
    judge_idx[panel] = judge_idx_p
    # Confidence after replacing one expert who gave value v by the judge, for every v.
    after = np.zeros((len(n), width))
    with np.errstate(invalid="ignore", divide="ignore"):
        for v in range(width):
            c = counts.copy()
            c[:, v] -= 1
            c[np.arange(len(n)), judge_idx] += 1
            after[:, v] = c.max(axis=1) / n
    # How many draws hit an expert of each value: positions in the sorted scores.
    idx = np.flatnonzero(panel)
    picks = seeded_randbelow(seeds[idx], n[idx], draws)  # (panels, draws) positions
    per_value = np.zeros((len(idx), width))
    starts = np.cumsum(counts[idx], axis=1) - counts[idx]  # first position of each value
    for v in range(width):
        lo = starts[:, v : v + 1]
        hit = (picks >= lo) & (picks < lo + counts[idx, v : v + 1])
        per_value[:, v] = hit.sum(axis=1)
    out[idx] = (per_value * after[idx]).sum(axis=1) / draws
    return out


# --- Python's random.Random(seed).randrange(n), vectorised over seeds ----------------------
# CPython's Mersenne Twister (Modules/_randommodule.c): a seed below 2**32 is a one-word key of
# init_by_array; randrange(n) takes getrandbits(n.bit_length()) until one is below n.

_MT_N, _MT_M = 624, 397
_FIRST_OUTPUTS = 256
_U32 = np.uint32


@lru_cache(maxsize=1)
def _genrand_base() -> np.ndarray:
    mt = [19650218]
    for i in range(1, _MT_N):
        mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + i) & 0xFFFFFFFF)
    return np.array(mt, dtype=np.uint32)


def _mt_seed(seeds: np.ndarray) -> np.ndarray:
    """States (624 x len(seeds)) of random.Random(seed) for 0 <= seed < 2**32."""
    mt = np.repeat(_genrand_base()[:, None], len(seeds), axis=1)
    key = seeds.astype(np.uint32)
    i = 1
    for _ in range(_MT_N):
        prev = mt[i - 1]
        mt[i] = (mt[i] ^ ((prev ^ (prev >> _U32(30))) * _U32(1664525))) + key
        i += 1
        if i >= _MT_N:
            mt[0] = mt[_MT_N - 1]
            i = 1
    for _ in range(_MT_N - 1):
        prev = mt[i - 1]
        mt[i] = (mt[i] ^ ((prev ^ (prev >> _U32(30))) * _U32(1566083941))) - _U32(i)
        i += 1
        if i >= _MT_N:
            mt[0] = mt[_MT_N - 1]
            i = 1
    mt[0] = _U32(0x80000000)
    return mt


def _twist_part(mt: np.ndarray, lo: int, hi: int, src: int) -> None:
    y = (mt[lo:hi] & _U32(0x80000000)) | (mt[lo + 1 : hi + 1] & _U32(0x7FFFFFFF))
    mt[lo:hi] = mt[src : src + hi - lo] ^ (y >> _U32(1)) ^ ((y & _U32(1)) * _U32(0x9908B0DF))


def _mt_twist(mt: np.ndarray, upto: int = _MT_N) -> None:
    """The generator's twist, in blocks whose sources are already final; only the first
    `upto` words are needed (and computed): each depends on earlier words only."""
    n, m = _MT_N, _MT_M
    _twist_part(mt, 0, min(upto, n - m), m)  # sources not yet twisted
    if upto > n - m:
        _twist_part(mt, n - m, min(upto, 2 * (n - m)), 0)  # sources twisted by the first block
    if upto > 2 * (n - m):
        _twist_part(mt, 2 * (n - m), min(upto, n - 1), n - m)  # ... by the second
    if upto >= n:
        y = (mt[n - 1] & _U32(0x80000000)) | (mt[0] & _U32(0x7FFFFFFF))
        mt[n - 1] = mt[m - 1] ^ (y >> _U32(1)) ^ ((y & _U32(1)) * _U32(0x9908B0DF))


def _temper(y: np.ndarray) -> np.ndarray:
    y = y ^ (y >> _U32(11))
    y = y ^ ((y << _U32(7)) & _U32(0x9D2C5680))
    y = y ^ ((y << _U32(15)) & _U32(0xEFC60000))
    return y ^ (y >> _U32(18))


def seeded_randbelow(
    seeds: np.ndarray, n: np.ndarray, draws: int, *, chunk: int = 8192
) -> np.ndarray:
    """(len(seeds), draws): row i is [random.Random(seeds[i]).randrange(n[i]) for _ in draws],
    the same numbers, for seeds in [0, 2**32) and 1 <= n < 2**32.

    The first `_FIRST_OUTPUTS` outputs of each generator are enough for 100 draws from a panel
    of up to ten (each output is accepted with probability over 1/2); a row they do not cover
    (about one in ten thousand) is drawn by Python's own generator.
    """
    seeds = np.asarray(seeds, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    if len(seeds) and (seeds.min() < 0 or seeds.max() >= 2**32):
        raise ValueError("seeds must be in [0, 2**32)")
    out = np.zeros((len(seeds), draws), dtype=np.int64)
    first = min(_MT_N, max(_FIRST_OUTPUTS, 4 * draws))
    for start in range(0, len(seeds), chunk):
        nn = n[start : start + chunk]
        mt = _mt_seed(seeds[start : start + chunk])
        _mt_twist(mt, first)
        shift = (32 - _bit_length(nn)).astype(np.uint32)
        # (seeds, outputs), each output's top bits: getrandbits(n.bit_length()).
        r = np.ascontiguousarray((_temper(mt[:first]) >> shift[None, :]).T)
        ok = r < nn[:, None].astype(np.uint32)
        ok &= np.cumsum(ok, axis=1, dtype=np.int32) <= draws
        full = ok.sum(axis=1) == draws
        block = out[start : start + len(nn)]
        if full.all():
            block[:] = r[ok].reshape(-1, draws)
        else:
            block[full] = r[full][ok[full]].reshape(-1, draws)
        for i in np.flatnonzero(~full).tolist():
            rng = random.Random(int(seeds[start + i]))  # noqa: S311 -- reproducible draws
            block[i] = [rng.randrange(int(nn[i])) for _ in range(draws)]
    return out


def _bit_length(n: np.ndarray) -> np.ndarray:
    bits = np.zeros(len(n), dtype=np.int64)
    rest = n.copy()
    while (rest > 0).any():
        bits += rest > 0
        rest >>= 1
    return bits


# --- summaries --------------------------------------------------------------------------------


def _num(value: float | None) -> float | None:
    """A JSON-safe number: NaN (an empty mean) is None."""
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _mean(values: np.ndarray) -> float | None:
    return _num(float(values.mean())) if len(values) else None


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman's rho with average ranks for ties; None for fewer than two pairs or a constant
    side (it has no ranking to agree with)."""
    if len(x) < 2:
        return None
    rx = pd.Series(x).rank(method="average").to_numpy()
    ry = pd.Series(y).rank(method="average").to_numpy()
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return None
    return _num(np.corrcoef(rx, ry)[0, 1])


def _summary(judge: np.ndarray, panels: dict[str, np.ndarray], rows: np.ndarray) -> dict[str, Any]:
    """MAE vs the expert mode (triples without a mode left out, D.2.1) and vs the mean (the
    reference of regression judges), Spearman's rho against the expert mean, and verdict
    confidence with the judge standing in for one expert (D.2.2) over triples with two or more
    expert scores (with one, both are trivially 1)."""
    j, mean, mode = judge[rows], panels["mean"][rows], panels["mode"][rows]
    has_mode = ~np.isnan(mode)
    two = panels["n"][rows] >= 2
    return {
        "n": len(rows),
        "mae_mode": [_mean(np.abs(j[has_mode] - mode[has_mode])), int(has_mode.sum())],
        "mae_mean": [_mean(np.abs(j - mean)), len(rows)],
        "rho_all": spearman(j, mean),
        "confidence": {
            "n": int(two.sum()),
            "experts": _mean(panels["confidence"][rows][two]),
            "with_judge": _mean(panels["with_judge"][rows][two]),
            "draws": SUBSTITUTION_DRAWS,
        },
    }


def _breakdown(
    judge: np.ndarray, panels: dict[str, np.ndarray], rows: np.ndarray, keys: np.ndarray
) -> list[dict[str, Any]]:
    """`_summary` per key (sorted)."""
    groups = pd.Series(rows).groupby(keys[rows]).indices if len(rows) else {}
    return [
        {"key": str(key), **_summary(judge, panels, rows[np.asarray(groups[key])])}
        for key in sorted(groups)
    ]


def _confusions(
    judge: np.ndarray, panels: dict[str, np.ndarray], rows: np.ndarray, groups: np.ndarray
) -> list[dict[str, Any]]:
    """Counts of (expert mode, judge score) per task group: rows experts, columns the judge."""
    with_mode = rows[~np.isnan(panels["mode"][rows])]
    out = []
    for group in sorted(set(groups[with_mode].tolist())):
        idx = with_mode[groups[with_mode] == group]
        expert, j = panels["mode"][idx], judge[idx]
        labels, inverse = np.unique(np.concatenate([expert, j]), return_inverse=True)
        k = len(labels)
        matrix = np.bincount(inverse[: len(idx)] * k + inverse[len(idx) :], minlength=k * k)
        matrix = matrix.reshape(k, k)
        total = int(matrix.sum())
        out.append(
            {
                "group": group,
                "labels": [float(v) for v in labels],
                "matrix": matrix.tolist(),
                "total": total,
                "agreement": _num(np.trace(matrix) / total) if total else None,
            }
        )
    return out


def _length_bias(lengths: np.ndarray, judge: np.ndarray, expert: np.ndarray) -> dict[str, Any]:
    """Does the score follow the answer's length? Spearman's rho of length vs score for the
    judge and the experts (mean), and both mean scores per length bin (rows sorted by length,
    split into LENGTH_BINS near-equal parts)."""
    order = np.argsort(lengths, kind="stable")
    lengths, judge, expert = lengths[order], judge[order], expert[order]
    n = len(order)
    bins = []
    for b in range(min(LENGTH_BINS, n)):
        lo, hi = b * n // LENGTH_BINS, (b + 1) * n // LENGTH_BINS
        if hi <= lo:
            continue
        bins.append(
            {
                "from": int(lengths[lo]),
                "to": int(lengths[hi - 1]),
                "n": hi - lo,
                "judge": _mean(judge[lo:hi]),
                "expert": _mean(expert[lo:hi]),
            }
        )
    as_float = lengths.astype(float)
    return {
        "judge_rho": spearman(as_float, judge),
        "expert_rho": spearman(as_float, expert),
        "bins": bins,
    }


def same_family(family: str, model_names: Sequence[str] | np.ndarray) -> np.ndarray:
    """The judge's family named inside each answer model's name ("qwen" in "Qwen2.5-7B")."""
    needle = family.strip().lower()
    return np.array([bool(needle) and needle in str(m).lower() for m in model_names], dtype=bool)


def _self_preference(
    family: str, models: np.ndarray, judge: np.ndarray, expert: np.ndarray
) -> dict[str, Any]:
    """Judge minus expert mean on answers of the judge's own family vs the others'. A positive
    `delta`: the judge is kinder to its own family than the experts are, beyond how kind it is
    to other models."""
    same = same_family(family, models)
    gap = judge - expert
    same_gap, other_gap = _mean(gap[same]), _mean(gap[~same])
    return {
        "same_gap": same_gap,
        "other_gap": other_gap,
        "delta": same_gap - other_gap if same_gap is not None and other_gap is not None else None,
        "n_same": int(same.sum()),
        "n_other": int((~same).sum()),
    }
