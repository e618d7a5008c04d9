"""An annotator compares a pair side by side with the keyboard in real Chromium (REPA)."""

from __future__ import annotations

from typing import Any

import pytest

from material.models import Answer, AnswerPair, Instruction, LanguageModel
from panels.models import Panel
from tests.browser.conftest import login
from tests.conftest import PASSWORD, make_expert
from work.comparisons import comparisons_build
from work.models import Assignment, AssignmentStatus, Estimate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _pair() -> AnswerPair:
    instruction = Instruction.objects.create(text="Почему листья осенью желтеют?")
    answers = [
        Answer.objects.create(
            instruction=instruction,
            model=LanguageModel.objects.get_or_create(name=name)[0],
            text=text,
            text_hash=name,
        )
        for name, text in (
            ("HiddenModel-A", "Хлорофилл разрушается, и становятся видны жёлтые пигменты."),
            ("HiddenModel-B", "Потому что осень."),
        )
    ]
    return AnswerPair.objects.create(
        instruction=instruction, answer_a=answers[0], answer_b=answers[1], category="Open QA"
    )


def test_an_annotator_compares_a_pair_with_the_keyboard(
    live_server: Any, page: Any, catalogue: None
) -> None:
    panel = Panel.objects.get(key="editing")
    alice = make_expert("alice", panel)
    pair = _pair()
    # Seeded so that Alice sees the pair swapped: B's text on the left.
    for seed in range(50):
        comparisons_build(panel_id=panel.pk, route=True, pair_ids=[pair.pk], seed=seed)
        mine = Assignment.objects.get(expert=alice, pair=pair)
        if mine.swapped:
            break
        Assignment.objects.all().delete()
    assert mine.swapped

    login(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/queue/")
    page.keyboard.press("n")
    page.wait_for_url(f"**/assignments/{mine.pk}/")
    html = page.content()
    assert "HiddenModel" not in html
    assert "Потому что осень" in page.locator("#response-a").inner_text()  # B on the left
    assert page.locator("#content-warning").is_visible()

    blocks = page.locator("fieldset.criterion")
    assert blocks.count() == 11
    # Ten criteria: "1" = the left response (shown as A) is better; Overall: "4" = both bad.
    for _ in range(10):
        page.keyboard.press("1")
    page.keyboard.press("4")
    # G opens the guidelines, Escape closes them.
    page.keyboard.press("g")
    assert page.locator("#guidelines").is_visible()
    page.keyboard.press("Escape")
    # The choices were autosaved as drafts before the save.
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('.saved-state')).every(s => s.textContent)"
    )
    assert Estimate.objects.filter(assignment=mine, status="draft").count() == 11
    page.keyboard.press("Control+Enter")
    page.wait_for_url("**/queue/**")

    mine.refresh_from_db()
    assert mine.status == AssignmentStatus.SUBMITTED
    labels = dict(
        Estimate.objects.filter(assignment=mine).values_list(
            "triple__comparison_criterion__key", "label"
        )
    )
    # The left response was the pair's B: stored as "b" in the pair's own orientation.
    assert labels.pop("overall") == "both_bad"
    assert set(labels.values()) == {"b"}
