from __future__ import annotations

from django import template
from django.utils.safestring import SafeString, mark_safe

from lib.markdown import render_markdown

register = template.Library()


@register.filter
def guideline_markdown(text: str) -> SafeString:
    # render_markdown escapes raw HTML and sanitises the result with nh3 (ammonia).
    return mark_safe(render_markdown(text))  # noqa: S308
