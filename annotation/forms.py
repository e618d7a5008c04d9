"""Parsing the scoring form (one field set per criterion: score_<triple>, rationale_<triple>)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotation.services import ScoreInput


def _int(value: Any, default: int = 0) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return default


def parse_score(raw: Any) -> tuple[int | None, bool, bool]:
    """(score, is_na, malformed) from a posted score value: a number or 'na'."""
    if raw in (None, ""):
        return None, False, False
    if str(raw).lower() == "na":
        return None, True, False
    try:
        return int(str(raw)), False, False
    except ValueError:
        return None, False, True


def items_from_post(data: Mapping[str, Any], triple_ids: list[int]) -> list[ScoreInput]:
    items = []
    for triple_id in triple_ids:
        score, is_na, _malformed = parse_score(data.get(f"score_{triple_id}"))
        items.append(
            ScoreInput(
                triple_id=triple_id,
                score=score,
                is_na=is_na,
                rationale=str(data.get(f"rationale_{triple_id}", ""))[:20000],
                time_spent_ms=_int(data.get(f"time_{triple_id}")),
            )
        )
    return items


def time_total(data: Mapping[str, Any]) -> int:
    return _int(data.get("time_total"))
