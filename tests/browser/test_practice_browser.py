"""An expert does one practice item in real Chromium and sees the reference comment next to his
own score right after submitting it (training before the exam, issue #18)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from material.models import Answer
from panels.models import Membership
from quality.exams import ReferenceInput, exam_create, exam_item_add, exam_references_set
from quality.models import ExamAttempt
from taxonomy.services import criteria_for
from tests.browser.conftest import login
from tests.conftest import PASSWORD, Personas, make_expert

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RATIONALE = "Ответ частично верен, есть неточности."
COMMENT = "Эталон: в ответе нет ошибок, поэтому высший балл."


def test_an_expert_does_one_practice_item_and_sees_the_reference_comment(
    live_server: Any,
    browser: Any,
    personas: Personas,
    make_answer: Callable[..., Answer],
    tmp_path: Path,
) -> None:
    panel = personas.panel_a
    candidate = make_expert("candidate", panel, qualified=False)
    answer = make_answer(text="Ответ для тренировки о фотосинтезе.")
    chosen = [
        c
        for c in criteria_for(answer.instruction)
        if c.group != "critical" and c.rubric and c.rubric.values == [0, 1, 2]
    ][:2]
    sup = personas.supervisor_a
    exam = exam_create(panel=panel, title="Тренировка: наука", user=sup, is_active=True,
                       mode="practice")  # fmt: skip
    exam, item = exam_item_add(exam=exam, answer=answer, user=sup)
    exam_references_set(
        exam=exam,
        rows=[
            ReferenceInput(item.scored_answer_id, chosen[0].pk, 2, comment=COMMENT),
            ReferenceInput(item.scored_answer_id, chosen[1].pk, 0, comment="Эталон: ноль"),
        ],
        user=sup,
    )

    page = browser.new_context(locale="ru-RU").new_page()
    page.set_default_timeout(15000)
    login(page, live_server.url, "candidate", PASSWORD)
    page.goto(f"{live_server.url}/exams/")
    assert page.locator("h2.exam-mode").first.inner_text().strip() == "Тренировка"
    page.click("section.practice button.start-exam")
    page.wait_for_url("**/assignments/*/")
    assert "Эталон" not in page.content()
    blocks = page.locator("fieldset.criterion")
    assert blocks.count() == 2
    for i in range(2):
        triple = blocks.nth(i).get_attribute("data-triple")
        page.check(f"input[name=score_{triple}][value='0']")
        page.fill(f"textarea[name=rationale_{triple}]", RATIONALE)
    page.click("#submit-scores")
    page.wait_for_url("**/feedback/")
    page.wait_for_selector("#practice-feedback")
    page.screenshot(path=str(tmp_path / "practice-feedback.png"), full_page=True)
    first = page.locator(f"tr[data-criterion='{chosen[0].key}']")
    assert first.get_attribute("class") == "mismatch"
    assert first.locator("td.cand").inner_text().startswith("0")
    assert first.locator("td.ref").inner_text().strip() == "2"
    assert COMMENT in first.locator("td.ref-comment").inner_text()
    assert page.locator(f"tr[data-criterion='{chosen[1].key}']").get_attribute("class") == "match"

    page.click("#next-practice")
    page.wait_for_url("**/result/")
    page.screenshot(path=str(tmp_path / "practice-result.png"), full_page=True)
    assert COMMENT in page.inner_text("#mismatches")
    attempt = ExamAttempt.objects.get(expert=candidate)
    assert (attempt.n_matched, attempt.n_total, attempt.passed) == (1, 2, None)
    assert not Membership.objects.get(expert=candidate, panel=panel).qualified
