"""Every work page lists its keys behind "?", and the rubric page skips or flags by keyboard."""

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
from work.models import Assignment

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("language", ["ru", "en"])
def test_question_mark_lists_the_keys_and_f_opens_skip_or_flag(
    live_server: Any,
    page: Any,
    make_answer: Callable[..., Answer],
    tmp_path: Path,
    language: str,
) -> None:
    science = Panel.objects.get(key="science")
    alice = make_expert("alice", science)
    make_expert("bob", science)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    mine = Assignment.objects.get(expert=alice, panel=science)
    page.context.add_cookies(
        [{"name": "django_language", "value": language, "url": live_server.url}]
    )
    login(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/assignments/{mine.pk}/")
    dialog = page.locator("dialog#keyhelp")
    assert not dialog.is_visible()
    page.keyboard.press("Shift+Slash")  # "?"
    assert dialog.is_visible()
    text = dialog.inner_text()
    assert "Ctrl" in text and "F" in text
    assert ("Клавиши" if language == "ru" else "Keys of this page") in text
    page.screenshot(path=str(tmp_path / f"keyhelp-{language}.png"), full_page=False)
    page.keyboard.press("Escape")
    assert not dialog.is_visible()
    # F: the skip / flag form opens with its reason list focused.
    page.keyboard.press("f")
    assert page.locator("#skip-flag").evaluate("el => el.open")
    assert page.locator("#flag-reason").evaluate("el => el === document.activeElement")
    # Typed into a field, "?" is a character, not the dialog.
    textarea = page.locator("fieldset.criterion textarea").first
    textarea.focus()
    page.keyboard.type("?")
    assert not dialog.is_visible() and textarea.input_value().endswith("?")
