"""lib.sql: rows of a raw query, parameters bound by the driver."""

from __future__ import annotations

import pytest

from lib.sql import fetch_all

pytestmark = pytest.mark.django_db


def test_fetch_all_returns_every_row_as_a_tuple_with_bound_parameters() -> None:
    rows = fetch_all("SELECT n, %s FROM generate_series(1, 3) AS n ORDER BY n", ["x'; --"])
    assert rows == [(1, "x'; --"), (2, "x'; --"), (3, "x'; --")]
    assert fetch_all("SELECT 1 WHERE false") == []
