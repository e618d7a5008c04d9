"""An author writes an instruction in real Chromium: the draft autosaves as she types (no
button), survives a reload, and is submitted; the reviewer returns it, she sees the comment."""

from __future__ import annotations

from typing import Any

import pytest

from authoring import services
from authoring.models import Slot, SlotState
from panels.models import Membership
from tests.browser.conftest import login
from tests.conftest import PASSWORD, Personas, make_expert
from tests.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEXT = "Перепишите деловое письмо в разговорном стиле, сохранив все факты и даты."


def test_an_author_writes_autosaves_and_submits_then_reads_the_return(
    live_server: Any, page: Any, personas: Personas
) -> None:
    panel, author = personas.panel_a, personas.expert_a
    Membership.objects.filter(expert=author, panel=panel).update(can_author=True)
    reviewer = make_expert("reviewer_browser", panel)
    Membership.objects.filter(expert=reviewer, panel=panel).update(can_review=True)
    services.campaign_create(name="browser", user=personas.admin, double_review_share=0.0)

    login(page, live_server.url, author.user.get_username(), PASSWORD)
    page.goto(f"{live_server.url}/writing/")
    page.locator("[id^=open-slots] button").first.click()
    page.wait_for_url("**/writing/slots/*/")
    slot = Slot.objects.get(author=author)
    page.fill("#f-text", TEXT)
    # Autosaved after a second of quiet: the row changes without any click.
    wait_until(lambda: Slot.objects.get(pk=slot.pk).text == TEXT, 10, "the autosave")
    page.reload()
    assert page.input_value("#f-text") == TEXT
    page.select_option("#f-style", index=1)
    page.locator("#devices summary").click()
    page.fill("input[name=device-epithet]", "2")
    page.click("#authoring-form button[type=submit]")
    page.wait_for_selector("#instruction-text")
    slot.refresh_from_db()
    assert slot.state == SlotState.SUBMITTED and slot.devices == {"epithet": 2}
    assert slot.revisions.get().text == TEXT

    services.review_submit(
        slot=slot,
        reviewer=reviewer,
        verdict="return",
        comment="Уточните, какой длины должен быть ответ.",
        user=reviewer.user,
    )
    page.reload()
    assert "Уточните, какой длины" in page.inner_text("#returned-note")
    assert page.input_value("#f-text") == TEXT
