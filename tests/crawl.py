"""A crawl of the pages a person reaches by links, as the Django test client sees them.

Used by the tests that check every page at once (pre-filled forms taken back, no raw keys or
English left on a Russian page): each page parsed once into its links, its forms (field values
as a browser would send them) and its visible text.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

from django.test import Client

TEXT_TYPES = {"text", "number", "search", ""}
# Links a crawl must not follow: leaving, downloads (no page), the admin site (Django's own).
SKIP = re.compile(r"logout|download|export|/admin/|\.(?:xlsx|zip|parquet|jsonl|csv)\b|/media/")
# Text that is not interface: scripts, styles, code shown as code, and what a person typed.
_NOT_INTERFACE = {"script", "style", "code", "pre", "textarea", "kbd", "samp"}


class Page(HTMLParser):
    """The links, forms and visible text of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.forms: list[dict[str, Any]] = []
        self.texts: list[str] = []
        self._form: dict[str, Any] | None = None
        self._select: str | None = None
        self._textarea: str | None = None
        # Open elements whose text is not interface: [tag, nesting of that tag inside it].
        self._hidden: list[list[Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag in _NOT_INTERFACE or "data-content" in a:
            self._hidden.append([tag, 1])
        elif self._hidden and self._hidden[-1][0] == tag:
            self._hidden[-1][1] += 1
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        elif tag == "form":
            self._form = {
                "action": a.get("action", ""),
                "method": a.get("method", "get").lower(),
                "fields": [],
                "visible": [],
            }
            self.forms.append(self._form)
        elif self._form is None:
            return
        elif tag == "input" and a.get("name") and "disabled" not in a:
            kind = a.get("type", "").lower()
            if kind in {"checkbox", "radio"} and "checked" not in a:
                return
            if kind in {"submit", "button", "file", "image", "reset"}:
                return
            self._form["fields"].append((a["name"], a.get("value", "")))
            if kind in TEXT_TYPES:
                self._form["visible"].append(a.get("value", ""))
        elif tag == "select" and a.get("name"):
            self._select = a["name"]
            self._form["fields"].append((a["name"], None))
        elif tag == "option" and self._select:
            fields = self._form["fields"]
            name, value = fields[-1]
            if value is None or "selected" in a:
                fields[-1] = (name, a.get("value", ""))
        elif tag == "textarea" and a.get("name"):
            self._textarea = a["name"]
            self._form["fields"].append((a["name"], ""))
            self._form["visible"].append("")

    def handle_data(self, data: str) -> None:
        if self._form is not None and self._textarea:
            name, value = self._form["fields"][-1]
            self._form["fields"][-1] = (name, value + data)
            self._form["visible"][-1] += data
        if not self._hidden and data.strip():
            self.texts.append(" ".join(data.split()))

    def handle_endtag(self, tag: str) -> None:
        if self._hidden and self._hidden[-1][0] == tag:
            self._hidden[-1][1] -= 1
            if not self._hidden[-1][1]:
                self._hidden.pop()
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None


def crawl(client: Client, start: list[str], *, limit: int = 120) -> list[tuple[str, Page]]:
    """The HTML pages reachable from `start` by links (breadth first, at most `limit`)."""
    seen: set[str] = set()
    queue = list(start)
    pages: list[tuple[str, Page]] = []
    while queue and len(pages) < limit:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        response = client.get(url, follow=True)
        if response.status_code != 200 or "html" not in response.get("Content-Type", ""):
            continue
        if response.redirect_chain:  # a landing page ("/" sends each role to its own)
            url = urljoin(url, response.redirect_chain[-1][0])
            if url in seen:
                continue
            seen.add(url)
        page = Page()
        page.feed(response.content.decode())
        pages.append((url, page))
        for href in page.links:
            target = urljoin(url, href).split("#")[0]
            parts = urlsplit(target)
            if parts.netloc or SKIP.search(target) or not parts.path.startswith("/"):
                continue
            queue.append(target)
    return pages
