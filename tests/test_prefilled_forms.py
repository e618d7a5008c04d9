"""Every form that shows a number takes it back unchanged, in Russian and in English.

Django writes 1000.0 as "1000,0" on a Russian page; a form that then reads the value with
float() refuses its own pre-filled figures (the rankings page did: "elo_initial: must be a
number"). The demo is seeded, every page a person reaches from the home page is crawled as each
demo role in each language, and every form that shows a number and can be sent as it stands is
submitted unchanged: the answer must not be an error.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode, urljoin

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from demo.demo_data import DEMO_ADMIN, DEMO_EXPERT, DEMO_SUPERVISOR
from demo.demo_markup import DEMO_PARTICIPANT
from tests.crawl import SKIP, crawl
from tests.test_demo import demo_settings, seed  # noqa: F401 -- a fixture, used by name

NUMBER = re.compile(r"-?[0-9]+(?:[.,][0-9]+)?")
PAGES_PER_PERSON = 120


def _prefilled_with_a_number(form: dict[str, Any]) -> bool:
    """A form that shows a number and can be sent as it stands: every visible field filled (a
    filter, sent by GET, may leave fields empty)."""
    visible = [v.strip() for v in form["visible"]]
    complete = form["method"] == "get" or all(visible)
    return complete and any(NUMBER.fullmatch(v) for v in visible)


# A crawl of every page as each demo persona: tens of seconds, so not in --quick.
@pytest.mark.slow
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
            for url, page in crawl(client, start, limit=PAGES_PER_PERSON):
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
