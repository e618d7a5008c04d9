"""The test suite's own rules: what counts as slow, per-run isolation, no import-based skips."""

from __future__ import annotations

from typing import Any

import pytest

from tests import conftest


class _Item:
    """Just enough of a pytest item for the collection hook."""

    def __init__(self, *markers: str) -> None:
        self.markers = set(markers)

    def get_closest_marker(self, name: str) -> Any:
        return name if name in self.markers else None

    def add_marker(self, marker: Any) -> None:
        self.markers.add(marker.name)


@pytest.mark.parametrize("marker", ["browser", "celery", "judge", "faults", "load"])
def test_every_minutes_long_kind_of_test_counts_as_slow(marker: str) -> None:
    item, quick = _Item(marker), _Item("django_db")
    conftest.pytest_collection_modifyitems(None, [item, quick])  # type: ignore[arg-type, list-item]
    assert "slow" in item.markers and "slow" not in quick.markers
