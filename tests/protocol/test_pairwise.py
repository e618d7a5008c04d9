"""The REPA pairwise rules (protocol.pairwise): labels, swap, majority, unanimity, outcome and
the judge's label parser, on exhaustive small cases checked against independent counts."""

from __future__ import annotations

import itertools

import pytest

from protocol.pairwise import (
    JUDGE_LABEL_WORDS,
    TIES,
    Label,
    majority,
    outcome,
    parse_judge_label,
    swap,
    unanimous,
    unplace,
)

A, B, GOOD, BAD = Label.A, Label.B, Label.BOTH_GOOD, Label.BOTH_BAD
LABELS = list(Label)


# --- Labels and swap -----------------------------------------------------------------------


def test_the_four_labels_have_stable_codes() -> None:
    # Stored in the database and exports: a rename would orphan every stored label.
    assert [label.value for label in Label] == ["a", "b", "both_good", "both_bad"]
    assert Label("both_bad") is BAD
    assert frozenset({GOOD, BAD}) == TIES


def test_an_unknown_code_is_refused() -> None:
    with pytest.raises(ValueError, match="'c'"):
        Label("c")
    with pytest.raises(ValueError):
        swap("A")  # the display letter is not a code


def test_swap_exchanges_a_and_b_and_keeps_the_ties() -> None:
    assert (swap(A), swap(B), swap(GOOD), swap(BAD)) == (B, A, GOOD, BAD)
    assert swap("a") is B


@pytest.mark.parametrize("label", LABELS)
def test_swap_is_an_involution(label: Label) -> None:
    assert swap(swap(label)) is label


def test_swap_is_a_bijection_that_fixes_exactly_the_ties() -> None:
    assert sorted(swap(label) for label in LABELS) == sorted(LABELS)
    assert {label for label in LABELS if swap(label) is label} == TIES


@pytest.mark.parametrize("label", LABELS)
def test_unplace_undoes_a_stored_placement(label: Label) -> None:
    assert unplace(label, swapped=False) is label
    assert unplace(label, swapped=True) is swap(label)
    # The page's label of a swapped placement, brought back, is what the unswapped page gives.
    assert unplace(swap(label), swapped=True) is label


# --- Majority ------------------------------------------------------------------------------


def repa_rule(votes: tuple[Label, ...]) -> Label | None:
    """REPA §2.3 for three annotators, written out: a label given by two or more."""
    first, second, third = votes
    if first in (second, third):
        return first
    if second == third:
        return second
    return None


@pytest.mark.parametrize("votes", list(itertools.product(LABELS, repeat=3)), ids=str)
def test_majority_of_three_is_repas_rule_on_all_64_panels(votes: tuple[Label, ...]) -> None:
    assert majority(votes) is repa_rule(votes)


def test_majority_of_three_counts_match_the_combinatorics() -> None:
    panels = list(itertools.product(LABELS, repeat=3))
    # 4 unanimous + 4 * 3 * 3 two-of-three = 40 with a majority; 4 * 3 * 2 = 24 all different.
    assert len(panels) == 64
    assert sum(majority(p) is not None for p in panels) == 4 + 4 * 3 * 3
    assert sum(majority(p) is None for p in panels) == 4 * 3 * 2


def brute_majority(votes: tuple[Label, ...], min_votes: int) -> Label | None:
    """The documented generalisation, by comparing every label with every other."""
    winners = [
        label
        for label in LABELS
        if votes.count(label) >= min_votes
        and all(votes.count(label) > votes.count(other) for other in LABELS if other != label)
    ]
    return winners[0] if winners else None


@pytest.mark.parametrize("size", [1, 2, 4, 5])
@pytest.mark.parametrize("min_votes", [1, 2, 3])
def test_majority_of_other_panel_sizes_on_every_panel(size: int, min_votes: int) -> None:
    for votes in itertools.product(LABELS, repeat=size):
        assert majority(votes, min_votes) is brute_majority(votes, min_votes), votes


@pytest.mark.parametrize(
    ("votes", "expected", "why"),
    [
        ((A, A, B, B), None, "2-2 of four: a tie for the top is no consensus"),
        ((A, A, B, GOOD), A, "2-1-1 of four: assigned by two or more"),
        ((A, A, B, B, GOOD), None, "2-2-1 of five"),
        ((A, A, B, GOOD, BAD), A, "2-1-1-1 of five"),
        ((A, A, A, B, B), A, "3-2 of five"),
        ((A,), None, "one vote is never a consensus"),
        ((), None, "no votes"),
        ((BAD, BAD), BAD, "two of two"),
    ],
)
def test_majority_on_named_panels(
    votes: tuple[Label, ...], expected: Label | None, why: str
) -> None:
    assert majority(votes) is expected, why


