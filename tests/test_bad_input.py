"""Bad input gets a clear 4xx naming the field, never a 500, and nothing is half-written.

Numbers out of the columns' ranges, Unicode digits where an id is expected, a score off the
criterion's scale in a draft, an overlong rationale from the web form, an exam import into an
old exam version or with a score of 1e999.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from material.models import Answer
from panels.models import Panel
from protocol.rationale import MAX_LENGTH
from quality.exam_import import exam_import
from quality.exams import exam_create, exam_item_add
from quality.models import Exam, ReferenceScore
from taxonomy.services import criteria_for
from tests.conftest import PASSWORD, Personas, make_expert, rubric_of
from work.assignments import assignments_build
from work.forms import parse_id, parse_score
from work.models import Assignment, Estimate

pytestmark = pytest.mark.django_db

GOOD = "Ответ полностью соответствует критерию, ошибок нет."
TWENTY_DIGITS = "9" * 20


@pytest.fixture
def scoring(make_answer: Callable[..., Answer]) -> tuple[Assignment, Client, Estimate]:
    """An expert's assignment, the expert's logged-in client and a 0/1/2 criterion's slot."""
    science = Panel.objects.get(key="science")
    make_expert("sci1", science)
    make_expert("sci2", science)
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


def _form(assignment: Assignment, **override: str) -> dict[str, str]:
    """A complete, valid scoring form (0 on the critical gates, the top elsewhere)."""
    data = {"submission_key": "k", "time_total": "1000"}
    for e in assignment.estimates.select_related("triple__rubric"):
        best = rubric_of(e.triple).best_value
        data[f"score_{e.triple_id}"] = str(best)
        data[f"rationale_{e.triple_id}"] = GOOD
        data[f"time_{e.triple_id}"] = "10"
    data.update(override)
    return data


def test_strict_number_parsers() -> None:
    assert parse_id("42") == 42 and parse_id(" 42 ") == 42
    for bad in ("²", "٣", "-1", "0", "1e3", TWENTY_DIGITS, str(2**63), "", None, "4.5"):
        assert parse_id(bad) is None, bad
    assert parse_id(str(2**63 - 1)) == 2**63 - 1
    assert parse_score("-1") == (-1, False, False) and parse_score("NA") == (None, True, False)
    for bad in ("²", "٣", "32768", "-32769", "1e999", "1.5", "+1"):
        assert parse_score(bad)[2], bad


def test_unicode_and_huge_ids_in_the_queue_link(scoring: Any) -> None:
    _assignment, client, _estimate = scoring
    for after in ("²", "٣", TWENTY_DIGITS):
        response = client.get(reverse("queue_next") + f"?after={after}")
        assert response.status_code == 302, after


def test_drafts_out_of_range_or_off_the_scale_are_refused_naming_the_field(scoring: Any) -> None:
    assignment, client, estimate = scoring
    url = reverse("assignment_draft", args=[assignment.pk])
    tid = estimate.triple_id
    cases = [
        ({f"score_{tid}": "32768"}, f"score_{tid}"),
        ({f"score_{tid}": "²"}, f"score_{tid}"),
        ({f"score_{tid}": "5"}, f"score_{tid}"),  # a number, but not on the 0/1/2 scale
        ({f"score_{tid}": "1", f"time_{tid}": TWENTY_DIGITS}, f"time_{tid}"),
        ({f"score_{tid}": "1", f"time_{tid}": "1e20"}, f"time_{tid}"),
    ]
    for fields, named in cases:
        response = client.post(url, {"triple": str(tid), f"rationale_{tid}": GOOD, **fields})
        assert response.status_code == 422, fields
        assert named in response.content.decode(), response.content
    for triple in ("²", TWENTY_DIGITS):
        assert client.post(url, {"triple": triple}).status_code == 404
    estimate.refresh_from_db()
    assert estimate.status == "pending" and estimate.score is None and estimate.rationale == ""


