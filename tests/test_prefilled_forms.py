"""Every form that shows a number takes it back unchanged, in Russian and in English.

Django writes 1000.0 as "1000,0" on a Russian page; a form that then reads the value with
float() refuses its own pre-filled figures (the rankings page did: "elo_initial: must be a
number"). The demo is seeded, every page a person reaches from the home page is crawled as each
demo role in each language, and every form that shows a number and can be sent as it stands is
submitted unchanged: the answer must not be an error.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from demo.demo_data import DEMO_ADMIN, DEMO_EXPERT, DEMO_SUPERVISOR
from demo.demo_markup import DEMO_PARTICIPANT
from tests.test_demo import demo_settings, seed  # noqa: F401 -- a fixture, used by name

NUMBER = re.compile(r"-?[0-9]+(?:[.,][0-9]+)?")
TEXT_TYPES = {"text", "number", "search", ""}
# Links a crawl must not follow: leaving, downloads (no page), the admin site (Django's own).
SKIP = re.compile(r"logout|download|export|/admin/|\.(?:xlsx|zip|parquet|jsonl|csv)\b|/media/")
PAGES_PER_PERSON = 120


class _Page(HTMLParser):
    """The links and forms of a page (field values as the browser would send them)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.forms: list[dict[str, Any]] = []
        self._form: dict[str, Any] | None = None
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
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

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None


def _prefilled_with_a_number(form: dict[str, Any]) -> bool:
    """A form that shows a number and can be sent as it stands: every visible field filled (a
    filter, sent by GET, may leave fields empty)."""
    visible = [v.strip() for v in form["visible"]]
    complete = form["method"] == "get" or all(visible)
    return complete and any(NUMBER.fullmatch(v) for v in visible)


def _crawl(client: Client, start: list[str]) -> list[tuple[str, _Page]]:
    seen: set[str] = set()
    queue = list(start)
    pages: list[tuple[str, _Page]] = []
    while queue and len(pages) < PAGES_PER_PERSON:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        response = client.get(url)
        if response.status_code != 200 or "html" not in response.get("Content-Type", ""):
            continue
        page = _Page()
        page.feed(response.content.decode())
        pages.append((url, page))
        for href in page.links:
            target = urljoin(url, href).split("#")[0]
            parts = urlsplit(target)
            if parts.netloc or SKIP.search(target) or not parts.path.startswith("/"):
                continue
            queue.append(target)
    return pages


@pytest.mark.django_db
def test_every_prefilled_number_form_takes_its_own_values_back(demo_settings: Any) -> None:  # noqa: F811
    seed()
    people = [DEMO_ADMIN.username, DEMO_SUPERVISOR.username, DEMO_EXPERT, DEMO_PARTICIPANT.username]
    start = [
        "/",
        reverse("comparison_rankings"),
        reverse("console_browser") + "?" + urlencode({"conf_min": "0.5", "conf_max": "1"}),
    ]
    submitted: list[str] = []
    failures: list[str] = []
    for language in ("ru", "en"):
        for username in people:
            client = Client(HTTP_ACCEPT_LANGUAGE=language)
            client.force_login(get_user_model().objects.get(username=username))
            for url, page in _crawl(client, start):
                for form in page.forms:
                    if not _prefilled_with_a_number(form):
                        continue
                    action = urljoin(url, form["action"] or url)
                    if SKIP.search(action):
                        continue
                    data = [(k, v) for k, v in form["fields"] if k != "csrfmiddlewaretoken"]
                    if form["method"] == "post":
                        response = client.post(
                            action,
                            urlencode(data),
                            content_type=("application/x-www-form-urlencoded"),
                        )
                    else:
                        response = client.get(action + "?" + urlencode(data))
                    label = f"{language} {username} {form['method']} {action} from {url}"
                    submitted.append(label)
                    if response.status_code >= 400:
                        failures.append(f"{label}: {response.status_code}")
    # The rankings form (every figure pre-filled) and the data browser's filter at least.
    assert any("rankings" in s and s.startswith("ru ") for s in submitted), submitted
    assert any("browse" in s and s.startswith("ru ") for s in submitted), submitted
    assert not failures, failures