def test_a_strict_majority_is_min_votes_over_half_the_panel() -> None:
    # 2-1-1-1 of five has a plurality of two but no strict majority (three of five).
    votes = (A, A, B, GOOD, BAD)
    assert majority(votes) is A
    assert majority(votes, min_votes=len(votes) // 2 + 1) is None
    assert majority((A, A, A, B, GOOD), min_votes=3) is A


def test_majority_accepts_codes_and_refuses_nonsense() -> None:
    assert majority(["a", "a", "b"]) is A
    with pytest.raises(ValueError):
        majority(["a", "a", "x"])
    with pytest.raises(ValueError, match="min_votes"):
        majority([A, A], min_votes=0)


def test_majority_reads_a_generator_once() -> None:
    assert majority(label for label in (GOOD, BAD, GOOD)) is GOOD


@pytest.mark.parametrize("votes", list(itertools.product(LABELS, repeat=3)), ids=str)
def test_unanimous_is_all_three_equal(votes: tuple[Label, ...]) -> None:
    expected = votes[0] if votes[0] == votes[1] == votes[2] else None
    assert unanimous(votes) is expected
    # A unanimous panel always has the same label as its majority.
    if expected is not None:
        assert majority(votes) is expected


def test_unanimous_needs_the_whole_panel() -> None:
    assert unanimous((A, A)) is None  # two of three slots filled is not the gold pool
    assert unanimous((A, A), min_votes=2) is A
    assert unanimous((A, A, A, A, B), min_votes=5) is None
    assert unanimous(()) is None


# --- Outcome -------------------------------------------------------------------------------


def test_outcome_is_as_score() -> None:
    assert outcome(A) == 1.0
    assert outcome(B) == 0.0
    assert outcome(GOOD) == 0.5
    assert outcome(BAD) == 0.5


def test_the_tie_mapping_is_explicit_per_tie() -> None:
    assert outcome(GOOD, tie_value=0.4) == 0.4
    assert outcome(BAD, tie_value=0.4) == 0.4
    assert outcome(GOOD, both_good=0.6, both_bad=0.3) == 0.6
    assert outcome(BAD, both_good=0.6, both_bad=0.3) == 0.3
    # Overriding one tie leaves the other at tie_value.
    assert outcome(BAD, tie_value=0.45, both_good=1.0) == 0.45
    # A win is a win whatever the tie mapping.
    assert outcome(A, tie_value=0.0, both_good=0.0, both_bad=0.0) == 1.0


@pytest.mark.parametrize("label", LABELS)
@pytest.mark.parametrize("tie", [0.0, 0.3, 0.5, 1.0])
def test_swapping_the_pair_mirrors_the_outcome(label: Label, tie: float) -> None:
    # B's score is 1 - A's score only when the tie mapping is symmetric around 0.5; with the
    # same tie value on both sides a tie stays a tie.
    if label in TIES:
        assert outcome(swap(label), tie) == outcome(label, tie) == tie
    else:
        assert outcome(swap(label), tie) == 1.0 - outcome(label, tie)


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_a_tie_value_outside_0_1_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="both_good"):
        outcome(GOOD, both_good=bad)
    with pytest.raises(ValueError, match="both_bad"):
        outcome(BAD, tie_value=bad)


# --- The judge's label ----------------------------------------------------------------------

# REPA, Appendix C, Figure 4: "'A is better', 'B is better', 'Both are good', 'Both are bad'".
PAPER_LABELS = {"A is better": A, "B is better": B, "Both are good": GOOD, "Both are bad": BAD}


