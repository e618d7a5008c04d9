"""Markdown rendered safely: no raw HTML, highlighted code (instructions, answers, guidelines)."""

from __future__ import annotations

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

_FORMATTER = HtmlFormatter(nowrap=True)
ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code",
    "pre", "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "span",
    "a", "sup", "sub",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"span": {"class"}, "code": {"class"}, "pre": {"class"}, "a": {"href"}}


def _highlight(code: str, lang: str, _attrs: str) -> str:
    try:
        lexer = get_lexer_by_name(lang) if lang else None
    except ClassNotFound:
        lexer = None
    if lexer is None:
        return ""  # markdown-it escapes the code itself
    return highlight(code, lexer, _FORMATTER)


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # html=False: raw HTML in model output is shown as text, never interpreted.
    return MarkdownIt("commonmark", {"html": False, "highlight": _highlight}).enable("table")


@lru_cache(maxsize=512)
def render_markdown(text: str) -> str:
    """Safe HTML of a text; cached per process, since every expert of an answer renders it."""
    html = _parser().render(text or "")
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


@lru_cache(maxsize=1)
def pygments_css() -> str:
    return str(_FORMATTER.get_style_defs(".text pre"))
