"""The data browser's bulk actions in real Chromium (issue #29 item 13): a supervisor selects two
rows of experts' work by keyboard (Space on the focused row, ↓ to the next) and reassigns them to
another expert of the panel; the bar counts the selection and the result says what moved. Submitted
work sent to review waits in the panel's "sent to review" queue."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from material.models import Answer
from panels.models import Panel
from tests.browser.conftest import login
from tests.conftest import PASSWORD, make_expert, make_user, rubric_of
from work.assignments import assignments_build
from work.models import Assignment, AssignmentStatus, Estimate
from work.services import ScoreInput, assignment_submit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RATIONALE = "Обоснование эксперта: ответ точен и полон, ошибок по существу нет."
SAID = {
    "ru": ("Выбрано: 2", "2 назначения переданы эксперту", "Выбор: выберите хотя бы одну строку."),
    "en": ("Selected: 2", "2 assignments moved to", "Selection: select at least one row."),
}


@pytest.mark.parametrize("language", ["ru", "en"])
def test_two_rows_selected_by_keyboard_are_reassigned(
    live_server: Any,
    page: Any,
    make_answer: Callable[..., Answer],
    tmp_path: Path,
    language: str,
) -> None:
    science = Panel.objects.get(key="science")
    alice = make_expert("alice", science)
    science.supervisors.add(make_user("supervisor"))
    answers = [
        make_answer(text="Фотосинтез идёт в хлоропластах."),
        make_answer(text="Митохондрии дают клетке энергию."),
    ]
    assignments_build(answer_ids=[a.pk for a in answers])
    # Joins after the build: free to take alice's work.
    carol = make_expert("carol", science)
    page.context.add_cookies(
        [{"name": "django_language", "value": language, "url": live_server.url}]
    )
    login(page, live_server.url, "supervisor", PASSWORD)
    page.goto(f"{live_server.url}/console/browse/?kind=assignments")
    rows = page.locator("#bulk-table tr.bulk-row")
    assert rows.count() == 2
    selected, moved, nothing = SAID[language]
    # Nothing selected: the page says so above the table (400), nothing moves.
    page.click("#bulk-reassign")
    assert page.inner_text("#bulk-error") == nothing
    page.screenshot(path=str(tmp_path / f"bulk-nothing-{language}.png"), full_page=True)
    rows = page.locator("#bulk-table tr.bulk-row")

    rows.first.focus()
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Space")
    assert page.inner_text("#bulk-count") == selected
    assert page.locator("#bulk-table input[name=ids]:checked").count() == 2
    assert page.is_checked("#bulk-all")  # every row of the page
    page.select_option("#bulk-expert", str(carol.pk))
    page.screenshot(path=str(tmp_path / f"bulk-selected-{language}.png"), full_page=True)
    page.click("#bulk-reassign")
    page.wait_for_load_state("networkidle")

    assert f"{moved} {carol.pseudonym}." in page.inner_text(".messages")
    page.screenshot(path=str(tmp_path / f"bulk-done-{language}.png"), full_page=True)
    assert Assignment.objects.filter(expert=carol, status=AssignmentStatus.ASSIGNED).count() == 2
    assert not Assignment.objects.filter(expert=alice).exclude(status=AssignmentStatus.RELEASED)
    # The page came back to the same view: the moved work is listed under carol now.
    assert page.url.endswith("/console/browse/?kind=assignments")
    assert carol.pseudonym in page.inner_text("#bulk-table")


@pytest.mark.parametrize("language", ["ru", "en"])
def test_submitted_work_sent_to_review_waits_in_the_sent_queue(
    live_server: Any,
    page: Any,
    make_answer: Callable[..., Answer],
    tmp_path: Path,
    language: str,
) -> None:
    science = Panel.objects.get(key="science")
    alice = make_expert("alice", science)
    science.supervisors.add(make_user("supervisor"))
    answer = make_answer(text="Фотосинтез идёт в хлоропластах.")
    assignments_build(answer_ids=[answer.pk])
    assignment = Assignment.objects.get(expert=alice)
    items = []
    for e in assignment.estimates.select_related("triple__rubric"):
        score = 0 if e.triple.group == "critical" else max(rubric_of(e.triple).values)
        items.append(ScoreInput(triple_id=e.triple_id, score=score, rationale=RATIONALE))
    assert assignment_submit(assignment=assignment, items=items).ok
    page.context.add_cookies(
        [{"name": "django_language", "value": language, "url": live_server.url}]
    )
    login(page, live_server.url, "supervisor", PASSWORD)
    page.goto(f"{live_server.url}/console/browse/?kind=assignments&work_status=submitted")
    page.locator("#bulk-table tr.bulk-row").first.focus()
    page.keyboard.press("Space")
    page.click("#bulk-review")
    page.wait_for_load_state("networkidle")
    said = {
        "ru": "1 назначение отправлено в очередь на проверку.",
        "en": "1 assignment sent to the review queue.",
    }
    assert said[language] in page.inner_text(".messages")
    badge = {"ru": "в очереди на проверку", "en": "in the review queue"}[language]
    assert badge in page.inner_text("#bulk-table")
    page.screenshot(path=str(tmp_path / f"bulk-sent-{language}.png"), full_page=True)

    page.goto(f"{live_server.url}/console/panels/{science.pk}/review-queues/?queue=sent")
    rows = page.locator("#review-queue tr.queue-row")
    assert (
        rows.count()
        == Estimate.objects.filter(
            assignment=assignment, triple__panel=science, status="submitted"
        ).count()
        > 0
    )
    page.screenshot(path=str(tmp_path / f"bulk-sent-queue-{language}.png"), full_page=True)
