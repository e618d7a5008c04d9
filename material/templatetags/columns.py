"""`{{ "instruction_id, answer"|columns }}`: a file's column names as code, not as words of the
page (they are what the file must say, in any language)."""

from __future__ import annotations

from django import template
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

register = template.Library()


@register.filter
def columns(names: str) -> SafeString:
    return format_html_join(
        ", ", "<code>{}</code>", ((n.strip(),) for n in names.split(",") if n.strip())
    )
