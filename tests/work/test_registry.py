"""One registry class for the extension points (work.registry) and the kinds chosen by value."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from quality import kinds as gold_kinds
from quality.models import ControlItem, ExamItem
from work import kinds, pages
from work.models import Assignment
from work.registry import Registry


def _one() -> int:
    return 1


def test_a_value_is_registered_once_by_key_or_by_its_qualified_name() -> None:
    registry: Registry[object] = Registry("scratch")
    registry.register(_one)
    registry.register(_one)
    assert list(registry) == [_one]
    assert registry.keys() == [f"{__name__}._one"]
    registry.register(_one, key="exam")
    assert registry.get("exam") is _one and registry.get("control") is None
    with pytest.raises(ImproperlyConfigured, match="registered twice"):
        registry.register(len, key="exam")
    with pytest.raises(ImproperlyConfigured, match="nothing is registered"):
        registry["control"]


def test_the_kind_of_an_item_is_chosen_by_its_kind_value() -> None:
    rubric, pair = Assignment(pk=1), Assignment(pk=2, pair_id=7)
    assert (rubric.task_kind, pair.task_kind) == (kinds.POINTWISE, kinds.PAIRWISE)
    assert kinds.of(rubric).in_entry and not kinds.of(pair).in_entry
    assert kinds.of(rubric).flag_refusal() == "" and kinds.of(pair).flag_refusal()
    assert kinds.of(rubric).rubric_refusal(1) == "" and "2" in kinds.of(pair).rubric_refusal(2)
    assert set(pages.pages.keys()) == {kinds.POINTWISE, kinds.PAIRWISE}
    for item in (ExamItem(answer_id=3), ControlItem(pair_id=4)):
        assert gold_kinds.of(item).key == item.task_kind
