"""ПРО//ЧТЕНИЕ markup comparison (protocol.spans): hand computations and exhaustive search."""

from __future__ import annotations

import random
from itertools import permutations

import numpy as np
import pytest

from protocol.spans import (
    Fragment,
    Words,
    jaccard_distance,
    loss,
    loss_matrix,
    match,
    match_brute_force,
    match_exhaustive,
    metrics,
    normalize_code,
    pair_accuracy,
    star,
    text_accuracy,
    total_loss,
    weighted,
    word_spans,
)

TEXT = "Все удивлялись его силой и умом, а потом ушли домой."
#       0123456789012345678901234567890123456789012345678901
# words: Все[0,3) удивлялись[4,14) его[15,18) силой[19,24) и[25,26) умом[27,31) а[33,34)
#        потом[35,40) ушли[41,45) домой[46,51)


def F(start: int | None, end: int | None, code: str = "Г.упр", **kw: str) -> Fragment:
    return Fragment(start, end, code, **kw)


def test_codes_ignore_case_and_latin_look_alikes() -> None:
    assert normalize_code("г.УПР") == normalize_code("Г.упр")
    assert normalize_code("P.знач") == normalize_code("Р.знач")  # Latin P, Cyrillic Р
    assert normalize_code("Р.знач") != normalize_code("Р.прост")


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [
        (F(19, 24), F(19, 24), 0.0),  # the same fragment and type
        (F(19, 24), F(19, 24, "Р.знач"), 1.0),  # the same span, other type
        (F(15, 24), F(19, 24), 1 - 5 / 9 + 1),  # overlap, other start, same type
        (F(19, 24), F(19, 31), 1 - 5 / 12),  # common start, same type: 0..1
        (F(0, 3), F(46, 51), 3.0),  # disjoint, same type
        (F(0, 3), F(46, 51, "Р.знач"), 4.0),  # disjoint, other type
        (F(15, 24), F(19, 31, "Р.знач"), (1 - 5 / 16) + 1 + 1),  # 2..3
        (F(None, None, "С.тема"), F(None, None, "С.тема"), 0.0),  # whole-text errors
        (F(None, None, "С.тема"), F(0, 3, "С.тема"), 3.0),
    ],
)
def test_the_loss_is_the_regulations_formula(x: Fragment, y: Fragment, expected: float) -> None:
    assert loss(x, y) == pytest.approx(expected)


def test_jaccard_distance_is_over_characters() -> None:
    assert jaccard_distance(F(0, 10), F(5, 15)) == pytest.approx(1 - 5 / 15)
    assert jaccard_distance(F(0, 10), F(10, 20)) == 1.0


def test_the_regulations_example_shape_matches_what_pays() -> None:
    # X: 2 fragments, Y: 3. x0 = y0 exactly; x1 overlaps y1 (same start) and y2 (other start).
    xs = [F(0, 3), F(19, 31)]
    ys = [F(0, 3), F(19, 24), F(25, 31)]
    pairs = match(xs, ys)
    assert pairs == [(0, 0), (1, 1)]
    # Q = 0 + (1 − 5/12) + one unmatched y.
    assert total_loss(loss_matrix(xs, ys), pairs) == pytest.approx(1 - 5 / 12 + 1)


def test_a_pair_that_costs_more_than_leaving_both_unmatched_is_not_made() -> None:
    # Overlapping, other start, other type: L = J + 2 > 2, worse than two unmatched (2).
    assert match([F(15, 24)], [F(19, 31, "Р.знач")]) == []


def _random_markup(rng: random.Random, n: int, length: int = 60) -> list[Fragment]:
    out = []
    for _ in range(n):
        s = rng.randrange(0, length - 1)
        e = rng.randrange(s + 1, min(length, s + 15) + 1)
        out.append(F(s, e, rng.choice(["Г.упр", "Р.знач", "Г.согл"])))
    return out


