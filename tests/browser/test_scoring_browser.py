"""An expert scores a whole answer with the keyboard in real Chromium."""

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


def _pick(block: Any, value: str) -> None:
    # As the keyboard handler does (a click may land elsewhere while the page scrolls smoothly).
    block.locator(f"input[type=radio][value='{value}']").evaluate(
        "el => { el.checked = true; el.dispatchEvent(new Event('change', {bubbles: true})); }"
    )


def test_the_page_applies_the_servers_rule_and_each_criterions_best_end(
    live_server: Any, page: Any, make_answer: Callable[..., Answer], settings: Any
) -> None:
    """ "Нет" on a critical gate scored 0 (its best) is enough; a one-word violation is not;
    the rule's parameters on the page are the server's, not hard-coded."""
    settings.POLLUX = {**settings.POLLUX, "RATIONALE_SCRIPT_SHARE": 0.6}
    science = Panel.objects.get(key="science")
    alice = make_expert("alice", science)
    make_expert("bob", science)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    mine = Assignment.objects.get(expert=alice, panel=science)

    login(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/assignments/{mine.pk}/")
    rule = page.evaluate("JSON.parse(document.getElementById('rationale-rule').textContent)")
    assert rule["script_share"] == 0.6 and rule["script"] == "cyrillic"
    assert page.locator("#scoring-form[data-script]").count() == 0

    blocks = page.locator("fieldset.criterion")
    gate = blocks.nth(0)
    assert gate.get_attribute("data-group") == "critical" and gate.get_attribute("data-best") == "0"
    # A one-word violation (1) is refused on the page already.
    _pick(gate, "1")
    gate.locator("textarea").fill("Нарушение")
    gate.locator("textarea").blur()
    assert "слов" in gate.locator(".field-error").inner_text()
    # Mostly Latin with a few Cyrillic letters fails at the server's 0.6 share.
    gate.locator("textarea").fill("Да no")
    gate.locator("textarea").blur()
    assert "кириллиц" in gate.locator(".field-error").inner_text()

    for i in range(blocks.count()):
        block = blocks.nth(i)
        best = block.get_attribute("data-best")
        _pick(block, str(best))
        block.locator("textarea").fill(
            "Нет" if block.get_attribute("data-group") == "critical" else GOOD
        )
    page.locator("#submit-scores").click()
    page.wait_for_url("**/queue/**")
    stored = Estimate.objects.filter(assignment=mine, status="submitted")
    assert stored.filter(triple__group="critical", rationale="Нет", score=0).count() == 2
