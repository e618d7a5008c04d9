"""Raw SQL read through Django's default connection, for the few aggregate queries the ORM
would spell as many round trips."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection


def fetch_all(sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Every row of `sql` run with `params`, as tuples."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())
