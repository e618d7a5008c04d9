"""The span markup page laid out for the work (real Chromium, Russian and English): the text wide,
each criterion К1–К12 named and described from the regulations (protocol.markup_criteria), the
criteria table at a readable width (rationale inputs usable, headers apart), and Esc clears a
shown error. Screenshots go to the test's tmp_path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from markup.models import Markup, MarkupText
from markup.work import markup_assign
from panels.models import Panel
from protocol.markup_criteria import ESSAY_CRITERIA
from tests.browser.conftest import login
from tests.conftest import PASSWORD, make_expert

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDE = {"width": 1400, "height": 900}
TEXT = "Читая книгу, снег падал. Мы одеваем шапки и идём гулять во двор. " * 4

# Each header cell's text box (a Range over its contents: the text can spill past the cell), in
# page order.
HEADER_TEXT_BOXES = """() => [...document.querySelectorAll("#markup-criteria thead th")]
.map((th) => {
  const range = document.createRange();
  range.selectNodeContents(th);
  const r = range.getBoundingClientRect();
  const cell = th.getBoundingClientRect();
  return {text: th.textContent.trim(), left: r.left, right: r.right, top: r.top,
          bottom: r.bottom, cellLeft: cell.left, cellRight: cell.right};
})"""


def _apart(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["right"] <= b["left"] + 0.5
        or b["right"] <= a["left"] + 0.5
        or a["bottom"] <= b["top"] + 0.5
        or b["bottom"] <= a["top"] + 0.5
    )


@pytest.mark.parametrize("language", ["ru", "en"])
def test_the_markup_page_names_the_criteria_and_gives_them_room(
    live_server: Any, page: Any, catalogue: None, tmp_path: Path, language: str
) -> None:
    panel = Panel.objects.get(key="editing")
    make_expert("marker", panel)
    text = MarkupText.objects.create(external_id="layout-1", text=TEXT, subject="rus")
    markup_assign(panel, overlap=1)
    markup = Markup.objects.get(text=text)

    page.set_viewport_size(WIDE)
    # The page's language by Django's language cookie (the fixture's browser asks for Russian).
    page.context.add_cookies(
        [{"name": "django_language", "value": language, "url": live_server.url}]
    )
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    login(page, live_server.url, "marker", PASSWORD)
    page.goto(f"{live_server.url}/markup/work/{markup.pk}/")
    assert not errors, errors

    # Every criterion with its name and a short description in the page's language.
    english = language == "en"
    for criterion in ESSAY_CRITERIA["rus"]:
        row = page.locator(f"#markup-criteria tr[data-criterion='{criterion.code}']")
        shown = row.inner_text()
        assert criterion.name(english) in shown
        assert criterion.about(english) in shown
    assert "Формулировка проблем исходного текста" in page.content() or english
    assert "source text" in page.content() or not english

    # The text is wide; the criteria table is not squeezed: rationale inputs usable, the
    # header texts each inside its own cell and apart from the others.
    text_box = page.locator("#markup-text").bounding_box()
    assert text_box is not None and text_box["width"] >= 800, text_box
    table_box = page.locator("#markup-criteria").bounding_box()
    assert table_box is not None and table_box["width"] >= 800, table_box
    rationales = page.locator(".criterion-rationale").all()
    assert len(rationales) == 12
    for rationale in rationales:
        box = rationale.bounding_box()
        assert box is not None and box["width"] >= 200, box
    headers = page.evaluate(HEADER_TEXT_BOXES)
    assert len(headers) == 4
    for i, a in enumerate(headers):
        assert a["left"] >= a["cellLeft"] - 0.5 and a["right"] <= a["cellRight"] + 0.5, a
        for b in headers[i + 1 :]:
            assert _apart(a, b), (a, b)
    page.screenshot(path=str(tmp_path / f"markup-{language}-criteria.png"), full_page=True)

    # An unknown code: the error says so; Esc clears it (and closes the fragment form).
    page.focus("#markup-text")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    page.keyboard.type("НЕТ.такого")
    page.keyboard.press("Enter")
    error_box = page.locator("#markup-errors")
    error_box.wait_for(state="visible")
    assert error_box.inner_text().strip()
    page.screenshot(path=str(tmp_path / f"markup-{language}-error.png"))
    page.keyboard.press("Escape")
    error_box.wait_for(state="hidden")
    assert page.locator("#fragment-code").input_value() == ""
    assert page.locator("#markup-text .seg-pending").count() == 0

    # A submit refused for missing scores: the error is shown and Esc clears it as well.
    page.click("#markup-submit")
    error_box.wait_for(state="visible")
    assert page.locator("#markup-criteria tr.missing").count() == 12
    page.screenshot(path=str(tmp_path / f"markup-{language}-submit-refused.png"))
    page.keyboard.press("Escape")
    error_box.wait_for(state="hidden")
    assert not errors, errors
