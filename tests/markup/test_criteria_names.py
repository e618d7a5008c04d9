"""The essay criteria's one home (protocol.markup_criteria): names and descriptions in both
languages, the maxima the checks use, and the markup page showing them in the page's language."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from markup.models import Markup, MarkupText
from markup.work import markup_assign
from panels.models import Panel
from protocol.markup_criteria import ESSAY_CRITERIA
from protocol.markup_scores import ENTERED_CRITERIA
from tests.conftest import PASSWORD, make_expert


def test_every_criterion_is_named_and_described_in_russian_and_english() -> None:
    assert [c.code for c in ESSAY_CRITERIA["rus"]] == [f"К{n}" for n in range(1, 13)]
    assert [c.code for c in ESSAY_CRITERIA["lit"]] == [f"К{n}" for n in range(1, 6)]
    for criteria in ESSAY_CRITERIA.values():
        for c in criteria:
            assert c.name_ru and c.name_en and c.about_ru and c.about_en, c
            assert c.name(english=False) == c.name_ru and c.about(english=True) == c.about_en


def test_the_checks_read_their_maxima_from_the_same_home() -> None:
    # The ЕГЭ 2020 totals: 24 points for the Russian essay, 14 for the literature one.
    assert sum(ENTERED_CRITERIA["rus"].values()) == 24
    assert sum(ENTERED_CRITERIA["lit"].values()) == 14
    for subject, criteria in ESSAY_CRITERIA.items():
        assert ENTERED_CRITERIA[subject] == {c.code: c.top for c in criteria}


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["ru", "en"])
def test_the_markup_page_shows_each_criterion_with_its_name_and_description(
    catalogue: None, language: str
) -> None:
    panel = Panel.objects.get(key="editing")
    expert = make_expert("marker", panel)
    text = MarkupText.objects.create(external_id="names-1", text="Мы идём.", subject="rus")
    markup_assign(panel, overlap=1)
    markup = Markup.objects.get(text=text)
    client = Client()
    client.cookies["django_language"] = language
    assert client.login(username=expert.user.username, password=PASSWORD)
    page = client.get(reverse("markup_work_page", args=[markup.pk])).content.decode()
    english = language == "en"
    for c in ESSAY_CRITERIA["rus"]:
        assert escape(c.name(english)) in page
        assert escape(c.about(english)) in page
