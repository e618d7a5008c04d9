"""An expert marks spans with their codes by mouse and by keyboard in real Chromium, undoes a
change, finds his draft after a reload and submits (markup.work, static/js/markup_editor.js)."""

from __future__ import annotations

from typing import Any

import pytest

from markup.models import Markup, MarkupStatus, MarkupText
from markup.work import markup_assign
from panels.models import Panel
from tests.browser.conftest import login
from tests.conftest import PASSWORD, make_expert
from tests.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEXT = "Читая книгу, снег падал. Мы одеваем шапки и идём гулять во двор."

# The centre of the character at `offset` of the editor's text, in page coordinates.
CHAR_CENTRE = """([offset]) => {
  const box = document.getElementById("markup-text");
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  let seen = 0, node;
  while ((node = walker.nextNode())) {
    if (offset < seen + node.length) {
      const range = document.createRange();
      range.setStart(node, offset - seen);
      range.setEnd(node, offset - seen + 1);
      const r = range.getBoundingClientRect();
      return [r.left + r.width / 2, r.top + r.height / 2];
    }
    seen += node.length;
  }
  return null;
}"""


def test_an_expert_marks_spans_by_mouse_and_keyboard(
    live_server: Any, page: Any, catalogue: None
) -> None:
    panel = Panel.objects.get(key="editing")
    make_expert("marker", panel)
    text = MarkupText.objects.create(external_id="browser-1", text=TEXT, subject="rus")
    markup_assign(panel, overlap=1)
    markup = Markup.objects.get(text=text)

    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    login(page, live_server.url, "marker", PASSWORD)
    page.goto(f"{live_server.url}/markup/work/")
    page.click(f"a[href='/markup/work/{markup.pk}/']")
    page.wait_for_url(f"**/markup/work/{markup.pk}/")

    assert not errors, errors
    # Mouse: click inside «Читая», Shift+click inside «книгу»; the span snaps to the whole
    # words. (A drag selects nothing in headless Chromium 156, with Playwright's mouse or raw
    # CDP events alike; Shift+click makes the same DOM selection the page reads on mouseup.)
    start = page.evaluate(CHAR_CENTRE, [1])
    end = page.evaluate(CHAR_CENTRE, [8])
    page.mouse.click(*start)
    page.keyboard.down("Shift")
    page.mouse.click(*end)
    page.keyboard.up("Shift")
    assert page.locator("#fragment-quote").inner_text().startswith("«Читая книгу» 0–11")
    assert page.evaluate("document.activeElement.id") == "fragment-code"
    page.keyboard.type("г.деепр")  # codes are case-insensitive
    page.keyboard.press("Enter")
    page.wait_for_selector("#fragment-list li")
    assert "Г.деепр" in page.locator("#fragment-list").inner_text()
    assert page.locator("#markup-text mark.seg-error").first.inner_text() == "Читая книгу"

    # Keyboard: word by word to «одеваем» (the sixth word), Enter opens the code field.
    page.focus("#markup-text")
    for _ in range(6):
        page.keyboard.press("ArrowRight")
    assert "«одеваем»" in page.locator("#fragment-quote").inner_text()
    page.keyboard.press("Enter")
    page.keyboard.type("P.знач")  # Latin P is Cyrillic Р
    page.fill("#fragment-correction", "надеваем")
    page.press("#fragment-correction", "Enter")
    page.wait_for_function("document.querySelectorAll('#fragment-list li').length === 2")

    # Shift+→ extends the span by a word: «идём гулять», then undo takes it back.
    page.focus("#markup-text")
    for _ in range(9):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    assert "«идём гулять»" in page.locator("#fragment-quote").inner_text()
    page.keyboard.press("Enter")
    page.keyboard.type("Р.лишн")
    page.press("#fragment-explanation", "Enter")
    page.wait_for_function("document.querySelectorAll('#fragment-list li').length === 3")
    page.focus("#markup-text")
    page.keyboard.press("Control+z")
    page.wait_for_function("document.querySelectorAll('#fragment-list li').length === 2")

    # The draft (after the undo) reaches the server and survives a reload.
    def draft_saved() -> bool:
        markup.refresh_from_db()
        return len(markup.selections) == 2

    wait_until(draft_saved, 10, "the draft of two fragments on the server")
    assert markup.status == MarkupStatus.DRAFT
    page.reload()
    page.wait_for_function("document.querySelectorAll('#fragment-list li').length === 2")

    # Criterion scores beside the markup: each with a rationale; the formula's К9 and К10 from
    # the markup (a text under 70 words: both 0) are shown and a different score is flagged.
    for criterion in page.locator(".criterion-score").all():
        criterion.select_option("1")
    for rationale in page.locator(".criterion-rationale").all():
        rationale.fill("обоснование")
    page.wait_for_selector(".criterion-computed.warning[data-name='К9']")
    assert page.locator(".criterion-computed[data-name='К10']").inner_text() == "0"

    page.click("#markup-submit")
    page.wait_for_url("**/markup/work/")
    markup.refresh_from_db()
    assert markup.status == MarkupStatus.SUBMITTED
    spans = [
        (s["startSelection"], s["endSelection"], s["type"], s["correction"], s["group"])
        for s in markup.selections
    ]
    first = TEXT.find("одеваем")
    assert markup.criteria == {f"К{n}": 1 for n in range(1, 13)}
    assert set(markup.rationales) == set(markup.criteria)
    assert spans == [
        (0, 11, "Г.деепр", "", "error"),
        (first, first + len("одеваем"), "Р.знач", "надеваем", "error"),
    ]


def test_offsets_after_an_emoji_are_code_points_as_the_server_counts(
    live_server: Any, page: Any, catalogue: None
) -> None:
    # "😀" is one code point and two UTF-16 units: a span after it must not shift.
    emoji_text = "😀 Мы одеваем шапки."
    panel = Panel.objects.get(key="editing")
    make_expert("emoji", panel)
    text = MarkupText.objects.create(external_id="browser-2", text=emoji_text, subject="lit")
    markup_assign(panel, overlap=1)
    markup = Markup.objects.get(text=text)
    login(page, live_server.url, "emoji", PASSWORD)
    page.goto(f"{live_server.url}/markup/work/{markup.pk}/")
    page.focus("#markup-text")
    page.keyboard.press("ArrowRight")  # the first word: «Мы»
    page.keyboard.press("ArrowRight")  # «одеваем»
    start = emoji_text.find("одеваем")
    assert f"«одеваем» {start}–{start + 7}" in page.locator("#fragment-quote").inner_text()
    page.keyboard.press("Enter")
    page.keyboard.type("Р.знач")
    page.fill("#fragment-correction", "надеваем")
    page.press("#fragment-correction", "Enter")

    def saved() -> bool:
        markup.refresh_from_db()
        return len(markup.selections) == 1

    wait_until(saved, 10, "the draft with the fragment")
    fragment = markup.selections[0]
    assert (fragment["startSelection"], fragment["endSelection"]) == (start, start + 7)
    assert emoji_text[fragment["startSelection"] : fragment["endSelection"]] == "одеваем"