def test_the_vocabulary_has_the_papers_four_strings_and_russian_for_each_label() -> None:
    for word, label in PAPER_LABELS.items():
        assert JUDGE_LABEL_WORDS[word] is label
    russian = [label for word, label in JUDGE_LABEL_WORDS.items() if word not in PAPER_LABELS]
    assert sorted(russian) == sorted(Label)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The format of all three prompts: "<Justification> Label: <label>".
        ("Ответ A точнее. Label: A is better", A),
        ("Второй ответ полнее.\nLabel: B is better", B),
        ("Both answer well.\n\nLabel: Both are good", GOOD),
        ("Оба ответа выдумывают факты. Label: Both are bad", BAD),
        # Case, spacing and wrapping do not change the label.
        ("...\nlabel:   both   ARE good  ", GOOD),
        ("...\nLABEL: a is better", A),
        ("...\n**Label:** B is better", B),
        ("...\n**Label**: **Both are bad**", BAD),
        ("...\nLabel: 'A is better'", A),  # the prompts quote the options
        ('...\nLabel: "Both are good".', GOOD),
        ("...\nLabel: «Оба плохи»", BAD),
        ("...\nLabel: <B is better>", B),  # the placeholder's brackets echoed
        ("...\nLabel: `A is better`!", A),
        ("...\r\nLabel: A is better\r\n", A),
        ("...\nLabel:\u00a0B\u00a0is better", B),  # no-break spaces
        # The label on the line after an empty "Label:".
        ("...\n**Label:**\n\nBoth are bad", BAD),
        # Russian label strings, and Cyrillic А / В typed for Latin A / B.
        ("...\nLabel: A лучше", A),
        ("...\nLabel: В лучше", B),  # Cyrillic В
        ("...\nLabel: А is better", A),  # Cyrillic А
        ("...\nLabel: оба хороши", GOOD),
        # Text after the label's line is ignored.
        ("Reasoning.\nLabel: A is better\n\nHope this helps!", A),
        # The format restated before the verdict is not a label.
        ("I answer as Label: <label>.\nA is clearer.\nLabel: A is better", A),
        # The same label twice is one verdict.
        ("Label: B is better\nSo: Label: B is better", B),
    ],
)
def test_the_parser_reads_a_label(text: str, expected: Label) -> None:
    parsed = parse_judge_label(text)
    assert parsed.ok, parsed.error
    assert parsed.label is expected
    assert parsed.error is None
    assert parsed.raw == text


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "no 'Label:'"),
        ("A is better", "no 'Label:'"),  # a label without the keyword is not the format
        ("Ответ: A is better", "no 'Label:'"),
        ("Relabel: A is better", "no 'Label:'"),  # not inside a word
        ("Label: A", "not one of the labels"),  # the prompts allow no other option
        ("Label: B", "not one of the labels"),
        ("Label: both_good", "not one of the labels"),  # the code is not a label string
        ("Label: A is better, B is worse", "not one of the labels"),
        ("Label: A is better than B", "not one of the labels"),
        ("Label: A or B is better", "not one of the labels"),
        ("Label: Both are fine", "not one of the labels"),
        ("Label: Tie", "not one of the labels"),
        ("Label: Б лучше", "not one of the labels"),  # Б is not a look-alike of B
        ("Label:", "not one of the labels"),
        ("Label: <label>", "not one of the labels"),
        ("Label: A is better\nLabel: B is better", "conflicting labels"),
        ("Label: Both are good\n...\nLabel: Both are bad", "conflicting labels"),
        # The last candidate decides even when an earlier one was valid.
        ("Label: A is better\nLabel: maybe", "not one of the labels"),
    ],
)
def test_the_parser_fails_explicitly(text: str, error: str) -> None:
    parsed = parse_judge_label(text)
    assert not parsed.ok
    assert parsed.label is None
    assert parsed.error is not None and error in parsed.error


def test_a_missing_output_is_a_failure() -> None:
    parsed = parse_judge_label(None)
    assert not parsed.ok and parsed.raw == ""


def test_the_justification_is_the_text_before_the_verdict() -> None:
    parsed = parse_judge_label("  A повторяется, B нет.\nLabel: B is better\nThanks")
    assert parsed.justification == "A повторяется, B нет."
    parsed = parse_judge_label("Короткое обоснование Label: A is better")
    assert parsed.justification == "Короткое обоснование"


def test_the_vocabulary_can_be_narrowed() -> None:
    english = dict(PAPER_LABELS)
    assert parse_judge_label("Label: A is better", english).label is A
    assert not parse_judge_label("Label: A лучше", english).ok


def test_no_two_labels_share_a_spelling_after_normalisation() -> None:
    # Case, spacing and the Cyrillic look-alikes are folded: no two labels may collide.
    for word, label in JUDGE_LABEL_WORDS.items():
        for variant in (word.upper(), word.lower(), f"  {word}  ", f"'{word}'."):
            assert parse_judge_label(f"Label: {variant}").label is label, variant


@pytest.mark.parametrize("word", list(PAPER_LABELS))
def test_the_parser_agrees_with_the_swap(word: str) -> None:
    # A judge run on the swapped pair that keeps its preference names the swapped label.
    label = parse_judge_label(f"Label: {word}").label
    assert label is not None
    swapped_word = {A: "B is better", B: "A is better"}.get(label, word)
    assert parse_judge_label(f"Label: {swapped_word}").label is swap(label)


def test_a_vocabulary_whose_words_collide_is_refused() -> None:
    # "A is better" and "а IS BETTER" (Cyrillic а) compare equal: the parser cannot tell them.
    with pytest.raises(ValueError, match="compare equal"):
        parse_judge_label("Label: A is better", {"A is better": A, "а IS BETTER": B})
    # The same label spelt twice is harmless.
    assert parse_judge_label("Label: a is better", {"A is better": A, "а is better": A}).ok