def test_api_numbers_out_of_range_are_400_naming_the_field(scoring: Any) -> None:
    assignment, client, estimate = scoring
    base = f"/api/assignments/{assignment.pk}/"
    tid = estimate.triple_id

    def post(action: str, body: str) -> Any:
        return client.post(base + action, body, content_type="application/json")

    cases = [
        ("draft/", json.dumps({"triple_id": tid, "score": 32768}), "score"),
        ("draft/", f'{{"triple_id": {tid}, "score": 1e999}}', "score"),
        ("draft/", json.dumps({"triple_id": tid, "score": 5}), "score"),  # off the scale
        ("draft/", json.dumps({"triple_id": tid, "time_spent_ms": 10**20}), "time_spent_ms"),
        ("draft/", json.dumps({"triple_id": tid, "time_spent_ms": 10**19}), "time_spent_ms"),
        ("draft/", json.dumps({"triple_id": tid, "time_spent_ms": 1e20}), "time_spent_ms"),
        ("draft/", json.dumps({"triple_id": 10**20}), "triple_id"),
        ("submit/", json.dumps({"items": [], "time_spent_ms": 10**20}), "time_spent_ms"),
    ]
    for action, body, field in cases:
        response = post(action, body)
        assert response.status_code == 400, (body, response.content)
        assert field in response.json(), response.json()
    estimate.refresh_from_db()
    assert estimate.status == "pending" and estimate.time_spent_ms == 0


def test_web_form_numbers_out_of_range_are_refused_and_nothing_is_saved(scoring: Any) -> None:
    assignment, client, estimate = scoring
    url = reverse("assignment", args=[assignment.pk])
    tid = estimate.triple_id
    for override, named in (
        ({"time_total": TWENTY_DIGITS}, "time_total"),
        ({f"time_{tid}": TWENTY_DIGITS}, f"time_{tid}"),
        ({f"score_{tid}": "²"}, f"score_{tid}"),
        ({f"score_{tid}": "32768"}, f"score_{tid}"),
    ):
        response = client.post(url, _form(assignment, **override))
        assert response.status_code in (400, 422), override
        assert named in response.content.decode()
    assert not assignment.estimates.filter(status="submitted").exists()
    # The same form with sane numbers goes through.
    assert client.post(url, _form(assignment)).status_code == 302


