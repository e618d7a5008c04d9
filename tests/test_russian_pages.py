"""Every page a demo persona reaches speaks Russian: no raw keys, no English left behind.

The demo is seeded once and every page each persona reaches from the home page is crawled in
Russian. Interface text (what `tests.crawl.Page.texts` keeps: not code, not what people wrote)
must not show
- a snake_case key (`too_few_estimates`, `special_symbol`) where a name belongs;
- an English catalogue name (a task's path, a task group's English name) where the Russian one
  exists;
- a translated message of the catalogue in English (a string that missed its translation when
  the page was rendered: a lazy string forced too early, a key shown instead of its label);
- a count with a plural form that does not agree with it ("12 ответы", "61 токены"): plurals go
  through ngettext / blocktranslate count.
"""

from __future__ import annotations

import gettext
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from demo.demo_data import DEMO_ADMIN, DEMO_EXPERT, DEMO_SUPERVISOR
from demo.demo_markup import DEMO_PARTICIPANT
from taxonomy.models import Task, TaskGroup
from tests.crawl import crawl
from tests.test_demo import demo_settings, seed  # noqa: F401 -- a fixture, used by name

PAGES_PER_PERSON = 120
SNAKE = re.compile(r"(?<![\w.@/-])[a-z][a-z0-9]*(?:__?[a-z0-9]+)+(?![\w@/-])")
# A count and a noun in the nominative plural (ending -ы/-и): wrong after any count ending in 1
# or 5–9, 0, 11–14 ("12 ответы"); after 2–4 it may be a genitive singular ("3 пары"), so those
# are left alone.
COUNT_NOUN = re.compile(r"(?<![\w.,])(\d+)\s+([а-яё]+[ыи])\b")
# A count ending in 1 (not 11) takes the singular; a genitive plural after it is wrong
# ("1 троек", "21 ответов").
COUNT_ONE_PLURAL = re.compile(r"(?<![\w.,])(\d*1)\s+([а-яё]+(?:ов|ев|ек|ей))\b")
# Words a Russian page keeps in Latin letters on purpose (technical names, brands).
LATIN_OK = {"json", "jsonl", "xlsx", "csv", "parquet", "api", "id"}

# Findings in code that issue #31 is restructuring now (work/, judging/, generation/): fixed by
# #31 work in progress. Each entry: a fragment of the page's URL and of the finding.
ALLOWED: list[tuple[str, str]] = [
    # work/ (the side-by-side page): "NA" untranslated.
    ("/assignments/", "'na' in 'NA'"),
]
# A name quoted «like this» in Russian text is a name of the data (a model's), not interface.
QUOTED = re.compile(r"«[^»]*»")


def _catalogue() -> dict[str, str]:
    """Translated singular messages of the Russian catalogue: msgid -> msgstr."""
    mo = Path(settings.BASE_DIR) / "locale" / "ru" / "LC_MESSAGES" / "django.mo"
    with mo.open("rb") as handle:
        catalog: dict[Any, str] = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
    messages: dict[str, str] = {}
    for key, value in catalog.items():
        if isinstance(key, tuple):  # a plural form: (msgid, n)
            key = key[0]
        if not key or not value or key == value:
            continue
        messages[key.split("\x04")[-1]] = value
    return messages


def _english_messages(catalogue: dict[str, str]) -> tuple[set[str], list[str]]:
    """Short messages a text must not equal, long messages it must not contain (English ones
    whose translation differs; format placeholders cut, the longest literal part kept)."""
    whole: set[str] = set()
    long: list[str] = []
    for msgid in catalogue:
        if not re.search(r"[A-Za-z]{2}", msgid):
            continue
        literal = max(re.split(r"%\(\w+\)[sdf]|%[sdf]|\{[^}]*\}", msgid), key=len).strip()
        if literal == msgid and " " not in msgid:
            whole.add(msgid.lower())
        if len(literal) >= 12 and " " in literal:
            long.append(literal)
    return whole, long


def _catalogue_names() -> list[str]:
    """English task paths and group names whose Russian name differs."""
    names = [g.name_en for g in TaskGroup.objects.all() if g.name_ru and g.name_ru != g.name_en]
    names += [t.path for t in Task.objects.filter(level__gt=0) if t.display_path() != t.path]
    return names


def _plural_mistakes(text: str) -> list[str]:
    found = []
    for match in COUNT_NOUN.finditer(text):
        n = int(match.group(1))
        if n % 10 in (2, 3, 4) and n % 100 not in (12, 13, 14):
            continue
        found.append(match.group(0))
    found += [m.group(0) for m in COUNT_ONE_PLURAL.finditer(text) if not m.group(1).endswith("11")]
    return found


def _findings(
    url: str, texts: list[str], whole: set[str], long: list[str], names: list[str]
) -> list[str]:
    found: list[str] = []
    for shown in texts:
        text = QUOTED.sub("«»", shown)
        for match in SNAKE.finditer(text):
            found.append(f"snake_case {match.group(0)!r} in {text!r}")
        for word in re.split(r"\s*(?:→|/|:|,|·|—|\(|\))\s*", text):
            token = word.strip(" .;:!?«»\"'").lower()
            if token in whole and token not in LATIN_OK:
                found.append(f"English message {token!r} in {text!r}")
        for literal in long:
            if literal in text:
                found.append(f"English message {literal!r} in {text!r}")
        for name in names:
            if name in text:
                found.append(f"English catalogue name {name!r} in {text!r}")
        for mistake in _plural_mistakes(text):
            found.append(f"plural {mistake!r} in {text!r}")
    return [f"{url}: {f}" for f in found if not any(p in url and t in f for p, t in ALLOWED)]


def russian_checker() -> Callable[[str, list[str]], list[str]]:
    """This module's checker for one page at a time (the browser walks of
    tests/browser/test_readme_walks.py use it): the catalogue is read once, then each call takes
    a page's URL and visible texts (`tests.crawl.Page.texts`) and returns its findings."""
    whole, long = _english_messages(_catalogue())
    names = _catalogue_names()
    return lambda url, texts: _findings(url, texts, whole, long, names)


# A crawl of every page as each demo persona: tens of seconds, so not in --quick.
@pytest.mark.slow
@pytest.mark.django_db
def test_every_page_in_russian_shows_names_not_keys(demo_settings: Any) -> None:  # noqa: F811
    seed()
    whole, long = _english_messages(_catalogue())
    names = _catalogue_names()
    people: list[str | None] = [
        None,
        DEMO_ADMIN.username,
        DEMO_SUPERVISOR.username,
        DEMO_EXPERT,
        DEMO_PARTICIPANT.username,
    ]
    start = [
        "/",
        reverse("comparison_rankings"),
        reverse("console_browser") + "?" + urlencode({"conf_min": "0.5", "conf_max": "1"}),
    ]
    failures: list[str] = []
    crawled = 0
    for username in people:
        client = Client(HTTP_ACCEPT_LANGUAGE="ru")
        if username:
            client.force_login(get_user_model().objects.get(username=username))
        for url, page in crawl(client, start, limit=PAGES_PER_PERSON):
            crawled += 1
            for finding in _findings(url, page.texts, whole, long, names):
                failures.append(f"{username or 'anonymous'} {finding}")
    assert crawled > 100, crawled
    unique = sorted(set(failures))
    assert not unique, f"{len(unique)} findings:\n" + "\n".join(unique)
