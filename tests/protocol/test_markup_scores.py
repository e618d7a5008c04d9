"""К9/К10 (Russian) and К5 (literature) computed from a markup, against an independent integer
form of the regulations' formulas; the third check's score conditions on hand-made cases."""

from __future__ import annotations

import itertools

import pytest

from protocol.markup_classifier import load_classifier
from protocol.markup_format import MarkupDocument, default_meta
from protocol.markup_scores import (
    computed_scores,
    disagreements,
    error_counts,
    third_check_reasons,
    volume,
)
from protocol.spans import Fragment

CLASSIFIER = load_classifier()


def essay(words: int) -> str:
    return " ".join(f"слово{i}" for i in range(words))


def doc(text: str, fragments: list[Fragment], subject: str = "rus") -> MarkupDocument:
    meta = default_meta()
    meta.update(subject=subject)
    return MarkupDocument(text, fragments, meta)


def errors(code: str, n: int, tag: str = "") -> list[Fragment]:
    return [Fragment(i * 8, i * 8 + 6, code, tag=tag) for i in range(n)]


def test_volume_counts_hyphenated_words_once() -> None:
    assert volume("Что-то случилось, 12 раз — и всё.") == 6
    assert volume("") == 0


@pytest.mark.parametrize(
    ("words", "gram", "speech"),
    list(itertools.product((69, 70, 149, 150, 400), (0, 1, 2, 3, 5), (0, 1, 2, 4, 6))),
)
def test_russian_formula_matches_an_integer_form(words: int, gram: int, speech: int) -> None:
    fragments = errors("Г.согл", gram) + [Fragment(None, None, "Р.повтор") for _ in range(speech)]
    result = computed_scores(doc(essay(words), fragments), CLASSIFIER)
    assert result is not None
    # ⌊2 − g/2 − s⌋ = ⌊(4 − g − 2s) / 2⌋ and ⌊2.5 − r/2 − s⌋ = ⌊(5 − r − 2s) / 2⌋.
    if words < 70:
        expected = {"К9": 0, "К10": 0}
    else:
        s = int(words < 150)
        expected = {"К9": max(0, (4 - gram - 2 * s) // 2), "К10": max(0, (5 - speech - 2 * s) // 2)}
    assert result.criteria == expected
    assert result.total == sum(expected.values())
    assert result.too_short == (words < 70)


@pytest.mark.parametrize(
    ("words", "speech"), [(149, 0), (150, 0), (150, 1), (300, 2), (300, 3), (300, 7), (300, 8)]
)
def test_literature_formula_matches_an_integer_form(words: int, speech: int) -> None:
    fragments = errors("Р.знач", speech)
    result = computed_scores(doc(essay(words), fragments, "литература"), CLASSIFIER)
    assert result is not None
    expected = 0 if words < 150 else max(0, (7 - speech) // 2)
    assert result.criteria == {"К5": expected}


def test_hand_made_essay_of_ninety_words() -> None:
    # 90 words (short: −1), two grammar errors of which two fragments share a tag (one error),
    # one speech error, an ИСП and a meaning block that do not count.
    fragments = [
        Fragment(0, 6, "Г.согл", tag="t1"),
        Fragment(8, 14, "Г.согл", tag="t1"),
        Fragment(16, 22, "Г.упр"),
        Fragment(24, 30, "Р.тавт"),
        Fragment(32, 38, "ИСП", correction="x"),
    ]
    document = doc(essay(90), fragments)
    assert error_counts(document, CLASSIFIER) == {"К9": 2, "К10": 1}
    result = computed_scores(document, CLASSIFIER)
    assert result is not None
    # К9 = ⌊2 − 1 − 1⌋ = 0; К10 = ⌊2.5 − 0.5 − 1⌋ = 1.
    assert result.criteria == {"К9": 0, "К10": 1} and result.words == 90
    assert disagreements({"К9": 1, "К10": 1, "К1": 1}, result) == {"К9": 0}


def test_types_without_a_formula_compute_nothing() -> None:
    assert computed_scores(doc(essay(200), [], "обществознание"), CLASSIFIER) is None


def test_third_check_conditions_russian() -> None:
    base = {f"К{n}": 1 for n in range(1, 13)}
    assert third_check_reasons("rus", base, base) == []
    assert third_check_reasons("rus", base, {**base, "К7": 3}) == ["К7 differs by 2 (≥ 2)"]
    far = {**base, **{f"К{n}": 0 for n in range(1, 9)}}  # total 4 against 12
    reasons = third_check_reasons("rus", base, far)
    assert reasons[0] == "K differs by 8 (≥ 8)"
    seven = {**base, **{f"К{n}": 0 for n in (1, 2, 3, 4, 5, 6, 9)}}
    assert third_check_reasons("rus", base, seven) == []  # 7 apart, К7 and К8 equal
    assert third_check_reasons("rus", {}, base) == []


def test_third_check_conditions_literature() -> None:
    a = {"К1": 1, "К2": 2, "К3": 2, "К4": 2, "К5": 3}
    assert third_check_reasons("lit", a, a) == []
    assert third_check_reasons("lit", a, {**a, "К1": 0}) == ["К1 = 0 for one expert only"]
    assert third_check_reasons("lit", a, {**a, "К3": 0}) == ["К3 differs by 2 (≥ 2)"]
    low = {"К1": 1, "К2": 0, "К3": 1, "К4": 1, "К5": 1}  # 10 against 4: K is 6 apart
    reasons = third_check_reasons("lit", a, low)
    assert "K differs by 6 (≥ 7)" not in reasons and len(reasons) == 2  # К2 and К5 by 2
