"""Panel agreement on nominal labels (protocol.agreement): the majority-vote rate, Fleiss' kappa
and Krippendorff's alpha, against published worked examples and independent hand computations."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from collections.abc import Hashable, Sequence
from fractions import Fraction

import numpy as np
import pytest

from protocol.agreement import (
    agreement,
    agreement_by_criterion,
    count_matrix,
    fleiss_kappa,
    fleiss_kappa_counts,
    krippendorff_alpha_nominal,
    majority_vote_rate,
    unanimity_rate,
)
from protocol.pairwise import Label

A, B, GOOD, BAD = Label.A, Label.B, Label.BOTH_GOOD, Label.BOTH_BAD

# --- Fleiss' kappa -------------------------------------------------------------------------

# Wikipedia, "Fleiss' kappa", worked example: 14 raters, 10 subjects, 5 categories; the article
# gives P-bar = 0.378, P_e = 0.213 and kappa = 0.210.
WIKIPEDIA_FLEISS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_is_wikipedias_worked_example() -> None:
    kappa = fleiss_kappa_counts(np.array(WIKIPEDIA_FLEISS))
    assert kappa == pytest.approx(0.210, abs=0.0005)


def test_fleiss_kappa_from_labels_is_the_count_matrix_one() -> None:
    # The same table written as each subject's 14 labels (categories 1..5).
    items = [
        [category for category, n in enumerate(row, start=1) for _ in range(n)]
        for row in WIKIPEDIA_FLEISS
    ]
    assert fleiss_kappa(items) == pytest.approx(fleiss_kappa_counts(np.array(WIKIPEDIA_FLEISS)))


def test_fleiss_kappa_on_a_hand_made_panel() -> None:
    # Three raters, four pairs. P_i = (sum n_ij^2 - 3) / 6: 1, 1/3, 1, 1/3, so P-bar = 2/3.
    # p_A = p_B = 6/12, P_e = 1/2; kappa = (2/3 - 1/2) / (1 - 1/2) = 1/3.
    items = [(A, A, A), (A, A, B), (B, B, B), (A, B, B)]
    assert fleiss_kappa(items) == pytest.approx(1 / 3)


def test_fleiss_kappa_is_one_for_perfect_agreement_and_negative_below_chance() -> None:
    assert fleiss_kappa([(A, A, A), (GOOD, GOOD, GOOD), (B, B, B)]) == pytest.approx(1.0)
    # Two raters who always disagree on two labels: P-bar = 0, P_e = 1/2, kappa = -1.
    assert fleiss_kappa([(A, B), (B, A), (A, B)]) == pytest.approx(-1.0)


def test_fleiss_kappa_is_undefined_without_variation_or_items() -> None:
    assert fleiss_kappa([(A, A, A), (A, A, A)]) is None  # P_e = 1
    assert fleiss_kappa([]) is None


def test_fleiss_kappa_refuses_items_with_different_numbers_of_labels() -> None:
    with pytest.raises(ValueError, match=r"same number of labels per item, got \[2, 3\]"):
        fleiss_kappa([(A, A, B), (A, B)])
    with pytest.raises(ValueError, match="at least two"):
        fleiss_kappa([(A,), (B,)])
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa_counts(np.array([[2, 1], [1, 1]]))


def test_fleiss_kappa_of_random_labels_is_near_zero() -> None:
    rng = random.Random(13)
    items = [[rng.choice(list(Label)) for _ in range(3)] for _ in range(20_000)]
    kappa = fleiss_kappa(items)
    assert kappa is not None and abs(kappa) < 0.02


# --- Krippendorff's alpha (nominal) ---------------------------------------------------------

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4 observers x 12 units
# example with missing values (None); the paper gives alpha = 0.743 for the nominal metric.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def units_of(observers: list[list[int | None]]) -> list[list[int]]:
    return [
        [value for row in observers if (value := row[unit]) is not None]
        for unit in range(len(observers[0]))
    ]


def alpha_by_coincidences(items: Sequence[Sequence[Hashable]]) -> Fraction | None:
    """Krippendorff (2011), nominal, written out with exact fractions: the coincidence matrix
    o_ck = sum over units of (ordered pairs of values c, k) / (m_u - 1), n_c its margins, and
    alpha = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c * n_k."""
    coincidences: defaultdict[tuple[Hashable, Hashable], Fraction] = defaultdict(Fraction)
    for item in items:
        m = len(item)
        if m < 2:
            continue
        for i, j in itertools.permutations(range(m), 2):
            coincidences[(item[i], item[j])] += Fraction(1, m - 1)
    margins: defaultdict[Hashable, Fraction] = defaultdict(Fraction)
    for (c, _k), o in coincidences.items():
        margins[c] += o
    n = sum(margins.values(), Fraction(0))
    expected = sum(
        (margins[c] * margins[k] for c in margins for k in margins if c != k), Fraction(0)
    )
    if expected == 0:
        return None
    observed = sum((o for (c, k), o in coincidences.items() if c != k), Fraction(0))
    return Fraction(1) - (n - 1) * observed / expected


def test_alpha_is_krippendorffs_published_nominal_example() -> None:
    units = units_of(KRIPPENDORFF_2011)
    assert krippendorff_alpha_nominal(units) == pytest.approx(0.743, abs=0.0005)
    # The independent computation agrees, so the published value checks both.
    hand = alpha_by_coincidences(units)
    assert hand is not None and float(hand) == pytest.approx(0.743, abs=0.0005)


def test_alpha_on_a_hand_made_case() -> None:
    # Units (A,A,A), (A,A,B), (B,B), (A,B,GOOD). Coincidences: o_AA = 3 + 1 = 4, o_AB = o_BA =
    # 1 + 1/2, o_BB = 2, o_A,GOOD = o_B,GOOD = 1/2 (each way). Margins n_A = 6, n_B = 4,
    # n_GOOD = 1, n = 11. Disagreement 5, sum_{c != k} n_c n_k = 2 (24 + 6 + 4) = 68.
    # alpha = 1 - 10 * 5 / 68 = 9/34.
    items = [(A, A, A), (A, A, B), (B, B), (A, B, GOOD)]
    assert alpha_by_coincidences(items) == Fraction(9, 34)
    assert krippendorff_alpha_nominal(items) == pytest.approx(9 / 34, rel=1e-12)


def test_alpha_agrees_with_the_coincidence_matrix_on_random_panels() -> None:
    rng = random.Random(2026)
    for _ in range(200):
        items = [
            [rng.choice(list(Label)[: rng.randint(2, 4)]) for _ in range(rng.randint(1, 5))]
            for _ in range(rng.randint(2, 12))
        ]
        hand = alpha_by_coincidences(items)
        got = krippendorff_alpha_nominal(items)
        if hand is None:
            assert got is None, items
        else:
            assert got == pytest.approx(float(hand), rel=1e-9, abs=1e-12), items


def test_alpha_leaves_out_unpairable_items() -> None:
    items = [(A, A, B), (B, B, B), (A, GOOD)]
    # A unit with one label carries no pair: it changes nothing.
    assert krippendorff_alpha_nominal([*items, (BAD,)]) == krippendorff_alpha_nominal(items)


def test_alpha_is_undefined_without_variation() -> None:
    assert krippendorff_alpha_nominal([(A, A), (A, A, A)]) is None
    assert krippendorff_alpha_nominal([(A,), (B,)]) is None  # no pairable unit
    assert krippendorff_alpha_nominal([]) is None


def test_alpha_of_random_labels_is_near_zero_and_one_for_perfect_agreement() -> None:
    rng = random.Random(7)
    items = [[rng.choice(list(Label)) for _ in range(3)] for _ in range(20_000)]
    alpha = krippendorff_alpha_nominal(items)
    assert alpha is not None and abs(alpha) < 0.02
    assert krippendorff_alpha_nominal([(A, A), (B, B, B), (BAD, BAD)]) == pytest.approx(1.0)


def test_count_matrix_counts_each_items_labels() -> None:
    counts, values = count_matrix([(A, B, A), (GOOD,), ()])
    assert values == [A, B, GOOD]
    assert counts.tolist() == [[2, 1, 0], [0, 0, 1], [0, 0, 0]]


# --- Majority-vote and unanimity rates ------------------------------------------------------


def test_majority_vote_rate_over_every_panel_of_three() -> None:
    panels = list(itertools.product(Label, repeat=3))
    # 24 of the 64 panels have three different labels (4 * 3 * 2).
    assert majority_vote_rate(panels) == pytest.approx((64 - 24) / 64)
    # 4 of 64 are unanimous.
    assert unanimity_rate(panels) == pytest.approx(4 / 64)


def test_rates_on_a_hand_made_criterion() -> None:
    items = [(A, A, B), (A, B, GOOD), (BAD, BAD, BAD), ("b", "b", "both_good")]
    assert majority_vote_rate(items) == pytest.approx(3 / 4)
    assert unanimity_rate(items) == pytest.approx(1 / 4)
    # An item of two labels of a three-slot panel: a majority of two, but not the gold pool.
    assert majority_vote_rate([(A, A)]) == 1.0
    assert unanimity_rate([(A, A)]) == 0.0
    assert majority_vote_rate([]) is None and unanimity_rate([]) is None


def test_the_agreement_summary_of_one_criterion() -> None:
    items = [(A, A, A), (A, A, B), (B, B, B), (A, B, B)]
    summary = agreement(items)
    assert summary.items == 4
    assert summary.majority_vote_rate == 1.0
    assert summary.unanimity_rate == pytest.approx(2 / 4)
    assert summary.fleiss_kappa == pytest.approx(1 / 3)
    hand = alpha_by_coincidences(items)
    assert hand is not None and summary.krippendorff_alpha == pytest.approx(float(hand))


def test_the_summary_leaves_kappa_out_for_uneven_panels_but_keeps_alpha() -> None:
    items = [(A, A, B), (A, B), (B, B, B)]
    summary = agreement(items)
    assert summary.fleiss_kappa is None
    hand = alpha_by_coincidences(items)
    assert hand is not None and summary.krippendorff_alpha == pytest.approx(float(hand))
    assert summary.majority_vote_rate == pytest.approx(2 / 3)


def test_agreement_per_criterion_keeps_each_criterions_items_apart() -> None:
    by_criterion = {
        "factuality": [(A, A, B), (A, B, GOOD)],
        "harmfulness": [(GOOD, GOOD, GOOD), (GOOD, GOOD, GOOD), (BAD, BAD, GOOD)],
    }
    summaries = agreement_by_criterion(by_criterion)
    assert list(summaries) == ["factuality", "harmfulness"]
    assert summaries["factuality"].majority_vote_rate == pytest.approx(1 / 2)
    assert summaries["harmfulness"].majority_vote_rate == 1.0
    assert summaries["harmfulness"].unanimity_rate == pytest.approx(2 / 3)
    for key, items in by_criterion.items():
        assert summaries[key] == agreement(items)
