"""Migration markup 0004: existing texts get the contest JSON's uuid, test and year (moved out
of their `meta` where an import put them there, else generated)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("markup", "0003_contest")]
AFTER = [("markup", "0004_text_contest_meta")]


@pytest.mark.django_db(transaction=True)
def test_existing_texts_get_a_uuid_a_test_and_a_year(settings: Any) -> None:
    settings.POLLUX = {**settings.POLLUX, "MARKUP_TEST": "Pollux: архив"}
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps.get_model("markup", "MarkupText")
        bare = old.objects.create(external_id="a", text="Текст.", subject="rus", meta={})
        given = old.objects.create(
            external_id="b",
            text="Другой текст.",
            subject="rus",
            meta={"uuid": "u-b", "test": "ЕГЭ 2020", "year": 2020, "theme": "Зима"},
        )
        # The same uuid twice in old meta (nothing kept it unique): the second gets a new one.
        twice = old.objects.create(
            external_id="c", text="Третий.", subject="rus", meta={"uuid": "u-b", "year": "x"}
        )
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps.get_model("markup", "MarkupText")
        a, b, c = (new.objects.get(pk=t.pk) for t in (bare, given, twice))
        assert uuid.UUID(a.uuid) and (a.test, a.year) == ("Pollux: архив", a.created_at.year)
        assert (b.uuid, b.test, b.year, b.meta) == ("u-b", "ЕГЭ 2020", 2020, {"theme": "Зима"})
        assert uuid.UUID(c.uuid) and c.year == c.created_at.year and c.meta == {}
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
