from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from lib.markdown import render_markdown

register = template.Library()


@register.filter
def markdown(text: str) -> SafeString:
    # render_markdown escapes raw HTML and sanitises the result with nh3 (ammonia).
    return mark_safe(render_markdown(text))  # noqa: S308


@register.simple_tag
def score_options(row: Mapping[str, Any], editable: bool, na_text: str) -> SafeString:
    """The radio buttons of one criterion of the scoring page: its scale's levels, then NA.

    A page has about 50 of them; written here rather than as a template loop they cost a
    tenth of the time (the loop's lookups and tags were the largest part of rendering the
    page). `row` is a row of selectors.scoring_rows; every value written is escaped.
    """
    name = f"score_{escape(row['tid'])}"
    disabled = "" if editable else " disabled"
    options = []
    for level in row["levels"]:
        chosen, checked = ("chosen", " checked") if level["on"] else ("", "")
        value = escape(level["value"])
        options.append(
            f'<label class="{chosen}">'
            f'<input type="radio" name="{name}" value="{value}"{checked}{disabled}>'
            f"<span><b>{value}</b> — {escape(level['text'])}</span></label>"
        )
    if row["allows_na"]:
        chosen, checked = ("chosen", " checked") if row["is_na"] else ("", "")
        options.append(
            f'<label class="{chosen}">'
            f'<input type="radio" name="{name}" value="na"{checked}{disabled}>'
            f"<span><b>NA</b> — {escape(na_text)}</span></label>"
        )
    return mark_safe("\n".join(options))  # noqa: S308 (built from escaped values only)
