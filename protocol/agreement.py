"""Agreement of a panel on nominal labels (the REPA pairwise labels, or any hashable values).

An *item* is the list of labels one item (a pair, on one criterion) received, one per
annotator; items may have different numbers of labels (a missing label is simply absent).

- `majority_vote_rate`: the share of items that have a majority label (REPA, Table 4, "MV":
  89.0-100 % per criterion), with `protocol.pairwise.majority`.
- `unanimity_rate`: the share of items where every annotator gave the same label (REPA §3.2:
  the "consistent" items, the gold pool of issue #13).
- `fleiss_kappa`: Fleiss (1971), "Measuring nominal scale agreement among many raters",
  Psychological Bulletin 76(5): a fixed number of raters per item.
- `krippendorff_alpha_nominal`: Krippendorff (2011), "Computing Krippendorff's
  Alpha-Reliability", the nominal metric; defined with missing labels. Computed by the pinned
  `krippendorff` package (0.9.0) from the units x values count matrix.

REPA reports only the majority-vote rate; issue #13 asks for a chance-corrected agreement too.
Undefined values (no items, no variation to correct for chance) are None, never 0 or NaN.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import krippendorff
import numpy as np

from protocol.pairwise import Label, majority, unanimous

# One item's labels per item: REPA labels (or their codes) for the rates, which apply the
# protocol's majority; any hashable values for kappa and alpha, which only compare them.
LabelItems = Sequence[Sequence[Label | str]]
Items = Sequence[Sequence[Hashable]]


def count_matrix(items: Items) -> tuple[np.ndarray, list[Hashable]]:
    """Items x values matrix of label counts, and the values (columns) in first-seen order."""
    values: dict[Hashable, int] = {}
    for item in items:
        for value in item:
            values.setdefault(value, len(values))
    counts = np.zeros((len(items), len(values)), dtype=np.float64)
    for row, item in enumerate(items):
        for value, n in Counter(item).items():
            counts[row, values[value]] = n
    return counts, list(values)


def majority_vote_rate(items: LabelItems, min_votes: int = 2) -> float | None:
    """Share of items with a majority label (`pairwise.majority`); None without items.

    The denominator is every item given, so pass the items that count (REPA: every pair had
    its three labels); an item with fewer than `min_votes` labels has no majority.
    """
    if not items:
        return None
    return sum(majority(item, min_votes) is not None for item in items) / len(items)


def unanimity_rate(items: LabelItems, min_votes: int = 3) -> float | None:
    """Share of items whose labels are all the same, with at least `min_votes` of them."""
    if not items:
        return None
    return sum(unanimous(item, min_votes) is not None for item in items) / len(items)


def fleiss_kappa(items: Items) -> float | None:
    """Fleiss' kappa over items that all have the same number of labels (at least two).

    Fleiss (1971) defines kappa for a fixed number n of raters per item: P_i is the share of
    agreeing ordered rater pairs of item i, P-bar their mean, p_j the share of all labels in
    category j, P_e = sum p_j^2 and kappa = (P-bar - P_e) / (1 - P_e). Items with different
    numbers of labels raise ValueError rather than being dropped or reweighted silently: pass
    only complete items (the configured overlap), or use Krippendorff's alpha, which is defined
    for missing labels. None when undefined: no items, or every label the same (P_e = 1).
    """
    if not items:
        return None
    sizes = {len(item) for item in items}
    if len(sizes) > 1:
        raise ValueError(
            f"Fleiss' kappa needs the same number of labels per item, got {sorted(sizes)}"
        )
    counts, _values = count_matrix(items)
    return fleiss_kappa_counts(counts)


def fleiss_kappa_counts(counts: np.ndarray) -> float | None:
    """Fleiss' kappa from an items x categories count matrix with equal row sums (>= 2)."""
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 2 or counts.shape[0] == 0:
        return None
    raters = counts.sum(axis=1)
    n = float(raters[0])
    if not np.all(raters == n):
        raise ValueError("Fleiss' kappa needs the same number of labels per item")
    if n < 2:
        raise ValueError("Fleiss' kappa needs at least two labels per item")
    agreement = ((counts * counts).sum(axis=1) - n) / (n * (n - 1))
    shares = counts.sum(axis=0) / counts.sum()
    expected = float((shares * shares).sum())
    if math.isclose(expected, 1.0):
        return None
    return (float(agreement.mean()) - expected) / (1.0 - expected)


def krippendorff_alpha_nominal(items: Items) -> float | None:
    """Krippendorff's alpha, nominal metric, over items with any number of labels.

    Items with fewer than two labels are not pairable and carry no information (Krippendorff
    2011, step 2); they are left out. None when undefined: no pairable item, or a single value
    among the pairable ones (no expected disagreement).
    """
    counts, _values = count_matrix(items)
    counts = counts[counts.sum(axis=1) >= 2] if counts.size else counts
    if counts.shape[0] == 0 or int((counts.sum(axis=0) > 0).sum()) < 2:
        return None
    value = float(krippendorff.alpha(value_counts=counts, level_of_measurement="nominal"))
    return None if math.isnan(value) else value


@dataclass(frozen=True)
class Agreement:
    """One criterion's agreement numbers (see the functions of the same names)."""

    items: int
    majority_vote_rate: float | None
    unanimity_rate: float | None
    fleiss_kappa: float | None
    krippendorff_alpha: float | None


def agreement(items: LabelItems, *, min_votes: int = 2, unanimous_votes: int = 3) -> Agreement:
    """Every agreement number of one criterion's items.

    Fleiss' kappa is None when the items have different numbers of labels (see
    `fleiss_kappa`); the other numbers are defined for any panel sizes.
    """
    sizes = {len(item) for item in items}
    kappa = fleiss_kappa(items) if len(sizes) == 1 and min(sizes) >= 2 else None
    return Agreement(
        items=len(items),
        majority_vote_rate=majority_vote_rate(items, min_votes),
        unanimity_rate=unanimity_rate(items, unanimous_votes),
        fleiss_kappa=kappa,
        krippendorff_alpha=krippendorff_alpha_nominal(items),
    )


def agreement_by_criterion(
    items: Mapping[str, LabelItems], *, min_votes: int = 2, unanimous_votes: int = 3
) -> dict[str, Agreement]:
    """`agreement` per criterion key (REPA, Table 4 reports the majority-vote rate so)."""
    return {
        key: agreement(criterion_items, min_votes=min_votes, unanimous_votes=unanimous_votes)
        for key, criterion_items in items.items()
    }
