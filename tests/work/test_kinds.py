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
