"""An expert scores a whole answer with the keyboard in real Chromium."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from annotation.assignments import assignments_build
from annotation.models import Answer, Assignment, Estimate
from panels.models import Panel
from tests.browser.conftest import login
from tests.conftest import PASSWORD, make_expert

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GOOD = "Ответ соответствует критерию без замечаний."


def test_an_expert_scores_a_whole_answer_with_the_keyboard(
    live_server: Any, page: Any, make_answer: Callable[..., Answer]
) -> None:
    science = Panel.objects.get(key="science")
    alice = make_expert("alice", science)
    bob = make_expert("bob", science)
    answer = make_answer(model="HiddenModel-7B")
    assignments_build(answer_ids=[answer.pk])
    mine = Assignment.objects.get(expert=alice, panel=science)
    theirs = Assignment.objects.get(expert=bob, panel=science)
    criteria = list(mine.estimates.select_related("triple__rubric").order_by("triple__position"))

    login(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/queue/")
    page.keyboard.press("n")  # opens the next answer
    page.wait_for_url(f"**/assignments/{mine.pk}/")
    assert "HiddenModel" not in page.content()

    blocks = page.locator("fieldset.criterion")
    assert blocks.count() == len(criteria)
    first_group = blocks.nth(0).get_attribute("data-group")
    assert first_group == "critical"  # critical gates come first

    for i in range(blocks.count()):
        block = blocks.nth(i)
        group = block.get_attribute("data-group")
        top = block.get_attribute("data-top")
        # Critical gates: 0 = no violation. Others: the top score, except a 1 on the third.
        key = "0" if group == "critical" else ("1" if i == 2 else str(top))
        assert group == "critical" or int(str(top)) > 1
        page.keyboard.press(key)
        # Picking a score moves the focus into the rationale field.
        assert block.locator("textarea").evaluate("el => el === document.activeElement")
        text = "Плохо" if i == 2 else GOOD  # one word for a non-top score breaks a rule
        page.keyboard.type(text)
        page.keyboard.press("Alt+ArrowDown")

    page.keyboard.press("Control+Enter")
    error = blocks.nth(2).locator(".field-error")
    assert "слов" in error.inner_text()
    assert Estimate.objects.filter(assignment=mine, status="submitted").count() == 0

    # Fix it: the textarea is focused on the faulty criterion.
    area = blocks.nth(2).locator("textarea")
    assert area.evaluate("el => el === document.activeElement")
    area.fill(GOOD)
    page.keyboard.press("Control+Enter")
    page.wait_for_url("**/queue/**")

    stored = Estimate.objects.filter(assignment=mine, status="submitted")
    assert stored.count() == len(criteria)
    assert set(stored.values_list("rationale", flat=True)) == {GOOD}
    assert stored.exclude(time_spent_ms=0).exists()

    page.goto(f"{live_server.url}/assignments/{mine.pk}/")
    checked = page.locator("input[type=radio]:checked")
    assert checked.count() == len(criteria)
    assert page.locator("textarea").first.input_value() == GOOD

    # Bob's assignment does not exist for Alice.
    response = page.goto(f"{live_server.url}/assignments/{theirs.pk}/")
    assert response is not None and response.status == 404
