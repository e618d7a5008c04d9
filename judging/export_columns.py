"""Judge columns for the dataset export's `triples` table.

For each judge configuration name, the export carries the estimate of the latest run (highest
run id) that judged the triple, so a re-run after a configuration change replaces the old score
while the version column says which configuration made it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from judging.models import JudgeEstimate

SUFFIXES = ("score", "parse_ok", "error", "feedback", "config_version", "run")


def judge_column_names(config_names: Iterable[str]) -> list[str]:
    return [f"judge__{name}__{suffix}" for name in sorted(set(config_names)) for suffix in SUFFIXES]


def judge_columns(triple_ids: Iterable[int]) -> tuple[list[str], dict[int, dict[str, Any]]]:
    """(column names, {triple id: {column: value}}) for the given triples.

    One query per call (call it per chunk of triples when exporting in chunks). A triple no
    judge has scored is simply absent from the dict; a parse failure has score None, never 0.
    """
    ids = list(triple_ids)
    rows = (
        JudgeEstimate.objects.filter(triple_id__in=ids)
        .order_by("triple_id", "config__name", "-run_id")
        .values_list(
            "triple_id",
            "config__name",
            "config__version",
            "run_id",
            "score",
            "parse_ok",
            "error",
            "feedback",
        )
    )
    out: dict[int, dict[str, Any]] = {}
    names: set[str] = set()
    for triple_id, name, version, run_id, score, ok, error, feedback in rows:
        prefix = f"judge__{name}__"
        cols = out.setdefault(triple_id, {})
        if prefix + "run" in cols:
            continue  # an older run of the same configuration name
        names.add(name)
        cols.update(
            {
                prefix + "score": score,
                prefix + "parse_ok": ok,
                prefix + "error": error,
                prefix + "feedback": feedback,
                prefix + "config_version": version,
                prefix + "run": run_id,
            }
        )
    return judge_column_names(names), out


def judge_config_names() -> list[str]:
    """Configuration names with at least one estimate: fixes the export schema up front."""
    return sorted(
        set(JudgeEstimate.objects.values_list("config__name", flat=True).distinct().order_by())
    )


def judge_columns_aligned(
    triple_ids: Sequence[int], names: Sequence[str] | None = None
) -> dict[str, list[Any]]:
    """Column name -> values aligned with `triple_ids` (None where no judge scored the triple),
    for the columns of `names` (default: every configuration with estimates). Ready for
    `pyarrow.array(values)` chunk by chunk in the streaming export."""
    names = list(names) if names is not None else judge_config_names()
    columns = judge_column_names(names)
    _, values = judge_columns(triple_ids)
    empty: dict[str, Any] = {}
    return {col: [values.get(tid, empty).get(col) for tid in triple_ids] for col in columns}
