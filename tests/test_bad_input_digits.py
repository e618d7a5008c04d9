"""The API accepts no more than the page: Unicode digits are no numbers anywhere.

Python's int() reads "١٨" (Arabic-Indic digits) as 18, and so do DRF's and Django's integer
fields; the scoring form refuses them (422), so the scoring API and the markup session API must
refuse them too, naming the field, with nothing stored. A draft posted onto a submitted
assignment through the API is refused (409), not answered "saved".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from markup.models import MarkupSample, MarkupSampleText, MarkupText
from material.models import Answer
from panels.models import Panel
from participants.models import Participant
from tests.conftest import PASSWORD, Personas, make_expert, make_user, rubric_of
from work.assignments import assignments_build
from work.models import Assignment, AssignmentStatus, Estimate, Triple
from work.services import ScoreInput, assignment_submit

pytestmark = pytest.mark.django_db

GOOD = "Ответ полностью соответствует критерию, ошибок нет."
ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


def arabic(number: int) -> str:
    return str(number).translate(ARABIC_INDIC)


@pytest.fixture
def scoring(make_answer: Callable[..., Answer]) -> tuple[Assignment, Client, Estimate]:
    """An expert's assignment, the expert's logged-in client and a 0/1/2 criterion's slot."""
    science = Panel.objects.get(key="science")
    make_expert("dig1", science)
    make_expert("dig2", science)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    assignment = Assignment.objects.filter(panel=science, answer=answer).order_by("pk").first()
    assert assignment is not None
    client = Client(raise_request_exception=False)
    client.login(username=assignment.expert.user.username, password=PASSWORD)
    estimate = next(
        e
        for e in assignment.estimates.select_related("triple__rubric")
        if rubric_of(e.triple).values == [0, 1, 2]
    )
    return assignment, client, estimate


def test_the_console_reopens_no_triple_named_in_unicode_digits(
    scoring: Any, personas: Personas
) -> None:
    _assignment, _client, estimate = scoring
    triple = Triple.objects.get(pk=estimate.triple_id)
    sup = Client(raise_request_exception=False)
    sup.login(username=personas.supervisor_a.username, password=PASSWORD)
    url = reverse("console_reopen", args=[triple.panel_id])
    refused = sup.post(url, {"triple": arabic(triple.pk), "note": "Проверить ещё раз."})
    assert refused.status_code == 302
    assert Triple.objects.get(pk=triple.pk).required_overlap == triple.required_overlap
    # The same id in ASCII digits reopens it (the field is not simply broken).
    done = sup.post(url, {"triple": str(triple.pk), "note": "Проверить ещё раз."})
    assert done.status_code == 302
    assert Triple.objects.get(pk=triple.pk).required_overlap == triple.required_overlap + 1


def test_the_form_refuses_unicode_digits_and_so_does_the_api(scoring: Any) -> None:
    assignment, client, estimate = scoring
    tid = estimate.triple_id
    # The page first: the HTML autosave refuses "١" as a score.
    page = client.post(
        reverse("assignment_draft", args=[assignment.pk]),
        {"triple": str(tid), f"score_{tid}": arabic(1), f"rationale_{tid}": GOOD},
    )
    assert page.status_code == 422
    base = f"/api/assignments/{assignment.pk}/"
    cases = [
        ("draft/", {"triple_id": arabic(tid), "score": 1, "rationale": GOOD}, "triple_id"),
        ("draft/", {"triple_id": tid, "score": arabic(1), "rationale": GOOD}, "score"),
        ("draft/", {"triple_id": tid, "score": 1, "time_spent_ms": arabic(5)}, "time_spent_ms"),
        (
            "submit/",
            {"items": [{"triple_id": tid, "score": arabic(1), "rationale": GOOD}]},
            "items",
        ),
        ("submit/", {"items": [], "time_spent_ms": arabic(5)}, "time_spent_ms"),
    ]
    for action, body, field in cases:
        response = client.post(base + action, json.dumps(body), content_type="application/json")
        assert response.status_code == 400, (body, response.content)
        assert field in response.json(), response.json()
    # ASCII digits in a string are a number, as before.
    ok = client.post(
        base + "draft/",
        json.dumps({"triple_id": str(tid), "score": "1", "rationale": GOOD}),
        content_type="application/json",
    )
    assert ok.status_code == 200, ok.content
    estimate.refresh_from_db()
    assert estimate.score == 1 and estimate.time_spent_ms == 0


def test_the_markup_session_api_refuses_unicode_digits() -> None:
    sample = MarkupSample.objects.create(name="digits")
    text = MarkupText.objects.create(external_id="d-1", text="Мы одеваем шапки.", subject="rus")
    MarkupSampleText.objects.create(sample=sample, text=text, position=0)
    team = Participant.objects.create(user=make_user("digits"), organisation="d", approved=True)
    key = Token.objects.create(user=team.user).key
    client = Client(HTTP_AUTHORIZATION=f"Token {key}", raise_request_exception=False)
    refused = client.post(
        reverse("api_markup_runs"),
        {"sample": arabic(sample.pk), "system": "S"},
        content_type="application/json",
    )
    assert refused.status_code == 400 and "sample" in refused.json(), refused.content
    opened = client.post(
        reverse("api_markup_runs"),
        {"sample": sample.pk, "system": "S"},
        content_type="application/json",
    )
    run_id = opened.json()["id"]
    got = client.post(reverse("api_markup_run_next", args=[run_id])).json()
    sent = client.post(
        reverse("api_markup_run_markup", args=[run_id]),
        {"text_id": arabic(got["text_id"]), "selections": []},
        content_type="application/json",
    )
    assert sent.status_code == 400 and "text_id" in sent.json(), sent.content
    report = client.get(reverse("api_markup_run", args=[run_id])).json()
    assert report["answered"] == 0


def test_a_draft_onto_a_submitted_assignment_is_409_and_stores_nothing(scoring: Any) -> None:
    assignment, client, estimate = scoring
    items = [
        ScoreInput(
            triple_id=e.triple_id,
            score=rubric_of(e.triple).best_value,
            rationale=GOOD,
        )
        for e in assignment.estimates.select_related("triple__rubric")
    ]
    assert assignment_submit(assignment=assignment, items=items).ok
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.SUBMITTED
    estimate.refresh_from_db()
    before = (estimate.status, estimate.score, estimate.rationale)
    response = client.post(
        f"/api/assignments/{assignment.pk}/draft/",
        json.dumps({"triple_id": estimate.triple_id, "score": 0, "rationale": "Передумал."}),
        content_type="application/json",
    )
    assert response.status_code == 409, response.content
    assert "submitted" in response.json()["detail"], response.json()
    estimate.refresh_from_db()
    assignment.refresh_from_db()
    assert (estimate.status, estimate.score, estimate.rationale) == before
    assert assignment.drafts_backup == {}
    detail = client.get(f"/api/assignments/{assignment.pk}/").json()
    row = next(c for c in detail["criteria"] if c["triple_id"] == estimate.triple_id)
    assert row["rationale"] == GOOD
