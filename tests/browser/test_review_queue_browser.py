"""A supervisor works through a review queue by keyboard, in real Chromium: the lowest-confidence
queue -> j, Enter -> the first item's review page -> a accepts the selected estimate -> n opens
the next item of the same queue."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from dataset.models import TripleAggregate
from material.models import Answer
from panels.models import Panel
from tests.browser.conftest import login
from tests.conftest import PASSWORD, make_expert, make_user, rubric_of
from work.assignments import assignments_build
from work.models import Assignment, Estimate, ReviewStatus, Triple
from work.services import ScoreInput, assignment_submit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RATIONALE = "Ответ соответствует критерию без замечаний."


def _submit_best(assignment: Assignment) -> None:
    items = [
        ScoreInput(triple_id=e.triple_id, score=rubric_of(e.triple).best_value, rationale=RATIONALE)
        for e in assignment.estimates.select_related("triple__rubric")
    ]
    result = assignment_submit(assignment=assignment, items=items)
    assert result.ok, (result.errors, result.form_errors)


def test_a_supervisor_works_through_the_low_confidence_queue_by_keyboard(
    live_server: Any, page: Any, make_answer: Callable[..., Answer], tmp_path: Path
) -> None:
    science = Panel.objects.get(key="science")
    experts = [make_expert("alice", science), make_expert("bob", science)]
    science.supervisors.add(make_user("supervisor"))
    answers = [make_answer(text=f"Ответ модели номер {i}.") for i in range(2)]
    assignments_build(answer_ids=[a.pk for a in answers])
    for answer in answers:
        for expert in experts:
            _submit_best(Assignment.objects.get(expert=expert, answer=answer, kind="work"))
    triples = []
    for answer, confidence in zip(answers, (0.2, 0.4), strict=True):
        triple = (
            Triple.objects.filter(answer=answer, panel=science)
            .exclude(group="critical")
            .order_by("position", "pk")
            .first()
        )
        assert triple is not None
        TripleAggregate.objects.create(
            triple=triple, n_estimates=2, mean=3.0, mode=3, confidence=confidence
        )
        triples.append(triple)

    login(page, live_server.url, "supervisor", PASSWORD)
    page.goto(live_server.url + reverse("console_panel", args=[science.pk]))
    page.locator("#nav-review-queues").click()
    page.wait_for_selector("#review-queue")
    # The table can be there before the script at the end of the body has run (a slow first
    # static file): keys pressed then would go nowhere.
    page.wait_for_load_state("load")
    page.keyboard.press("j")
    assert page.locator("#review-queue tr.queue-row.selected").get_attribute("data-pos") == "1"
    page.screenshot(path=str(tmp_path / "1-queue-selected.png"), full_page=True)
    page.keyboard.press("Enter")
    first = reverse("console_answer_review", args=[science.pk, answers[0].pk])
    page.wait_for_url(f"**{first}?queue=low_confidence&pos=1*")
    page.wait_for_selector("#queue-nav")
    # The selected estimate is the queue row's criterion's first: "a" accepts it.
    selected = page.locator(f"#triple-{triples[0].pk} .review-cell.selected")
    estimate_id = int(selected.get_attribute("data-estimate") or 0)
    page.screenshot(path=str(tmp_path / "2-review-from-queue.png"), full_page=True)
    with page.expect_navigation():
        page.keyboard.press("a")
    assert "queue=low_confidence&pos=1" in page.url
    assert Estimate.objects.get(pk=estimate_id).review_status == ReviewStatus.ACCEPTED
    # "s" opens the send-back form of the selected estimate with the cursor in the comment.
    page.wait_for_selector("#queue-nav")
    page.keyboard.press("s")
    assert page.evaluate("document.activeElement.name") == "comment"
    page.keyboard.press("Escape")
    page.evaluate("document.activeElement.blur()")

    page.keyboard.press("n")
    second = reverse("console_answer_review", args=[science.pk, answers[1].pk])
    page.wait_for_url(f"**{second}?queue=low_confidence&pos=2*")
    page.wait_for_selector("#queue-nav")
    assert page.locator("#queue-next").count() == 0  # the end of the queue
    page.screenshot(path=str(tmp_path / "3-next-item.png"), full_page=True)
    page.keyboard.press("p")
    page.wait_for_url(f"**{first}?queue=low_confidence&pos=1*")
    assert (tmp_path / "3-next-item.png").stat().st_size > 0
