"""Full-text GIN indexes for the console's data browser and pickers (PostgreSQL only).

The browser's text search on PostgreSQL finds the answers whose text (or instruction's text)
has every typed word, as a word or the start of one: `to_tsvector('simple', text) @@
to_tsquery('simple', 'w1:* & w2:*')` (console/browser.py). 'simple' folds case and does no
stemming, so what is found is what was typed. The GIN index answers that without reading a text
(no recheck for an AND of prefixes), where a trigram index must re-read every candidate text:
measured on the bench's texts, 7,750 rechecks of 1.5 KB each took a second. SQLite (the demo)
has neither: the operation does nothing there and the search is `icontains`. The indexes are
kept out of the models' Meta for that reason.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

INDEXES = (
    ("material_answer_text_fts", "material_answer"),
    ("material_instruction_text_fts", "material_instruction"),
)


def create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, table in INDEXES:
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON {table} "
            "USING gin (to_tsvector('simple'::regconfig, text))"
        )


def drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, _table in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("material", "0002_pairwise_kind")]

    operations = [migrations.RunPython(create, drop)]