@pytest.mark.parametrize("seed", range(60))
def test_the_hungarian_optimum_equals_the_exhaustive_searches(seed: int) -> None:
    rng = random.Random(seed)
    xs = _random_markup(rng, rng.randint(0, 5))
    ys = _random_markup(rng, rng.randint(0, 5))
    L = loss_matrix(xs, ys)
    fast = total_loss(L, match(xs, ys))
    regulations = total_loss(L, match_exhaustive(xs, ys))
    brute = total_loss(L, match_brute_force(xs, ys))
    assert fast == pytest.approx(brute)
    assert regulations == pytest.approx(brute)


def test_each_metric_on_a_hand_made_pair() -> None:
    # X (the checked markup): 4 fragments; Y (the reference): 3.
    xs = [
        F(19, 24, "Г.упр", subtype="упр", correction="силе"),  # = y0, same correction
        F(0, 14, "Р.знач", comment="Неверное слово."),  # ~ y1 (same start, other end)
        F(35, 45, "Г.согл", correction="ушёл"),  # unmatched
        F(27, 31, "Р.прост"),  # = y2 span, other type
    ]
    ys = [
        F(19, 24, "Г.упр", subtype="упр", correction="силе"),
        F(0, 3, "Р.знач", comment="неверное  слово"),
        F(27, 31, "Р.знач"),
    ]
    got = metrics(xs, ys, TEXT)
    # Pairs: x0-y0 (L 0), x1-y1 (J = 1 − 3/14, same start and type), x3-y2 (L 1).
    assert match(xs, ys) == [(0, 0), (1, 1), (3, 2)]
    p, r = 3 / 4, 3 / 3
    assert got["M2"] == pytest.approx(100 * 2 * p * r / (p + r))
    assert got["M3"] == pytest.approx(100 * 2 / 4)  # x0, x1 have the matched code
    # M4: x0 same subtype; x1 same comment once normalised; x3 neither subtype nor comment
    # on both sides (equal); x2 unmatched.
    assert got["M4"] == pytest.approx(100 * 3 / 4)
    # M5 words: x0/y0 {силой} 1; x1 {Все, удивлялись} vs {Все} 1/2; x3/y2 {умом} 1; x2 0.
    assert got["M5"] == pytest.approx(100 * (1 + 0.5 + 1 + 0) / 4)
    # M6: X has two corrections (x0, x2); only x0's is matched with the same correction.
    assert got["M6"] == pytest.approx(100 * 1 / 2)
    assert pair_accuracy(xs, ys, TEXT).value == pytest.approx(sum(got.values()) / 5)
    assert weighted(got, {"M2": 1.0, "M5": 3.0}) == pytest.approx((got["M2"] + 3 * got["M5"]) / 4)


def test_empty_markups() -> None:
    assert metrics([], [], TEXT) == dict.fromkeys(("M2", "M3", "M4", "M5", "M6"), 100.0)
    only_y = metrics([], [F(0, 3)], TEXT)
    assert only_y["M2"] == 0.0 and only_y["M3"] == 0.0
    # X has no correction and Y has none: nothing missed there.
    assert metrics([F(0, 3)], [F(0, 3)], TEXT)["M6"] == 100.0
    assert metrics([F(0, 3)], [F(0, 3, correction="Всё")], TEXT)["M6"] == 0.0


def test_weights_must_leave_something_to_average() -> None:
    with pytest.raises(ValueError, match="weights"):
        weighted(dict.fromkeys(("M2", "M3", "M4", "M5", "M6"), 50.0), {"M2": 0.0})


