"""A leaderboard's score as the pages report it: a stored mean on [0, 1] on POLLUX's 0–2
scale (protocol.leaderboard.reported), three decimals; "—" for none."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.template.defaultfilters import floatformat

from protocol.leaderboard import REPORTED_HIGH, REPORTED_LOW, reported

register = template.Library()


@register.filter
def score(value: Any) -> str:
    """`{{ row.mean|score }}`: 0.75 → "1.500"."""
    if value is None or value == "":
        return "—"
    return str(floatformat(reported(float(value)), 3))


@register.filter
def score_difference(value: Any) -> str:
    """A difference of two means on the reported scale (no offset: 0 stays 0)."""
    if value is None or value == "":
        return "—"
    return str(floatformat(float(value) * (REPORTED_HIGH - REPORTED_LOW), 3))


@register.simple_tag
def score_scale() -> str:
    """The reported scale, as the pages label it: "0–2"."""
    return f"{REPORTED_LOW:g}–{REPORTED_HIGH:g}"


@register.filter
def settings_json(value: Any) -> str:
    """Inference settings as the participant writes them (JSON), not as Python prints a dict."""
    if value in (None, ""):
        return "—"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
