"""Comments on an item in real Chromium: the expert presses C on the rubric page, writes to the
supervisors and posts with Ctrl+Enter (the scores stay unsent); the supervisor reads it on the
answer's review page and replies there; the expert sees the reply (an unread count in the
navigation, then the thread on his page). In Russian and in English, with screenshots."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from discussion.models import AuthorRole, Comment
from markup.models import Markup, MarkupRole, MarkupStatus, MarkupText
from material.models import Answer
from panels.models import Panel
from tests.browser.conftest import login
from tests.conftest import PASSWORD, make_expert, make_user
from work.assignments import assignments_build
from work.models import Assignment, AssignmentStatus, Estimate, EstimateStatus

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUESTION = "Критерий про факты: считать ли устаревшую дату ошибкой?"
REPLY = "Да, если дата названа как текущая. См. руководство панели."
# Where the screenshots go: the test's tmp_path, or a folder to look at them afterwards.
SHOTS = os.environ.get("COMMENTS_SHOTS")

WORDS = {
    "ru": {
        "empty": "Сначала напишите комментарий.",
        "key": "поле комментария",
        "nav": "Комментарии",
    },
    "en": {"empty": "Write the comment first.", "key": "the comment box", "nav": "Comments"},
}


def _as(page: Any, base: str, username: str, language: str) -> None:
    page.context.clear_cookies()
    page.context.add_cookies([{"name": "django_language", "value": language, "url": base}])
    login(page, base, username, PASSWORD)


@pytest.mark.parametrize("language", ["ru", "en"])
def test_expert_and_supervisor_talk_on_the_rubric_and_review_pages(
    live_server: Any,
    page: Any,
    make_answer: Callable[..., Answer],
    tmp_path: Path,
    language: str,
) -> None:
    shots = Path(SHOTS) / language if SHOTS else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    words = WORDS[language]
    science = Panel.objects.get(key="science")
    alice = make_expert("alice", science)
    make_expert("bob", science)
    science.supervisors.add(make_user("supervisor"))
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    mine = Assignment.objects.get(expert=alice, panel=science, answer=answer)
    base = live_server.url

    # The expert: C opens the comment box, Ctrl+Enter on an empty box names the field.
    _as(page, base, "alice", language)
    page.goto(base + reverse("assignment", args=[mine.pk]))
    page.keyboard.press("Shift+Slash")
    keys = page.locator("#keyhelp")
    assert words["key"] in keys.inner_text()
    page.screenshot(path=str(shots / "1-keyhelp.png"))
    page.keyboard.press("Escape")
    if language == "ru":
        # The key C of the Russian layout types "с" (Playwright presses Latin keys only).
        page.evaluate(
            "document.body.dispatchEvent(new KeyboardEvent('keydown', {key: 'с', bubbles: true}))"
        )
    else:
        page.keyboard.press("c")
    box = page.locator("[data-comment-box]")
    assert box.evaluate("el => el === document.activeElement")
    page.keyboard.press("Control+Enter")
    error = page.locator("[data-comment-error]")
    error.wait_for()
    assert error.inner_text() == f"body: {words['empty']}"
    box = page.locator("[data-comment-box]")
    box.fill(QUESTION)
    box.press("Control+Enter")
    page.locator(".comment-expert", has_text=QUESTION).wait_for()
    page.screenshot(path=str(shots / "2-expert-asked.png"), full_page=True)
    # The comment went to the thread; the scores were not submitted, the page stayed.
    assert page.url.endswith(reverse("assignment", args=[mine.pk]))
    mine.refresh_from_db()
    assert mine.status != AssignmentStatus.SUBMITTED
    assert not Estimate.objects.filter(assignment=mine, status=EstimateStatus.SUBMITTED).exists()
    # Ctrl+Enter pressed again on the same text is stored once.
    assert Comment.objects.filter(body=QUESTION).count() == 1

    # The supervisor: the review page shows the question under the expert's code.
    _as(page, base, "supervisor", language)
    page.goto(base + reverse("discussion_threads"))
    assert f"{science.number}" in page.locator("#panel-counts").inner_text()
    page.screenshot(path=str(shots / "3-supervisor-threads.png"), full_page=True)
    page.goto(base + reverse("console_answer_review", args=[science.pk, answer.pk]))
    thread = page.locator(f"#thread-assignment-{mine.pk}")
    assert QUESTION in thread.inner_text()
    assert "alice" not in page.locator("#comments").inner_text()
    thread.locator("[data-comment-box]").fill(REPLY)
    thread.locator("[data-comment-box]").press("Control+Enter")
    page.locator(f"#thread-assignment-{mine.pk} .comment-supervisor", has_text=REPLY).wait_for()
    page.locator(f"#thread-assignment-{mine.pk}").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "4-supervisor-replied.png"), full_page=True)
    assert Comment.objects.filter(body=REPLY, author_role=AuthorRole.SUPERVISOR).count() == 1

    # The expert: one thread with an unread reply, then the reply on his page.
    _as(page, base, "alice", language)
    page.goto(base + reverse("queue"))
    nav = page.locator("#nav-comments")
    assert nav.inner_text().split() == [words["nav"], "1"]
    nav.click()
    page.locator("[data-unread]").wait_for()
    page.screenshot(path=str(shots / "5-expert-unread.png"), full_page=True)
    page.goto(base + reverse("assignment", args=[mine.pk]))
    reply = page.locator(".comment-supervisor", has_text=REPLY)
    reply.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "6-expert-reads-the-reply.png"), full_page=True)
    page.goto(base + reverse("queue"))
    assert page.locator("#nav-comments").inner_text().split() == [words["nav"]]


def test_the_markup_page_takes_a_comment_by_keyboard(
    live_server: Any, page: Any, tmp_path: Path
) -> None:
    """The span markup page's own keys (the text, the code field) leave C and Ctrl+Enter to the
    comment box."""
    shots = Path(SHOTS) if SHOTS else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    science = Panel.objects.get(key="science")
    alice = make_expert("alice", science)
    science.supervisors.add(make_user("supervisor"))
    text = MarkupText.objects.create(
        external_id="comments-1", text="Мы одеваем шапки и идём гулять.", subject="rus"
    )
    markup = Markup.objects.create(
        text=text,
        source="expert",
        expert=alice,
        author="alice",
        panel=science,
        role=MarkupRole.INDEPENDENT,
        status=MarkupStatus.DRAFT,
    )
    _as(page, live_server.url, "alice", "ru")
    page.goto(live_server.url + reverse("markup_work_page", args=[markup.pk]))
    page.keyboard.press("c")
    box = page.locator("[data-comment-box]")
    assert box.evaluate("el => el === document.activeElement")
    box.fill("К4: считать ли «одеваем» речевой ошибкой?")
    box.press("Control+Enter")
    page.locator(".comment-expert", has_text="одеваем").wait_for()
    page.locator("#comments").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "markup-page-comment.png"), full_page=True)
    comment = Comment.objects.get()
    assert comment.thread.markup_id == markup.pk and comment.author_role == AuthorRole.EXPERT
    markup.refresh_from_db()
    assert markup.status == MarkupStatus.DRAFT