def test_relative_accuracies_and_star_by_hand() -> None:
    e1 = [F(19, 24), F(0, 3, "Р.знач")]
    e2 = [F(19, 24)]
    a = [F(19, 24)]
    got = text_accuracy(a, [e1, e2], TEXT)
    m_a_e1 = pair_accuracy(a, e1, TEXT).value
    m_a_e2 = pair_accuracy(a, e2, TEXT).value
    assert m_a_e2 == pytest.approx(100.0)
    assert got.against_experts == pytest.approx([m_a_e1, m_a_e2])
    m12 = pair_accuracy(e1, e2, TEXT).value
    m21 = pair_accuracy(e2, e1, TEXT).value
    assert got.expert_agreement == pytest.approx([m12, m21])
    assert got.optimistic == pytest.approx(100 * max(m_a_e1, m_a_e2) / min(m12, m21))
    assert got.mean == pytest.approx(100 * ((m_a_e1 + m_a_e2) / 2) / ((m12 + m21) / 2))
    other = text_accuracy([], [e2], TEXT)  # one expert: no agreement to relate to
    assert other.optimistic is None and other.mean is None
    h = 0.3
    expected = (
        (h * (m_a_e1 + m_a_e2) / 2 + (1 - h) * max(m_a_e1, m_a_e2))
        + (h * other.against_experts[0] + (1 - h) * other.against_experts[0])
    ) / 2
    assert star([got, other], hardness=h) == pytest.approx(expected)
    with pytest.raises(ValueError):
        star([got], hardness=1.5)


@pytest.mark.parametrize("seed", range(20))
def test_the_array_loss_matrix_is_the_scalar_formula(seed: int) -> None:
    rng = random.Random(seed)
    xs = [*_random_markup(rng, 6), F(None, None, "С.тема"), F(7, 7)]
    ys = [*_random_markup(rng, 5), F(None, None, "С.тема"), F(None, None, "Р.знач"), F(7, 7)]
    expected = [[loss(x, y) for y in ys] for x in xs]
    assert np.allclose(loss_matrix(xs, ys), np.array(expected))


@pytest.mark.parametrize(
    "text",
    [TEXT, "", "   ", "слово", " начало, и конец.", "a_b 12 — «цитата»!", "..x..y"],
)
def test_the_word_arrays_are_the_regex_words(text: str) -> None:
    words = Words.of(text)
    assert list(zip(words.starts.tolist(), words.ends.tolist(), strict=True)) == word_spans(text)


# --------------------------------------------------------------------------------------------
# Ties: identical submissions score identically, whatever the order of their fragments.
# --------------------------------------------------------------------------------------------


def _value(xs: list[Fragment], ys: list[Fragment]) -> tuple[float, ...]:
    got = pair_accuracy(xs, ys, TEXT)
    return (*(got.metrics[name] for name in ("M2", "M3", "M4", "M5", "M6")), got.value)


def test_one_span_marked_with_two_codes_scores_the_same_in_either_order() -> None:
    # Y marks «силой» twice (Г.упр with the correction, Р.знач without); X once, with a third
    # code and the same correction. Both pairs cost L = 1 (same span, other code): a tie of Q.
    xs = [F(19, 24, "Г.согл", correction="силе")]
    with_correction, without = F(19, 24, "Г.упр", correction="силе"), F(19, 24, "Р.знач")
    # By hand, pairing x with the fragment of the same correction (the tie-break's choice):
    # M2 = F1(1/1, 1/2) = 2/3; M3 = 0 (other code); M4 = 1 (no subtype or comment on either);
    # M5 = 1 (the same word); M6 = 1 (x's only correction is matched with the same one).
    m2 = 100 * 2 / 3
    expected = (m2, 0.0, 100.0, 100.0, 100.0, (m2 + 300) / 5)
    for ys in ([with_correction, without], [without, with_correction]):
        assert _value(xs, ys) == pytest.approx(expected)
        assert pair_accuracy(xs, ys, TEXT).pairs == [(0, ys.index(with_correction))]
    assert expected[-1] == pytest.approx(73.333, abs=1e-3)