def test_a_huge_rationale_from_the_web_form_is_refused_and_kept_in_the_form(
    scoring: Any,
) -> None:
    assignment, client, estimate = scoring
    tid = estimate.triple_id
    huge = "Очень подробное обоснование. " * (1_000_000 // 29) + "КОНЕЦ-ТЕКСТА"
    response = client.post(
        reverse("assignment", args=[assignment.pk]), _form(assignment, **{f"rationale_{tid}": huge})
    )
    assert response.status_code == 422
    page = response.content.decode()
    assert f"at most {MAX_LENGTH} characters" in page
    assert "КОНЕЦ-ТЕКСТА" in page  # the expert's whole text is still in the form
    assert not assignment.estimates.filter(status="submitted").exists()
    # A draft of it is refused too (never cut); the API refuses it as before.
    draft = client.post(
        reverse("assignment_draft", args=[assignment.pk]),
        {"triple": str(tid), f"score_{tid}": "1", f"rationale_{tid}": huge},
    )
    assert draft.status_code == 422 and f"rationale_{tid}" in draft.content.decode()
    estimate.refresh_from_db()
    assert estimate.rationale == ""
    # Exactly at the limit is accepted.
    at_limit = ("Обоснование " * MAX_LENGTH)[:MAX_LENGTH]
    ok = client.post(
        reverse("assignment", args=[assignment.pk]),
        _form(assignment, **{f"rationale_{tid}": at_limit}),
    )
    assert ok.status_code == 302
    estimate.refresh_from_db()
    assert estimate.rationale == at_limit.strip()


@pytest.fixture
def exam_setup(personas: Personas, make_answer: Callable[..., Answer]) -> tuple[Exam, Answer, Any]:
    exam = exam_create(panel=personas.panel_a, title="T", user=personas.supervisor_a)
    answer = make_answer()
    criterion = next(
        c
        for c in criteria_for(answer.instruction)
        if c.rubric and c.rubric.values == [0, 1, 2] and c.group != "critical"
    )
    return exam, answer, criterion


def _csv(*rows: list[str]) -> bytes:
    lines = [["answer", "criterion", "score", "comment"], *rows]
    return "\n".join(",".join(r) for r in lines).encode()


def test_exam_import_with_unicode_ids_or_a_score_of_1e999_reports_the_row(
    exam_setup: Any,
) -> None:
    exam, answer, criterion = exam_setup
    content = _csv(
        ["²", criterion.key, "1", ""],
        [TWENTY_DIGITS, criterion.key, "1", ""],
        [str(answer.pk), criterion.key, "1e999", ""],
        [str(answer.pk), criterion.key, "inf", ""],
        [str(answer.pk), criterion.key, "٣", ""],
    )
    report = exam_import(exam=exam, content=content, filename="refs.csv")
    assert [e.split(":")[0] for e in report.errors] == ["Row 2", "Row 3", "Row 4", "Row 5", "Row 6"]
    assert not ReferenceScore.objects.exists()
    # "2.0" as spreadsheets write it is still a score.
    report = exam_import(
        exam=exam, content=_csv([str(answer.pk), criterion.key, "2.0", ""]), filename="r.csv"
    )
    assert report.errors == [] and ReferenceScore.objects.get().score == 2


def test_exam_import_into_an_older_version_is_a_422_not_a_500(
    exam_setup: Any, personas: Personas
) -> None:
    exam, answer, criterion = exam_setup
    newer, _item = exam_item_add(exam=exam, answer=answer, user=personas.supervisor_a)
    # Force a second version: v1 stays behind (an attempt exists in real life; here by hand).
    v2 = Exam.objects.create(
        panel=exam.panel, lineage=exam.lineage, version=2, title="T", created_by=None
    )
    assert newer.pk == exam.pk and v2.version == 2
    client = Client(raise_request_exception=False)
    client.login(username="sup_a", password=PASSWORD)
    upload = _csv([str(answer.pk), criterion.key, "1", ""])
    response = client.post(
        reverse("console_exam_import", args=[exam.pk]),
        {"file": SimpleUploadedFile("refs.csv", upload, content_type="text/csv")},
    )
    assert response.status_code == 422
    assert "latest version" in response.content.decode()
    assert not ReferenceScore.objects.exists()


def test_console_inputs_with_unicode_or_huge_numbers(exam_setup: Any, personas: Personas) -> None:
    exam, answer, _criterion = exam_setup
    client = Client(raise_request_exception=False)
    client.login(username="sup_a", password=PASSWORD)
    panel = personas.panel_a
    for raw in ("²", TWENTY_DIGITS):
        add = client.post(reverse("console_exam_item_add", args=[exam.pk]), {"answer": raw})
        assert add.status_code == 422 and 'id="answer-errors"' in add.content.decode(), raw
        refs = client.post(
            reverse("console_exam_references", args=[exam.pk]),
            {"answer": str(answer.pk), f"score_{raw}": "1"},
        )
        assert refs.status_code in (302, 404), raw
        refs = client.post(
            reverse("console_exam_references", args=[exam.pk]), {"answer": raw, "score_1": "1"}
        )
        assert refs.status_code == 404, raw
        look = client.get(reverse("console_control", args=[panel.pk]) + f"?references={raw}")
        assert look.status_code == 200, raw
        control = client.post(
            reverse("console_control", args=[panel.pk]), {"action": "add", "answer": raw}
        )
        assert control.status_code == 302, raw
        for score in (raw, "32768", "-²"):
            listing = client.get(reverse("console_estimates", args=[panel.pk]) + f"?score={score}")
            assert listing.status_code == 200, score
    assert not exam.items.exists()
