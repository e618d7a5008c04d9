"""A supervisor sends an estimate back from the answer review page and its expert rescores it,
in real Chromium: console estimates list -> review page -> "Send back"; the expert's queue ->
the scoring page with the comment -> a changed score, resubmitted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from material.models import Answer
from panels.models import Panel
from tests.browser.conftest import login
from tests.conftest import PASSWORD, make_expert, make_user, rubric_of
from work.assignments import assignments_build
from work.models import Assignment, Estimate, EstimateRevision, ReviewStatus
from work.services import ScoreInput, assignment_submit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RATIONALE = "Ответ соответствует критерию без замечаний."
COMMENT = "Проверьте фактическую точность второго абзаца, пожалуйста."
NEW_RATIONALE = "Во втором абзаце фактическая ошибка в датах, поэтому оценка ниже."


def _submit_top(assignment: Assignment) -> None:
    """Every criterion at its best: critical gates 0 (no violation), the others at the top."""
    items = [
        ScoreInput(
            triple_id=e.triple_id,
            score=0 if e.triple.group == "critical" else max(rubric_of(e.triple).values),
            rationale=RATIONALE,
        )
        for e in assignment.estimates.select_related("triple__rubric")
    ]
    result = assignment_submit(assignment=assignment, items=items)
    assert result.ok, (result.errors, result.form_errors)


def _pick(block: Any, value: str) -> None:
    # As the keyboard handler does (a click may land elsewhere while the page scrolls smoothly).
    block.locator(f"input[type=radio][value='{value}']").evaluate(
        "el => { el.checked = true; el.dispatchEvent(new Event('change', {bubbles: true})); }"
    )


def test_a_returned_estimate_goes_back_to_its_expert_and_is_rescored(
    live_server: Any,
    browser: Any,
    page: Any,
    make_answer: Callable[..., Answer],
    tmp_path: Path,
) -> None:
    science = Panel.objects.get(key="science")
    alice = make_expert("alice", science)
    bob = make_expert("bob", science)
    science.supervisors.add(make_user("supervisor"))
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    mine = Assignment.objects.get(expert=alice, panel=science, answer=answer)
    _submit_top(mine)
    _submit_top(Assignment.objects.get(expert=bob, panel=science, answer=answer))
    estimate = (
        Estimate.objects.filter(assignment=mine)
        .exclude(triple__group="critical")
        .select_related("triple__rubric")
        .order_by("triple__position", "triple_id")
        .first()
    )
    assert estimate is not None and estimate.score is not None
    old_score = estimate.score
    new_score = min(rubric_of(estimate.triple).values)
    assert new_score != old_score

    # The supervisor: the estimates list -> the answer's review page -> send it back.
    login(page, live_server.url, "supervisor", PASSWORD)
    page.goto(live_server.url + reverse("console_estimates", args=[science.pk]))
    page.locator(f"xpath=//tr[td[1][normalize-space()='{estimate.pk}']]//a").first.click()
    review_url = reverse("console_answer_review", args=[science.pk, answer.pk])
    page.wait_for_url(f"**{review_url}*")
    send_back = page.locator(
        f"form[action='{reverse('console_estimate_return', args=[science.pk, estimate.pk])}']"
    )
    send_back.locator("xpath=ancestor::details[1]/summary").click()
    send_back.locator("textarea[name=comment]").fill(COMMENT)
    page.screenshot(path=str(tmp_path / "1-review-send-back.png"), full_page=True)
    send_back.locator("button").click()
    page.wait_for_load_state("networkidle")
    # Back on the answer's review page, the next estimate selected (issue #29 item 6).
    assert review_url + "?estimate=" in page.url and "#triple-" in page.url
    page.screenshot(path=str(tmp_path / "2-review-returned.png"), full_page=True)
    estimate.refresh_from_db()
    assert estimate.review_status == ReviewStatus.RETURNED
    assert estimate.review_comment == COMMENT

    # The expert, in a browser of his own: the queue's "next" opens the returned answer.
    context = browser.new_context(locale="ru-RU")
    try:
        expert = context.new_page()
        expert.set_default_timeout(15000)
        login(expert, live_server.url, "alice", PASSWORD)
        expert.goto(live_server.url + reverse("queue"))
        expert.locator("#start-next").click()
        expert.wait_for_url(f"**/assignments/{mine.pk}/")
        notice = expert.locator(".review-returns")
        assert COMMENT in notice.inner_text()
        expert.screenshot(path=str(tmp_path / "3-expert-sees-the-comment.png"), full_page=True)

        block = expert.locator(f"fieldset.criterion[data-triple='{estimate.triple_id}']")
        _pick(block, str(new_score))
        block.locator("textarea").fill(NEW_RATIONALE)
        expert.screenshot(path=str(tmp_path / "4-expert-rescored.png"), full_page=True)
        expert.locator("#submit-scores").click()
        expert.wait_for_url("**/queue/**")
        expert.screenshot(path=str(tmp_path / "5-expert-queue-after.png"), full_page=True)
    finally:
        context.close()

    estimate.refresh_from_db()
    assert estimate.review_status != ReviewStatus.RETURNED
    assert estimate.score == new_score and estimate.rationale == NEW_RATIONALE
    # The comment stays as the record of what was asked; the old value is a revision.
    assert estimate.review_comment == COMMENT
    assert EstimateRevision.objects.filter(
        estimate=estimate, score=old_score, rationale=RATIONALE
    ).exists()
    assert (tmp_path / "3-expert-sees-the-comment.png").stat().st_size > 0
