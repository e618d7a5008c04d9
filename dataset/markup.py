"""The span markup kind's export tables (work.kinds slot `export_schema`): one row per text,
per submitted markup, per fragment. markup.files fills them; the schema is the dataset's, like
the pointwise and pairwise kinds' tables."""

from __future__ import annotations

import pyarrow as pa

TEXTS_SCHEMA = pa.schema(
    [
        ("text_id", pa.string()),
        ("subject", pa.string()),
        ("classifier", pa.string()),
        ("characters", pa.int64()),
        ("markups", pa.int64()),
        # The lower of M(X, Y), M(Y, X) of the first two independent expert markups.
        ("agreement", pa.float64()),
        ("text", pa.string()),
    ]
)
MARKUPS_SCHEMA = pa.schema(
    [
        ("markup_id", pa.int64()),
        ("text_id", pa.string()),
        ("source", pa.string()),
        ("author", pa.string()),
        ("panel", pa.int64()),
        ("role", pa.string()),
        ("submitted_at", pa.string()),
        ("time_spent_ms", pa.int64()),
        ("fragments", pa.int64()),
        ("criteria", pa.string()),  # JSON: criterion → score
        ("rationales", pa.string()),  # JSON: criterion → rationale
    ]
)
FRAGMENTS_SCHEMA = pa.schema(
    [
        ("markup_id", pa.int64()),
        ("text_id", pa.string()),
        ("position", pa.int64()),
        ("start", pa.int64()),  # null with end: a whole-text error
        ("end", pa.int64()),
        ("group", pa.string()),
        ("type", pa.string()),
        ("subtype", pa.string()),
        ("comment", pa.string()),
        ("explanation", pa.string()),
        ("correction", pa.string()),
        ("tag", pa.string()),
        ("fragment", pa.string()),
    ]
)


def markup_schemas() -> dict[str, pa.Schema]:
    """The tables of a markup export, in their order (texts, markups, fragments)."""
    return {"texts": TEXTS_SCHEMA, "markups": MARKUPS_SCHEMA, "fragments": FRAGMENTS_SCHEMA}
