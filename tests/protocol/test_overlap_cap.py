"""The overlap cap has one home (protocol.overlap): routing, reopening and the database check
follow it."""

from __future__ import annotations

import pytest
from django.db.models import CheckConstraint

from protocol.overlap import MAX_OVERLAP, MIN_OVERLAP, can_add_slot, capped_overlap
from taxonomy.models import Criterion, CriterionGroup
from work.models import Triple
from work.routing import overlap_for


@pytest.mark.parametrize(
    ("overlap", "capped"), [(-3, 1), (0, 1), (1, 1), (3, 3), (10, 10), (11, 10), (50, 10)]
)
def test_the_cap(overlap: int, capped: int) -> None:
    assert (MIN_OVERLAP, MAX_OVERLAP) == (1, 10)
    assert capped_overlap(overlap) == capped


def test_a_slot_can_be_added_below_the_cap_only() -> None:
    assert can_add_slot(MAX_OVERLAP - 1)
    assert not can_add_slot(MAX_OVERLAP)


def test_routing_caps_an_override_above_the_maximum() -> None:
    criterion = Criterion(group=CriterionGroup.GENERAL, overlap_override=MAX_OVERLAP + 5)
    assert overlap_for(criterion) == MAX_OVERLAP


def test_the_database_check_is_built_from_the_same_bounds() -> None:
    check = next(c for c in Triple._meta.constraints if c.name == "triple_overlap_range")
    assert isinstance(check, CheckConstraint)
    condition = str(check.condition)
    assert f"('required_overlap__gte', {MIN_OVERLAP})" in condition
    assert f"('required_overlap__lte', {MAX_OVERLAP})" in condition
