"""The scoring page keeps the answer in view, counts progress, and lets an expert skip and flag
(real Chromium). Screenshots go to the test's tmp_path (pytest keeps the last runs' folders)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from material.models import Answer
from panels.models import Panel
from tests.browser.conftest import login
from tests.conftest import PASSWORD, make_expert
from work.assignments import assignments_build
from work.models import Assignment, AssignmentStatus, Flag, FlagKind

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDE = {"width": 1400, "height": 900}


def _within_viewport(page: Any, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    assert box is not None, f"{selector} is not rendered"
    return bool(
        box["y"] >= 0
        and box["y"] + box["height"] <= WIDE["height"]
        and box["x"] >= 0
        and box["x"] + box["width"] <= WIDE["width"]
    )


def test_the_answer_stays_in_view_and_progress_counts_as_scores_are_chosen(
    live_server: Any, page: Any, make_answer: Callable[..., Answer], tmp_path: Path
) -> None:
    science = Panel.objects.get(key="science")
    alice = make_expert("alice", science)
    make_expert("bob", science)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    mine = Assignment.objects.get(expert=alice, panel=science, answer=answer)
    total = mine.estimates.count()

    page.set_viewport_size(WIDE)
    login(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/assignments/{mine.pk}/")
    assert page.locator("#progress-done").inner_text() == "0"
    assert page.locator("#progress-total").inner_text() == str(total)
    assert page.locator("#reserved-until").is_visible()

    page.keyboard.press("0")  # the first criterion (a critical gate): no violation
    page.wait_for_function("document.getElementById('progress-done').textContent === '1'")
    page.keyboard.press("Alt+ArrowDown")
    page.keyboard.press("0")  # the second gate (or a lowest score): nothing is skipped
    page.wait_for_function("document.getElementById('progress-done').textContent === '2'")

    # Side by side: the answer's column is left of the criteria.
    answer_box = page.locator("#answer-text").bounding_box()
    criteria_box = page.locator("#criteria-col").bounding_box()
    assert (
        answer_box and criteria_box and answer_box["x"] + answer_box["width"] <= criteria_box["x"]
    )

    last = page.locator("fieldset.criterion").last
    last.scroll_into_view_if_needed()
    last.click()
    assert _within_viewport(page, "fieldset.criterion:last-of-type")
    # The criteria column scrolled on its own; the answer did not move out of view.
    assert page.locator("#criteria-col").evaluate("el => el.scrollTop") > 0
    assert _within_viewport(page, "#answer-text")
    assert _within_viewport(page, "#scoring-progress")  # sticky on top of its column
    page.screenshot(path=str(tmp_path / "scoring-wide-last-criterion.png"))

    # Narrow screens: one column, the texts collapsible.
    page.set_viewport_size({"width": 420, "height": 800})
    page.locator("#answer-pane > summary").click()
    assert not page.locator("#answer-text").is_visible()
    page.locator("#answer-pane > summary").click()
    assert page.locator("#answer-text").is_visible()
    page.screenshot(path=str(tmp_path / "scoring-narrow.png"), full_page=True)


def test_an_expert_skips_one_answer_and_flags_another(
    live_server: Any, page: Any, make_answer: Callable[..., Answer], tmp_path: Path
) -> None:
    science = Panel.objects.get(key="science")
    alice = make_expert("alice", science)
    first, second = make_answer(), make_answer(text="Ответ модели: ### ??? обрыв")
    assignments_build(answer_ids=[first.pk, second.pk])
    skip_me = Assignment.objects.get(expert=alice, answer=first)
    flag_me = Assignment.objects.get(expert=alice, answer=second)

    page.set_viewport_size(WIDE)
    login(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/assignments/{skip_me.pk}/")
    page.locator("#skip-flag > summary").click()
    page.select_option("#flag-reason", "wrong_task")
    page.fill("#flag-comment", "Это не научный текст.")
    page.screenshot(path=str(tmp_path / "skip-form.png"))
    page.click("#skip-answer")
    # The next answer of the queue opens.
    page.wait_for_url(f"**/assignments/{flag_me.pk}/")

    page.locator("#skip-flag > summary").click()
    page.select_option("#flag-reason", "garbled")
    page.fill("#flag-comment", "Текст оборван.")
    page.click("#flag-broken")
    page.wait_for_url("**/queue/**")
    page.screenshot(path=str(tmp_path / "after-flag.png"))

    flags = {f.assignment_id: f for f in Flag.objects.all()}
    assert flags[skip_me.pk].kind == FlagKind.SKIP and flags[skip_me.pk].reason == "wrong_task"
    assert flags[flag_me.pk].kind == FlagKind.BROKEN
    assert flags[flag_me.pk].comment == "Текст оборван."
    for assignment in (skip_me, flag_me):
        assignment.refresh_from_db()
        assert assignment.status == AssignmentStatus.RELEASED
    # Released work leaves the queue's lists.
    assert str(skip_me.pk) not in page.locator("table").inner_text().split()
