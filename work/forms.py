"""Parsing the scoring form (one field set per criterion: score_<triple>, rationale_<triple>).

Also the strict parsers of numbers typed into URLs and forms: only ASCII digits are numbers
("²" and "٣" are digits to str.isdigit and int() but not ids: lib.integers is the one reader,
the APIs' too), and every value is checked against the range of the column it is stored in or
compared with, so a bad value is a client error naming the field, never a database "out of
range" (500).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext as _

from lib.integers import ascii_int
from work.services import ScoreInput

# PostgreSQL column ranges: bigint (ids, PositiveBigIntegerField) and smallint (scores).
BIGINT_MAX = 2**63 - 1
SMALLINT_MIN, SMALLINT_MAX = -(2**15), 2**15 - 1
# Time spent on one answer or criterion: a week is already absurd; stored as bigint.
TIME_SPENT_MAX_MS = 7 * 24 * 3600 * 1000


def parse_id(raw: Any) -> int | None:
    """A database id from a URL or form value: ASCII digits within bigint range, else None."""
    value = ascii_int(str(raw)) if raw is not None else None
    return value if value is not None and 0 < value <= BIGINT_MAX else None


def parse_score(raw: Any) -> tuple[int | None, bool, bool]:
    """(score, is_na, malformed) from a posted score value: a number or 'na'.

    A number is ASCII digits with an optional minus, within the score column's range; anything
    else is malformed (whether it is on the criterion's scale is the service's question).
    """
    if raw in (None, ""):
        return None, False, False
    text = str(raw).strip()
    if text.lower() == "na":
        return None, True, False
    value = ascii_int(text, signed=True)
    if value is None or not SMALLINT_MIN <= value <= SMALLINT_MAX:
        return None, False, True
    return value, False, False


def parse_duration(raw: Any) -> int | None:
    """Milliseconds from a hidden time field: "" is 0; None when it is no duration at all."""
    text = str(raw).strip() if raw is not None else ""
    if not text:
        return 0
    value = ascii_int(text)
    return value if value is not None and value <= TIME_SPENT_MAX_MS else None


def items_from_post(
    data: Mapping[str, Any], triple_ids: list[int]
) -> tuple[list[ScoreInput], dict[int, list[str]]]:
    """The posted criteria, and the fields that are no valid input (per criterion, named).

    The rationale is passed on whole: a too long one is refused by the service with its
    field's error and shown again in full, never cut.
    """
    items = []
    errors: dict[int, list[str]] = {}
    for triple_id in triple_ids:
        score_field, time_field = f"score_{triple_id}", f"time_{triple_id}"
        score, is_na, malformed = parse_score(data.get(score_field))
        if malformed:
            errors.setdefault(triple_id, []).append(
                _("%(field)s: unknown score.") % {"field": score_field}
            )
        time_spent = parse_duration(data.get(time_field))
        if time_spent is None:
            errors.setdefault(triple_id, []).append(
                _("%(field)s: not a duration in milliseconds.") % {"field": time_field}
            )
        items.append(
            ScoreInput(
                triple_id=triple_id,
                score=score,
                is_na=is_na,
                rationale=str(data.get(f"rationale_{triple_id}", "")),
                time_spent_ms=time_spent or 0,
            )
        )
    return items, errors


def time_total(data: Mapping[str, Any]) -> int | None:
    """The page's total time (time_total); None when it is no duration."""
    return parse_duration(data.get("time_total"))
