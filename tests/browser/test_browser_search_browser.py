"""The data browser answers as the supervisor types, in real Chromium: no Filter button pressed,
the results follow the search box, the address follows the filters, a bad filter says why."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from material.models import Answer
from panels.models import Panel
from tests.browser.conftest import login
from tests.conftest import PASSWORD, make_expert, make_user
from work.assignments import assignments_build

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("language", ["ru", "en"])
def test_results_follow_what_is_typed(
    live_server: Any,
    page: Any,
    make_answer: Callable[..., Answer],
    tmp_path: Path,
    language: str,
) -> None:
    science = Panel.objects.get(key="science")
    make_expert("alice", science)
    science.supervisors.add(make_user("supervisor"))
    answers = [
        make_answer(text="Фотосинтез идёт в хлоропластах."),
        make_answer(text="Митохондрии дают клетке энергию."),
    ]
    assignments_build(answer_ids=[a.pk for a in answers])
    page.context.add_cookies(
        [{"name": "django_language", "value": language, "url": live_server.url}]
    )
    login(page, live_server.url, "supervisor", PASSWORD)
    page.goto(f"{live_server.url}/console/browse/")
    rows = page.locator("#browser-results tr.browser-row")
    assert rows.count() == 2
    page.fill("input[name=q]", "хлоропласт")  # typed, Filter not pressed
    page.wait_for_function(
        "document.querySelectorAll('#browser-results tr.browser-row').length === 1"
    )
    assert "хлоропласт" in rows.first.inner_text()
    assert "q=" in page.url  # the address holds the filter: a reload shows the same
    page.screenshot(path=str(tmp_path / f"browser-typed-{language}.png"), full_page=True)
    # A filter that cannot be read says why where the results were; the form keeps its text.
    page.fill("input[name=conf_min]", "2")
    page.wait_for_selector("#browser-error")
    label = {"ru": "Уверенность от", "en": "Confidence from"}[language]
    assert label in page.inner_text("#browser-error")  # the form's word, not the key
    assert page.input_value("input[name=q]") == "хлоропласт"
    page.screenshot(path=str(tmp_path / f"browser-error-{language}.png"), full_page=True)
    page.fill("input[name=conf_min]", "")
    page.wait_for_function(
        "document.querySelectorAll('#browser-results tr.browser-row').length === 1"
    )
