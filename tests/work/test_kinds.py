"""The task-kind seam (work.kinds): pointwise is registered whole, slots stay in their layers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.exceptions import ImproperlyConfigured

from work import checks, kinds


@pytest.fixture
def scratch_kind() -> Iterator[kinds.TaskKind]:
    kind = kinds.register(kinds.TaskKind(key="scratch-test", label="scratch"))
    yield kind
    kinds._kinds.pop("scratch-test")


def test_pointwise_has_every_slot_and_the_start_up_check_passes() -> None:
    assert kinds.missing_slots(kinds.get(kinds.POINTWISE)) == []
    assert checks.task_kinds_complete() == []


def test_a_kind_with_empty_slots_fails_the_start_up_check(scratch_kind: kinds.TaskKind) -> None:
    kinds.contribute("scratch-test", "work", item_errors=lambda *a: [])
    errors = checks.task_kinds_complete()
    assert [e.id for e in errors] == ["work.E001"]
    assert "parse_submission" in errors[0].msg and "item_errors" not in errors[0].msg


def test_an_app_fills_only_its_own_slots_and_each_slot_once(scratch_kind: kinds.TaskKind) -> None:
    with pytest.raises(ImproperlyConfigured):
        kinds.contribute("scratch-test", "work", gold_match=lambda **kw: True)
    kinds.contribute("scratch-test", "quality", gold_match=lambda **kw: True)
    with pytest.raises(ImproperlyConfigured):
        kinds.contribute("scratch-test", "quality", gold_match=lambda **kw: False)
    with pytest.raises(ImproperlyConfigured):
        kinds.contribute("never-registered", "quality", gold_match=lambda **kw: True)


def test_pointwise_gold_match_na_is_a_value_and_tolerance_is_for_wide_scales() -> None:
    match = kinds.get(kinds.POINTWISE).gold_match
    assert match is not None
    same = {"ref_score": None, "ref_na": True, "score": None, "is_na": True, "scale": [0, 1, 2]}
    assert match(**same)
    assert not match(ref_score=None, ref_na=True, score=0, is_na=False, scale=[0, 1, 2])
    assert match(ref_score=3, ref_na=False, score=4, is_na=False, scale=range(5), tolerance=1)
    assert not match(ref_score=1, ref_na=False, score=2, is_na=False, scale=[0, 1, 2], tolerance=1)


def test_span_markup_is_a_kind_whose_inapplicable_slots_are_named_with_a_reason() -> None:
    markup = kinds.get(kinds.MARKUP)
    assert kinds.missing_slots(markup) == []
    assert set(markup.not_applicable) == {"gold_match", "aggregate"}
    assert all(reason.strip() for reason in markup.not_applicable.values())
    # A slot declared inapplicable cannot be filled later by mistake.
    with pytest.raises(ImproperlyConfigured, match="does not apply"):
        kinds.contribute(kinds.MARKUP, "quality", gold_match=lambda **kw: True)


def test_an_inapplicable_slot_is_not_missing(scratch_kind: kinds.TaskKind) -> None:
    scratch_kind.not_applicable = {"aggregate": "none", "export_schema": "none"}
    missing = kinds.missing_slots(scratch_kind)
    assert "aggregate" not in missing and "export_schema" not in missing
    assert "gold_match" in missing


def test_the_markup_kinds_slots_read_check_and_measure_a_markup() -> None:
    from protocol.markup_format import MarkupFormatError

    text = "Мы одеваем шапки."
    read = kinds.slot(kinds.MARKUP, "parse_submission")
    document = read(
        [{"startSelection": 3, "endSelection": 10, "type": "Р.знач", "group": "error"}],
        text=text,
        subject="rus",
    )
    assert [(f.start, f.end, f.code) for f in document.fragments] == [(3, 10, "Р.знач")]
    assert kinds.slot(kinds.MARKUP, "item_errors")(document) == []
    for bad, field in (
        ("nope", "selections"),
        ([{"startSelection": 3}], "selections[0].endSelection"),
        ([{"type": "Р.знач", "group": "error", "comment": "x" * 5001}], "selections[0].comment"),
    ):
        with pytest.raises(MarkupFormatError) as caught:
            read(bad, text=text, subject="rus")
        assert caught.value.field == field
    # Identical markups agree fully. Against an empty markup M2–M5 are 0 %, and M6 is 100 %
    # (neither side has a correction, docs/spans.md) with the default weight w6 = 0.2.
    agreement = kinds.slot(kinds.MARKUP, "agreement")
    assert agreement(document.fragments, document.fragments, text) == 100.0
    assert agreement(document.fragments, [], text) == pytest.approx(20.0)
    assert list(kinds.slot(kinds.MARKUP, "export_schema")()) == ["texts", "markups", "fragments"]
