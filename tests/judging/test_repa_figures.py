"""REPA's three judge figures under REPA's definitions, with the variants beside them (issue #28
item 12). Every expected number is worked out by hand in the comments, not by the code."""

from __future__ import annotations

from typing import Any

import pytest

from judging import metrics
from judging.pairwise_report import compute_pairwise_report


def test_macro_f1_counts_a_failure_as_a_class_of_its_own() -> None:
    gold = ["a", "a", "b", "both_good"]
    pred: list[str | None] = ["a", "", "b", "both_good"]
    # a: tp 1, fn 1 -> 2/3; b: 1; both_good: 1; failure: fp 1, never gold -> 0.
    # REPA (sklearn's macro average over the classes seen): (2/3 + 1 + 1 + 0) / 4 = 2/3.
    assert metrics.macro_f1(zip(gold, pred, strict=True)) == pytest.approx(2 / 3)
    # The variant, a failure only a miss of its gold label: (2/3 + 1 + 1) / 3 = 8/9.
    assert metrics.macro_f1(zip(gold, pred, strict=True), failure_class=False) == pytest.approx(
        8 / 9
    )
    # No failure, no failure class: both agree.
    assert metrics.macro_f1([("a", "a"), ("b", "a")]) == pytest.approx((2 / 3 + 0) / 2)


def test_length_bias_is_a_share_of_all_labelled_predictions() -> None:
    result = metrics.longer_pick_share(
        [
            ("a", 10, 5),  # longer picked
            ("b", 10, 5),  # shorter picked
            ("b", 3, 9),  # longer picked
            ("a", 7, 7),  # equal lengths: labelled, no longer pick
            ("both_good", 1, 9),  # labelled, no longer pick
            ("", 1, 9),  # a failure: no prediction, left out
            ("no_majority", 1, 9),  # no prediction, left out
        ]
    )
    # REPA: 2 longer picks of 5 labelled predictions = 0.4; variant: 2 of 3 one-side picks.
    assert result == {
        "share": pytest.approx(0.4),
        "n": 5,
        "longer": 2,
        "one_sided_share": pytest.approx(2 / 3),
        "n_one_sided": 3,
        "excluded_no_label": 2,
        "equal_length": 1,
    }


def test_self_preference_is_the_share_of_self_picks_the_experts_confirm() -> None:
    # Own side "a" everywhere: (own side, judge, expert majority).
    result = metrics.self_pick_confirmed(
        [
            ("a", "a", "a"),  # self-pick, confirmed
            ("a", "a", "b"),  # self-pick, refuted
            ("a", "a", "both_bad"),  # self-pick, refuted
            ("a", "a", ""),  # self-pick, experts undecided: left out of the share
            ("a", "b", "b"),
            ("a", "both_good", "both_good"),
            ("a", "no_majority", "a"),  # no prediction: left out of the rate
        ]
    )
    # 4 self-picks of 6 labelled predictions; 1 confirmed of the 3 with an expert majority.
    assert result == {
        "share": pytest.approx(1 / 3),
        "confirmed": 1,
        "n": 3,
        "unconfirmable": 1,
        "self_pick_rate": pytest.approx(4 / 6),
        "self_picks": 4,
        "n_labelled": 6,
    }


def _triple(a_len: int, b_len: int) -> dict[str, Any]:
    return {
        "comparison_criterion__key": "overall",
        "comparison_criterion__name_en": "Overall",
        "comparison_criterion__name_ru": "Общее",
        "comparison_criterion__position": 11,
        "pair__answer_a__text": "x" * a_len,
        "pair__answer_b__text": "y" * b_len,
        "pair__answer_a__model__name": "GigaChat-Max",
        "pair__answer_b__model__name": "Llama-3",
    }


def test_the_report_gives_repas_figures_and_the_variants_beside_them() -> None:
    # tid: (judge's final label, experts' labels, len A, len B); A is the judge's family.
    cases = {
        1: ("a", ["a", "a", "a"], 10, 5),
        2: ("a", ["b", "b", "b"], 3, 9),
        3: ("a", ["both_bad"] * 3, 8, 8),
        4: ("a", ["a"], 20, 1),  # one expert label: no majority, no gold
        5: ("b", ["b", "b", "b"], 2, 6),
        6: ("both_good", ["both_good"] * 3, 1, 9),
        7: ("", ["a", "a", "a"], 4, 7),  # the only template failed to parse
    }
    final = {t: (c[0] or "no_majority") for t, c in cases.items()}
    report = compute_pairwise_report(
        templates=["repa_1"],
        labels={t: {"repa_1": c[0]} for t, c in cases.items()},
        final=final,
        twin_final={},
        experts={t: c[1] for t, c in cases.items()},
        triples={t: _triple(c[2], c[3]) for t, c in cases.items()},
        family="giga",
    )
    row = report["overall"]
    # Macro-F1 on the unanimous items 1, 2, 3, 5, 6, 7: gold a, b, both_bad, b, both_good, a;
    # predicted a, a, a, b, both_good, failure. a: tp 1, fp 2, fn 1 -> 2/5; b: tp 1, fn 1 -> 2/3;
    # both_good 1; both_bad 0; failure 0. REPA: (2/5 + 2/3 + 1) / 5 = 31/75; the variant
    # without the failure class: (2/5 + 2/3 + 1) / 4 = 31/60.
    assert row["f1_final"] == pytest.approx(31 / 75)
    assert row["f1_mean"] == pytest.approx(31 / 75)
    assert row["f1_misses_final"] == pytest.approx(31 / 60)
    assert row["f1_misses_mean"] == pytest.approx(31 / 60)
    # Length, judge: 6 labelled (7 failed); longer picked on 1, 4, 5 -> 3/6. One-side picks of
    # different lengths: 1, 2, 4, 5 (3 is equal) -> 3/4.
    judge = row["length_bias"]["judge"]
    assert (judge["share"], judge["n"]) == (pytest.approx(0.5), 6)
    assert (judge["one_sided_share"], judge["n_one_sided"]) == (pytest.approx(0.75), 4)
    # Experts' majorities: 1 a, 2 b, 3 both_bad, 5 b, 6 both_good, 7 a (4 has none): longer on
    # 1, 2, 5 -> 3/6; one-sided 1, 2, 5, 7 -> 3/4.
    experts = row["length_bias"]["experts"]
    assert (experts["share"], experts["n"]) == (pytest.approx(0.5), 6)
    assert experts["one_sided_share"] == pytest.approx(0.75)
    # Self-preference: self-picks 1, 2, 3, 4 of 6 labelled; experts decide 1, 2, 3 and confirm
    # 1 -> REPA 1/3. Variants: one-side picks 1, 2, 3, 4, 5, own 4 -> 4/5; agreement where both
    # have a label (1, 2, 3, 5, 6): 1, 5, 6 agree -> 3/5.
    sp = row["self_preference"]
    assert sp["repa"]["share"] == pytest.approx(1 / 3)
    assert (sp["repa"]["confirmed"], sp["repa"]["n"]) == (1, 3)
    assert sp["repa"]["self_pick_rate"] == pytest.approx(4 / 6)
    assert (sp["judge_own_share"], sp["judge_picks"]) == (pytest.approx(4 / 5), 5)
    assert (sp["agreement"], sp["n_agreement"]) == (pytest.approx(3 / 5), 5)
