"""A submission that fails (server error, lost connection) keeps what the expert typed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from material.models import Answer
from panels.models import Panel
from tests.browser.conftest import login
from tests.conftest import PASSWORD, make_expert
from work.assignments import assignments_build
from work.models import Assignment, Estimate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GOOD = "Ответ соответствует критерию без замечаний."


def _fill(page: Any) -> int:
    blocks = page.locator("fieldset.criterion")
    for i in range(blocks.count()):
        block = blocks.nth(i)
        top = block.get_attribute("data-top")
        value = "0" if block.get_attribute("data-group") == "critical" else str(top)
        block.locator(f"input[type=radio][value='{value}']").check()
        block.locator("textarea").fill(f"{GOOD} {i}")
    return int(blocks.count())


def test_a_failed_submit_keeps_the_text_and_a_reload_restores_it(
    live_server: Any, page: Any, make_answer: Callable[..., Answer]
) -> None:
    science = Panel.objects.get(key="science")
    make_expert("alice", science)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    mine = Assignment.objects.get(expert__user__username="alice", panel=science)
    url = f"{live_server.url}/assignments/{mine.pk}/"

    login(page, live_server.url, "alice", PASSWORD)
    # Autosaves never reach the server and the submission meets a server error.
    page.route("**/draft/", lambda route: route.abort())
    page.route(
        f"**/assignments/{mine.pk}/",
        lambda route: (
            route.fulfill(status=500, body="boom")
            if route.request.method == "POST"
            else route.continue_()
        ),
    )
    page.goto(url)
    n = _fill(page)
    page.keyboard.press("Control+Enter")
    notice = page.locator("#submit-notice")
    notice.wait_for()
    assert "500" in notice.inner_text()
    assert page.url == url  # still on the form, with the text
    assert page.locator("textarea").first.input_value() == f"{GOOD} 0"
    assert not Estimate.objects.filter(assignment=mine, status="submitted").exists()
    assert not Estimate.objects.filter(assignment=mine).exclude(rationale="").exists()

    # The tab is reloaded (or the browser restarted): the unsent text comes back.
    page.reload()
    page.locator("#submit-notice").wait_for()
    assert page.locator("textarea").nth(n - 1).input_value() == f"{GOOD} {n - 1}"
    assert page.locator("input[type=radio]:checked").count() == n

    # The connection drops: the same, with its own message.
    page.unroute(f"**/assignments/{mine.pk}/")
    page.route(
        f"**/assignments/{mine.pk}/",
        lambda route: route.abort() if route.request.method == "POST" else route.continue_(),
    )
    page.locator("#submit-scores").click()
    page.wait_for_function("document.getElementById('submit-notice').textContent.includes('связи')")
    assert page.locator("textarea").first.input_value() == f"{GOOD} 0"

    # The server is back: the submission goes through and the local copy is dropped.
    page.unroute(f"**/assignments/{mine.pk}/")
    page.locator("#submit-scores").click()
    page.wait_for_url("**/queue/**")
    stored = Estimate.objects.filter(assignment=mine, status="submitted")
    assert stored.count() == n
    assert page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('pollux:'))") == []


def test_the_scoring_page_opens_at_the_instruction(
    live_server: Any, page: Any, make_answer: Callable[..., Answer]
) -> None:
    science = Panel.objects.get(key="science")
    make_expert("alice", science)
    answer = make_answer(text="Длинный ответ модели. " * 200)
    assignments_build(answer_ids=[answer.pk])
    mine = Assignment.objects.get(expert__user__username="alice", panel=science)
    page.set_viewport_size({"width": 1280, "height": 700})
    login(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/assignments/{mine.pk}/")
    page.wait_for_timeout(800)  # a smooth scroll would have moved by now
    assert page.evaluate("window.scrollY") == 0
    assert page.locator("#instruction-text").is_visible()


def test_the_queue_fits_a_phone_and_every_button_is_styled(
    live_server: Any, page: Any, make_answer: Callable[..., Answer]
) -> None:
    science = Panel.objects.get(key="science")
    make_expert("alice", science)
    assignments_build(answer_ids=[make_answer().pk, make_answer().pk])
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/queue/")
    assert page.locator("tbody tr").count() == 2
    # Nothing sticks out to the right of a 390 px screen.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    status_cell = page.locator("tbody tr td").nth(3).bounding_box()
    assert status_cell["x"] + status_cell["width"] <= 390
    # A plain <button> gets the app's look, not the browser's default.
    radius = page.evaluate(
        "(() => { const b = document.createElement('button'); document.body.appendChild(b);"
        " return getComputedStyle(b).borderTopLeftRadius; })()"
    )
    assert radius == "6px"
