"""Judge-vs-experts statistics as pure functions (no Django): each has hand-made exact tests.

The stored report is computed with numpy (judging.report, on the aggregation's numpy mode and
verdict confidence); these plain-Python versions are the tests' independent reference of it
(tests/judging/test_stored_report.py), and `Confusion` is what the SVG picture draws.

Conventions: expert scores of a triple are its submitted, non-NA scores; the expert *mode* is
the single most frequent score, None on a tie (such triples are left out of mode-based numbers);
verdict confidence is the share of the panel that gave the modal score.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# Rank correlations have one home, lib.rankcorr (comparison uses them too and sits beside
# judging); they are re-exported here, where the judge report's statistics are.
from lib.rankcorr import kendall_tau_b, spearman

# The mode and the verdict confidence are protocol rules (one home: protocol.verdict).
from protocol.pairwise import outcome
from protocol.verdict import mode, verdict_confidence

__all__ = ["kendall_tau_b", "mode", "spearman", "verdict_confidence"]

SUBSTITUTION_DRAWS = 100


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def mae(pairs: Iterable[tuple[float, float | None]]) -> tuple[float | None, int]:
    """Mean absolute error of (judge, reference) pairs; pairs without a reference are skipped."""
    diffs = [abs(j - r) for j, r in pairs if r is not None]
    return (sum(diffs) / len(diffs) if diffs else None), len(diffs)


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank (a plain-Python reference of
    lib.rankcorr.average_ranks)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        rank = (i + j) / 2 + 1
        for k in range(i, j + 1):
            out[order[k]] = rank
        i = j + 1
    return out


def spearman_by(
    rows: Iterable[tuple[Hashable, float, float]],
) -> dict[Hashable, tuple[float | None, int]]:
    """rho per key of (key, judge, expert) rows, all criteria of a key pooled (as POLLUX does)."""
    groups: dict[Hashable, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for key, judge, expert in rows:
        groups[key][0].append(judge)
        groups[key][1].append(expert)
    return {key: (spearman(xs, ys), len(xs)) for key, (xs, ys) in sorted(groups.items(), key=str)}


def substituted_confidence(
    scores: Sequence[float], judge: float, *, seed: int, draws: int = SUBSTITUTION_DRAWS
) -> float | None:
    """Verdict confidence with the judge standing in for one randomly chosen expert, averaged
    over `draws` draws of a generator seeded per triple (the same numbers on every page load)."""
    if not scores:
        return None
    rng = random.Random(seed)  # noqa: S311 -- a reproducible draw, not a secret
    total = 0.0
    for _ in range(draws):
        replaced = list(scores)
        replaced[rng.randrange(len(scores))] = judge
        total += verdict_confidence(replaced) or 0.0
    return total / draws


@dataclass(frozen=True)
class Confusion:
    """Counts of (expert mode, judge score): rows are experts, columns the judge."""

    labels: list[float]
    matrix: list[list[int]]

    @property
    def total(self) -> int:
        return sum(map(sum, self.matrix))

    @property
    def agreement(self) -> float | None:
        total = self.total
        diag = sum(self.matrix[i][i] for i in range(len(self.labels)))
        return diag / total if total else None


def confusion(pairs: Iterable[tuple[float, float]]) -> Confusion:
    """Confusion matrix of (expert mode, judge) pairs over the union of values seen."""
    pairs = list(pairs)
    labels = sorted({e for e, _ in pairs} | {j for _, j in pairs})
    index = {v: i for i, v in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for expert, judge in pairs:
        matrix[index[expert]][index[judge]] += 1
    return Confusion(labels, matrix)


def length_bias(rows: Sequence[tuple[int, float, float]], *, bins: int = 4) -> dict[str, Any]:
    """Does the score follow the answer's length? rows: (length, judge, expert mean).

    Spearman's rho of length vs score for the judge and for the experts side by side, and both
    mean scores per length bin (rows sorted by length, split into `bins` near-equal parts).
    """
    ordered = sorted(rows, key=lambda r: r[0])
    n = len(ordered)
    table = []
    for b in range(min(bins, n)):
        part = ordered[b * n // bins : (b + 1) * n // bins]
        if not part:
            continue
        table.append(
            {
                "from": part[0][0],
                "to": part[-1][0],
                "n": len(part),
                "judge": mean([r[1] for r in part]),
                "expert": mean([r[2] for r in part]),
            }
        )
    lengths = [float(r[0]) for r in ordered]
    return {
        "judge_rho": spearman(lengths, [r[1] for r in ordered]),
        "expert_rho": spearman(lengths, [r[2] for r in ordered]),
        "bins": table,
    }


def self_preference(rows: Iterable[tuple[bool, float, float]]) -> dict[str, Any]:
    """Judge minus expert mean on answers of the judge's own family vs the others'.

    rows: (same_family, judge, expert mean). A positive `delta` means the judge is kinder to its
    own family than the experts are, beyond how kind it is to other models.
    """
    rows = list(rows)
    same = [j - e for s, j, e in rows if s]
    other = [j - e for s, j, e in rows if not s]
    gap_same, gap_other = mean(same), mean(other)
    delta = gap_same - gap_other if gap_same is not None and gap_other is not None else None
    return {
        "same_gap": gap_same,
        "other_gap": gap_other,
        "delta": delta,
        "n_same": len(same),
        "n_other": len(other),
    }


def same_family(family: str, model_name: str) -> bool:
    """The judge's family named inside the answer model's name ("qwen" in "Qwen2.5-7B")."""
    return bool(family) and family.strip().lower() in model_name.lower()


# --- the side-by-side (REPA) judge ------------------------------------------------------------

# The four labels, by their codes (protocol.pairwise.Label): Macro-F1 averages over them.
PAIRWISE_LABELS = ("a", "b", "both_good", "both_bad")
DECISIVE = frozenset({"a", "b"})


# A prediction that is none of the four labels (a parse failure "", "no_majority", None).
FAILURE = "failure"


def macro_f1(
    pairs: Iterable[tuple[str, str | None]], *, failure_class: bool = True
) -> float | None:
    """Macro-F1 over the labels of (gold, predicted) pairs, REPA's primary metric.

    REPA (as sklearn's `f1_score(average="macro")` on the raw predictions): every prediction
    that is not one of the four labels is one more class, "failure"; gold is never a failure,
    so that class scores F1 0 and pulls the average down. With `failure_class=False` (the
    variant shown beside it) a failure only lowers the recall of its gold label. The average is
    over the classes that occur as gold or as a prediction (sklearn's default `labels`). Worked
    example: gold a, a, b, both_good; predicted a, failure, b, both_good: a 2/3, b 1,
    both_good 1, failure 0 -> 2/3 (REPA); without the class (2/3 + 1 + 1) / 3 = 8/9.
    None for no pairs.
    """
    rows = [(g, p if p in PAIRWISE_LABELS else FAILURE) for g, p in pairs]
    if not rows:
        return None
    classes = PAIRWISE_LABELS + ((FAILURE,) if failure_class else ())
    scores = []
    for label in classes:
        tp = sum(1 for g, p in rows if g == label and p == label)
        fp = sum(1 for g, p in rows if g != label and p == label)
        fn = sum(1 for g, p in rows if g == label and p != label)
        if tp + fp + fn == 0:
            continue
        scores.append(2 * tp / (2 * tp + fp + fn))
    return sum(scores) / len(scores) if scores else None


def mean_std(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """Mean and population standard deviation (numpy's default, ddof=0) of the defined values:
    the spread of a score across the prompt templates, as REPA reports it."""
    xs = [v for v in values if v is not None]
    if not xs:
        return None, None
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def changed_share(pairs: Iterable[tuple[str, str]]) -> tuple[float | None, int]:
    """Position bias: the share of (label as placed, label with A and B swapped) pairs, both in
    the pair's own orientation, that differ. Pairs where either side has no label (a parse
    failure, no majority: "" or "no_majority") are left out. Returns (share, n)."""
    rows = [(x, y) for x, y in pairs if x in PAIRWISE_LABELS and y in PAIRWISE_LABELS]
    if not rows:
        return None, 0
    return sum(1 for x, y in rows if x != y) / len(rows), len(rows)


def longer_pick_share(rows: Iterable[tuple[str, int, int]]) -> dict[str, Any]:
    """Length bias: how often the longer response (characters) is preferred.

    rows: (label in the pair's orientation, length of A, length of B).

    - `share` (REPA, Table 7: "percentage of cases in which the longer response is
      preferred"): picks of the longer side over every labelled prediction (the four labels);
      "both good", "both bad" and pairs of equal length are in the denominator and are no
      longer pick. Failures and "no_majority" (no prediction) are left out, counted.
    - `one_sided_share` (variant): the same picks over the one-side picks between responses of
      different lengths only; 0.5 is no preference there.

    Worked example: a over (10, 5), b over (10, 5), b over (3, 9), a over (7, 7), both_good
    over (1, 9), a failure: 2 longer picks of 5 labelled = 0.4 (REPA); 2 of 3 one-side picks of
    different lengths = 2/3 (variant).
    """
    labelled = picks = longer = no_label = equal = 0
    for label, len_a, len_b in rows:
        if label not in PAIRWISE_LABELS:
            no_label += 1
            continue
        labelled += 1
        if label not in DECISIVE:
            continue
        if len_a == len_b:
            equal += 1
            continue
        picks += 1
        longer += (label == "a") == (len_a > len_b)
    return {
        "share": longer / labelled if labelled else None,
        "n": labelled,
        "longer": longer,
        "one_sided_share": longer / picks if picks else None,
        "n_one_sided": picks,
        "excluded_no_label": no_label,
        "equal_length": equal,
    }


def self_pick_confirmed(rows: Iterable[tuple[str, str, str]]) -> dict[str, Any]:
    """Self-preference as REPA reports it (§3.2, Llama2-13b-chat: "selected its own responses
    in 41.6% of pairwise comparisons ... only 23.5% of these self-selected responses aligned
    with human judgment").

    rows: (own side "a"/"b", judge label, expert majority label or "") over the pairs where
    exactly one response is of the judge's family. `self_pick_rate`: the judge's picks of its
    own side over its labelled predictions (failures and "no_majority" left out). `share`
    (REPA's self-preference figure): of those self-picks, the ones the expert majority also
    gave to that side, over the self-picks that have an expert majority (REPA is silent on
    undecided experts: they are left out and counted as `unconfirmable`).

    Worked example, own side a: judge/experts a/a, a/b, a/both_bad, a/"", b/b, both_good/
    both_good: 4 self-picks of 6 labelled = 2/3; 1 confirmed of the 3 with a majority = 1/3.
    """
    rows = list(rows)
    labelled = [r for r in rows if r[1] in PAIRWISE_LABELS]
    picks = [r for r in labelled if r[1] == r[0]]
    decided = [r for r in picks if r[2] in PAIRWISE_LABELS]
    confirmed = sum(1 for own, _, human in decided if human == own)
    return {
        "share": confirmed / len(decided) if decided else None,
        "confirmed": confirmed,
        "n": len(decided),
        "unconfirmable": len(picks) - len(decided),
        "self_pick_rate": len(picks) / len(labelled) if labelled else None,
        "self_picks": len(picks),
        "n_labelled": len(labelled),
    }


def win_rates(
    rows: Iterable[tuple[Hashable, Hashable, str]], tie_value: float = 0.5
) -> dict[Hashable, tuple[float, int]]:
    """Each model's mean score over its comparisons: (model A, model B, label) rows, a win 1, a
    loss 0, "both good" / "both bad" `tie_value` (protocol.pairwise.outcome's default);
    unlabelled rows (failures, no majority) left out. model -> (win rate, comparisons)."""
    totals: dict[Hashable, list[float]] = defaultdict(lambda: [0.0, 0])
    for model_a, model_b, label in rows:
        if label not in PAIRWISE_LABELS:
            continue
        score_a = outcome(label, tie_value)
        for model, score in ((model_a, score_a), (model_b, 1.0 - score_a)):
            totals[model][0] += score
            totals[model][1] += 1
    return {m: (s / n, int(n)) for m, (s, n) in totals.items()}


def ranking_agreement(
    judge: dict[Hashable, tuple[float, int]], experts: dict[Hashable, tuple[float, int]]
) -> dict[str, Any]:
    """Kendall's tau-b and Spearman's rho between the judge's and the experts' per-model win
    rates, over the models both rank."""
    models = sorted(set(judge) & set(experts), key=str)
    x = [judge[m][0] for m in models]
    y = [experts[m][0] for m in models]
    return {
        "n_models": len(models),
        "kendall_tau_b": kendall_tau_b(x, y),
        "spearman": spearman(x, y),
    }
