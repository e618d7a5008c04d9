"""An annotator compares a pair side by side with the keyboard in real Chromium (REPA)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from material.models import Answer, AnswerPair, Instruction, LanguageModel
from panels.models import Panel
from tests.browser.conftest import login
from tests.conftest import PASSWORD, make_expert
from work.assignments import assignments_build
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


# The side-by-side page at the rubric page's bar: the responses in view, progress, the next pair,
# and the work going on where it stopped. Screenshots go to the test's tmp_path.

WIDE = {"width": 1400, "height": 900}
NARROW = {"width": 420, "height": 800}
LONG_A = "\n\n".join(f"Абзац {i} левого ответа: хлорофилл разрушается осенью." for i in range(60))
LONG_B = "\n\n".join(f"Абзац {i} правого ответа: потому что так бывает." for i in range(60))


def _long_pair(n: int) -> AnswerPair:
    instruction = Instruction.objects.create(text=f"Почему листья осенью желтеют? ({n})")
    answers = [
        Answer.objects.create(
            instruction=instruction,
            model=LanguageModel.objects.get_or_create(name=name)[0],
            text=text,
            text_hash=f"{name}-{n}",
        )
        for name, text in (("HiddenModel-A", LONG_A), ("HiddenModel-B", LONG_B))
    ]
    return AnswerPair.objects.create(
        instruction=instruction, answer_a=answers[0], answer_b=answers[1], category="Open QA"
    )


def _open_as(page: Any, live_server: Any, username: str, language: str, url: str) -> None:
    # The page's language by Django's language cookie (the fixture's browser asks for Russian).
    page.context.add_cookies(
        [{"name": "django_language", "value": language, "url": live_server.url}]
    )
    login(page, live_server.url, username, PASSWORD)
    page.goto(f"{live_server.url}{url}")


def _all_drafts_saved(page: Any, n: int) -> None:
    page.wait_for_function(
        "n => Array.from(document.querySelectorAll('.saved-state'))"
        ".filter(s => s.textContent).length >= n",
        arg=n,
    )


# How much of an element the viewer sees: its box clipped by the viewport and by every scrolling
# ancestor; and whether its middle is on top (not under the responses kept in view).
VISIBLE = """el => {
  const r = el.getBoundingClientRect();
  let top = Math.max(r.top, 0), bottom = Math.min(r.bottom, innerHeight);
  for (let p = el.parentElement; p; p = p.parentElement) {
    if (getComputedStyle(p).overflowY !== "visible") {
      const pr = p.getBoundingClientRect();
      top = Math.max(top, pr.top); bottom = Math.min(bottom, pr.bottom);
    }
  }
  const seen = Math.max(0, bottom - top);
  const hit = seen ? document.elementFromPoint(r.left + 30, (top + bottom) / 2) : null;
  return { seen, onTop: !!hit && el.contains(hit), x: r.left, y: r.top, width: r.width };
}"""


def _view(page: Any, selector: str) -> dict[str, Any]:
    return dict(page.locator(selector).evaluate(VISIBLE))


@pytest.mark.parametrize("language", ["ru", "en"])
def test_the_responses_stay_in_view_while_the_criteria_are_labelled(
    live_server: Any, page: Any, catalogue: None, tmp_path: Path, language: str
) -> None:
    panel = Panel.objects.get(key="editing")
    alice = make_expert("alice", panel)
    pair = _long_pair(1)
    comparisons_build(panel_id=panel.pk, route=True, pair_ids=[pair.pk], seed=1)
    mine = Assignment.objects.get(expert=alice, pair=pair)

    page.set_viewport_size(WIDE)
    _open_as(page, live_server, "alice", language, f"/assignments/{mine.pk}/")
    # Criteria 1 to 10 labelled; the last one is active with both responses beside it.
    for _ in range(10):
        page.keyboard.press("4")
    _all_drafts_saved(page, 10)
    a, b = _view(page, "#response-a"), _view(page, "#response-b")
    assert a["seen"] > 300 and b["seen"] > 300, (a, b)
    last = _view(page, "fieldset.criterion:last-of-type")
    assert last["seen"] > 150 and last["onTop"], last
    assert a["x"] + a["width"] <= b["x"] <= last["x"]  # A, B, then the criteria
    page.screenshot(path=str(tmp_path / f"compare-wide-last-criterion-{language}.png"))

    # Narrow screens: A above B, both kept in view over the criterion being labelled.
    page.set_viewport_size(NARROW)
    # The page has measured the responses' new height (static/js/compare.js) before K and J.
    page.wait_for_function(
        "() => { const l = document.getElementById('compare-layout'),"
        " s = document.getElementById('source-col');"
        " return !l || !s"
        " || l.style.getPropertyValue('--source-height') === s.offsetHeight + 'px'; }"
    )
    page.keyboard.press("k")
    page.keyboard.press("j")
    a, b = _view(page, "#response-a"), _view(page, "#response-b")
    assert a["y"] < b["y"] and abs(a["x"] - b["x"]) < 1  # stacked
    assert a["seen"] > 40 and b["seen"] > 40 and a["onTop"] and b["onTop"], (a, b)
    last = _view(page, "fieldset.criterion:last-of-type")
    assert last["seen"] > 150 and last["onTop"], last
    page.screenshot(path=str(tmp_path / f"compare-narrow-last-criterion-{language}.png"))


@pytest.mark.parametrize("language", ["ru", "en"])
def test_a_progress_line_counts_the_labels_and_is_announced(
    live_server: Any, page: Any, catalogue: None, tmp_path: Path, language: str
) -> None:
    panel = Panel.objects.get(key="editing")
    alice = make_expert("alice", panel)
    pair = _long_pair(1)
    comparisons_build(panel_id=panel.pk, route=True, pair_ids=[pair.pk], seed=1)
    mine = Assignment.objects.get(expert=alice, pair=pair)

    page.set_viewport_size(WIDE)
    _open_as(page, live_server, "alice", language, f"/assignments/{mine.pk}/")
    shown = {"ru": "Размечено {} из 11", "en": "Labelled {} of 11"}[language]
    page.get_by_text(shown.format(0)).wait_for()
    progress = page.locator("#compare-progress")
    assert progress.get_attribute("aria-live") == "polite"
    for n in range(1, 4):
        page.keyboard.press(str(n))
    page.wait_for_function("document.getElementById('progress-done').textContent === '3'")
    assert progress.inner_text().strip() == shown.format(3)
    page.screenshot(path=str(tmp_path / f"compare-progress-{language}.png"))
    # Still in view at the last criterion (on top of the criteria's column).
    for _ in range(8):
        page.keyboard.press("4")
    page.wait_for_function("document.getElementById('progress-done').textContent === '11'")
    assert progress.inner_text().strip() == shown.format(11)
    line = _view(page, "#compare-progress")
    assert line["seen"] > 10 and line["onTop"], line


@pytest.mark.parametrize("language", ["ru", "en"])
def test_ctrl_enter_opens_the_next_pair_not_an_answer_then_the_queue(
    live_server: Any,
    page: Any,
    make_answer: Callable[..., Answer],
    tmp_path: Path,
    language: str,
) -> None:
    editing, science = Panel.objects.get(key="editing"), Panel.objects.get(key="science")
    alice = make_expert("alice", editing, science)
    first, second = _pair(), _long_pair(2)
    # The queue's order puts an answer of the rubric between the two pairs.
    comparisons_build(panel_id=editing.pk, route=True, pair_ids=[first.pk], seed=1)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    comparisons_build(panel_id=editing.pk, route=True, pair_ids=[second.pk], seed=1)
    one = Assignment.objects.get(expert=alice, pair=first)
    # The answer may be scored for several panels (one entry, one page): the first opens it.
    rubric = Assignment.objects.filter(expert=alice, answer=answer, pair__isnull=True).first()
    assert rubric is not None
    two = Assignment.objects.get(expert=alice, pair=second)
    assert one.pk < rubric.pk < two.pk

    page.set_viewport_size(WIDE)
    _open_as(page, live_server, "alice", language, f"/assignments/{one.pk}/")
    for _ in range(11):
        page.keyboard.press("3")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"**/assignments/{two.pk}/")
    assert page.locator("#compare-form").count() == 1
    page.screenshot(path=str(tmp_path / f"compare-next-pair-{language}.png"))

    for _ in range(11):
        page.keyboard.press("2")
    page.keyboard.press("Control+Enter")
    page.wait_for_url("**/queue/")
    message = {
        "ru": "Больше нет пар для сравнения в вашей очереди. Спасибо!",
        "en": "No more pairs to compare in your queue. Thank you!",
    }[language]
    assert message in page.locator(".messages").inner_text()
    page.screenshot(path=str(tmp_path / f"compare-no-more-pairs-{language}.png"))
    for assignment in (one, two, rubric):
        assignment.refresh_from_db()
    assert one.status == two.status == AssignmentStatus.SUBMITTED
    assert rubric.status == AssignmentStatus.ASSIGNED  # never opened


def test_after_a_reload_the_focus_is_on_the_first_criterion_without_a_label(
    live_server: Any, page: Any, catalogue: None, tmp_path: Path
) -> None:
    panel = Panel.objects.get(key="editing")
    alice = make_expert("alice", panel)
    pair = _long_pair(1)
    comparisons_build(panel_id=panel.pk, route=True, pair_ids=[pair.pk], seed=1)
    mine = Assignment.objects.get(expert=alice, pair=pair)

    page.set_viewport_size(WIDE)
    _open_as(page, live_server, "alice", "ru", f"/assignments/{mine.pk}/")
    for _ in range(5):
        page.keyboard.press("1")
    _all_drafts_saved(page, 5)
    assert Estimate.objects.filter(assignment=mine, status="draft").count() == 5

    page.reload()
    focused = page.evaluate(
        "() => { const f = document.activeElement.closest('fieldset.criterion');"
        " return f ? Array.from(document.querySelectorAll('fieldset.criterion')).indexOf(f) : -1; }"
    )
    assert focused == 5  # the sixth criterion: the first five keep their drafts
    assert page.locator("#progress-done").inner_text() == "5"
    active = _view(page, "fieldset.criterion.active")
    assert active["seen"] > 150 and active["onTop"], active
    page.screenshot(path=str(tmp_path / "compare-after-reload.png"))
    # The keys go on from there: the sixth criterion gets the next label.
    page.keyboard.press("2")
    _all_drafts_saved(page, 1)
    page.wait_for_function("document.getElementById('progress-done').textContent === '6'")
