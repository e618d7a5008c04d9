"""A candidate fails an exam in real Chromium, the supervisor reviews the mismatches and
overrides, and the candidate then receives work."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from material.models import Answer
from panels.models import Membership
from quality.exams import ReferenceInput, exam_create, exam_item_add, exam_references_set
from quality.models import ExamAttempt
from taxonomy.services import criteria_for
from tests.browser.conftest import login
from tests.conftest import PASSWORD, Personas, make_expert
from work.models import Assignment, AssignmentKind, ReservedAnswer

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RATIONALE = "Ответ частично верен, есть неточности."


def test_a_failed_candidate_is_overridden_by_the_supervisor_and_then_gets_work(
    live_server: Any,
    browser: Any,
    personas: Personas,
    make_answer: Callable[..., Answer],
) -> None:
    panel = personas.panel_a
    candidate = make_expert("candidate", panel, qualified=False)
    exam_answer = make_answer(text="Ответ для экзамена о фотосинтезе.")
    work_answer = make_answer(text="Рабочий ответ модели о митозе.")
    chosen = [
        c
        for c in criteria_for(exam_answer.instruction)
        if c.group != "critical" and c.rubric and c.rubric.values == [0, 1, 2]
    ][:2]
    exam = exam_create(panel=panel, title="Экзамен: наука", user=personas.supervisor_a,
                       is_active=True)  # fmt: skip
    exam, item = exam_item_add(exam=exam, answer=exam_answer, user=personas.supervisor_a)
    exam_references_set(
        exam=exam,
        rows=[
            ReferenceInput(item.scored_answer_id, chosen[0].pk, 2, comment="Эталон: всё верно"),
            ReferenceInput(item.scored_answer_id, chosen[1].pk, 2, comment="Эталон: без ошибок"),
        ],
        user=personas.supervisor_a,
    )

    # The candidate takes the exam in the ordinary scoring page and scores 0 everywhere.
    cand = browser.new_context(locale="ru-RU").new_page()
    cand.set_default_timeout(15000)
    login(cand, live_server.url, "candidate", PASSWORD)
    cand.goto(f"{live_server.url}/exams/")
    cand.click("button.start-exam")
    cand.wait_for_url("**/assignments/*/")
    assert "Эталон" not in cand.content()
    blocks = cand.locator("fieldset.criterion")
    assert blocks.count() == 2
    for i in range(2):
        triple = blocks.nth(i).get_attribute("data-triple")
        cand.check(f"input[name=score_{triple}][value='0']")
        cand.fill(f"textarea[name=rationale_{triple}]", RATIONALE)
    cand.click("#submit-scores")
    # The last exam item leads to the exam's result, never to regular work (issue #11, item 20).
    cand.wait_for_url("**/exams/**")
    assert cand.locator(".verdict.failed").count() == 1
    attempt = ExamAttempt.objects.get(expert=candidate)
    assert (attempt.n_matched, attempt.n_total, attempt.passed) == (0, 2, False)
    assert not Membership.objects.get(expert=candidate, panel=panel).qualified

    # The supervisor reviews the mismatches side by side and overrides with a reason.
    sup = browser.new_context(locale="ru-RU").new_page()
    sup.set_default_timeout(15000)
    login(sup, live_server.url, "sup_a", PASSWORD)
    sup.goto(f"{live_server.url}/console/exams/{exam.pk}/")
    sup.click("#attempts a")
    sup.wait_for_url(f"**/console/attempts/{attempt.pk}/")
    rows = sup.locator("#mismatches tbody tr.mismatch")
    assert rows.count() == 2
    first = rows.nth(0)
    assert first.locator("td.cand").inner_text().strip() == "0"
    assert first.locator("td.ref").inner_text().strip() == "2"
    assert RATIONALE in first.inner_text() and "Эталон" in first.inner_text()
    sup.select_option("select[name=passed]", "1")
    sup.fill("textarea[name=reason]", "Кандидат строже эталона, но рассуждает верно")
    sup.click("#override-submit")
    sup.wait_for_selector("#override")
    assert "Кандидат строже эталона" in sup.inner_text("#override")
    assert Membership.objects.get(expert=candidate, panel=panel).qualified

    # The supervisor builds assignments (htmx polls the job); the candidate now gets work.
    sup.goto(f"{live_server.url}/console/panels/{panel.pk}/")
    sup.click("#build-assignments")
    sup.wait_for_selector(".job[data-status=done]")
    work = Assignment.objects.filter(expert=candidate, kind=AssignmentKind.WORK)
    got = set(work.values_list("answer_id", flat=True))
    # Real answers only (the exam's source answer is real material too); never exam copies.
    assert got == {work_answer.pk, exam_answer.pk}
    assert not ReservedAnswer.objects.filter(answer_id__in=got).exists()

    cand.goto(f"{live_server.url}/queue/")
    assert cand.locator("tbody tr").count() == 3  # the submitted exam answer and two new ones
    mine = work.get(answer=work_answer)
    cand.goto(f"{live_server.url}/assignments/{mine.pk}/")
    assert "митозе" in cand.content()
    assert cand.locator("#closed-reason").count() == 0
