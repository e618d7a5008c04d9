"""Trigram GIN indexes for the console's data browser and pickers (PostgreSQL only).

The browser searches instruction and answer text with Django's `icontains`, which PostgreSQL
runs as `UPPER(text) LIKE UPPER('%…%')`: the index is on that same expression, so the planner
uses it for any substring of three characters or more. SQLite (the demo) has no pg_trgm: the
operation does nothing there and the search scans, which is fine at demo size. The indexes are
kept out of the models' Meta for that reason (a Meta index would be created on SQLite too).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

INDEXES = (
    ("material_answer_text_trgm", "material_answer"),
    ("material_instruction_text_trgm", "material_instruction"),
)


def create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, table in INDEXES:
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON {table} USING gin (UPPER(text) gin_trgm_ops)"
        )


def drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, _table in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("material", "0002_pairwise_kind")]

    operations = [migrations.RunPython(create, drop)]