def test_ties_prefer_the_same_comment_then_the_same_correction() -> None:
    # One span, candidates of the same code: the one with the same comment (M4) wins over the
    # one with the same correction (M6), which wins over one with neither, in any order.
    x = [F(19, 24, "Г.упр", comment="падеж", correction="силе")]
    same_comment = F(19, 24, "Г.упр", comment="Падеж.")
    same_correction = F(19, 24, "Г.упр", correction="силе")
    neither = F(19, 24, "Г.упр")
    for ys in permutations([same_comment, same_correction, neither]):
        assert [ys[k] for _i, k in match(x, list(ys))] == [same_comment]
    for ys in permutations([same_correction, neither]):
        assert [ys[k] for _i, k in match(x, list(ys))] == [same_correction]


# Few spans, codes, comments and corrections: random markups full of ties.
_TIE_SPANS = [(0, 3), (0, 14), (4, 14), (15, 18), (19, 24), (19, 31), (27, 31), (35, 45)]


def _tied_markup(rng: random.Random, n: int) -> list[Fragment]:
    out = []
    for _ in range(n):
        start, end = rng.choice([*_TIE_SPANS, (None, None)])
        out.append(
            F(
                start,
                end,
                rng.choice(["Г.упр", "Р.знач", "Г.согл"]),
                subtype=rng.choice(["", "упр"]),
                comment=rng.choice(["", "", "падеж", "Падеж."]),
                correction=rng.choice(["", "силе", "ушёл"]),
            )
        )
    return out


def _shuffled(rng: random.Random, markup: list[Fragment]) -> list[Fragment]:
    return rng.sample(markup, len(markup))


@pytest.mark.parametrize("seed", range(300))
def test_scores_do_not_depend_on_the_order_of_fragments(seed: int) -> None:
    rng = random.Random(seed)
    a, e1, e2 = (_tied_markup(rng, rng.randint(0, 6)) for _ in range(3))
    expected = (_value(a, e1), _value(e1, a), text_accuracy(a, [e1, e2], TEXT))
    for _ in range(4):
        sa, s1, s2 = _shuffled(rng, a), _shuffled(rng, e1), _shuffled(rng, e2)
        got = text_accuracy(sa, [s1, s2], TEXT)
        assert (_value(sa, s1), _value(s1, sa), got) == expected
        assert star([got], 0.3) == star([expected[2]], 0.3)
    # The experts' agreement is the pairwise M both ways, as computed alone.
    agreement = expected[2].expert_agreement
    assert agreement == [pair_accuracy(e1, e2, TEXT).value, pair_accuracy(e2, e1, TEXT).value]


def _agreements(x: Fragment, y: Fragment) -> tuple[int, int, int]:
    """Code, comment (M4) and correction (M6) agreement of a pair, computed here again."""

    def words(value: str) -> str:
        return " ".join(value.casefold().split()).rstrip(".!?;:,… ")

    if x.comment.strip() or y.comment.strip():
        comment = bool(x.comment.strip() and y.comment.strip()) and words(x.comment) == words(
            y.comment
        )
    else:
        comment = normalize_code(x.subtype) == normalize_code(y.subtype)
    correction = bool(x.correction) and x.correction.split() == y.correction.split()
    return (normalize_code(x.code) == normalize_code(y.code), comment, correction)


@pytest.mark.parametrize("seed", range(300))
def test_the_tie_break_is_the_best_agreement_among_all_optimal_matchings(seed: int) -> None:
    rng = random.Random(1000 + seed)
    xs, ys = _tied_markup(rng, rng.randint(0, 4)), _tied_markup(rng, rng.randint(0, 4))
    L = loss_matrix(xs, ys)

    def rank(pairs: list[tuple[int, int]]) -> tuple[float, ...]:
        tiers = [_agreements(xs[i], ys[k]) for i, k in pairs]
        return (round(total_loss(L, pairs), 9), *(-sum(t[j] for t in tiers) for j in range(3)))

    every = {
        tuple(sorted((i, k) for i, k in enumerate(choice) if k >= 0))
        for choice in permutations([*range(len(ys)), *[-1] * len(xs)], len(xs))
    }
    best = min(rank(list(pairs)) for pairs in every)
    assert rank(match(xs, ys)) == best
