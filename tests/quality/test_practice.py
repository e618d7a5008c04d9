"""Practice before the exam: references and comments after each item, never a qualification;
the candidate's result page of a graded exam shows each mismatch with the reference comment."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.test import Client
from django.urls import reverse

from dataset.aggregation import aggregation_run
from dataset.export import ExportOptions, dataset_export
from dataset.models import TripleAggregate
from material.models import Answer
from panels.models import Expert, Membership
from quality.exams import (
    ExamError,
    exam_attempt_override,
    exam_attempt_start,
    exam_refusal,
    exam_update,
)
from quality.feedback import practice_feedback, practice_link
from quality.models import ExamAttempt
from taxonomy.models import Criterion
from taxonomy.services import criteria_for
from tests.conftest import PASSWORD, Personas, make_expert
from tests.quality.test_exams import _exam, _form_of, _pick, _take, _take_item
from work.models import Estimate

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(
    personas: Personas, make_answer: Callable[..., Answer]
) -> tuple[Personas, list[Answer], dict[str, Criterion], Expert]:
    answers = [make_answer(), make_answer(text="Другой ответ модели о клетках.")]
    candidate = make_expert("candidate", personas.panel_a, qualified=False)
    return personas, answers, _pick(answers[0]), candidate


def test_practice_never_qualifies_and_has_no_attempt_limit_or_wait(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(
        personas, answers[:1], [(0, c["a"], 2)], mode="practice", max_attempts=1,
        retake_wait_hours=48,
    )  # fmt: skip
    for _round in range(2):  # a second round at once, past max_attempts=1, without waiting
        attempt = _take(
            exam_attempt_start(exam=exam, expert=candidate),
            {0: {c["a"].pk: 2}},
            django_capture_on_commit_callbacks,
        )
        assert attempt.coefficient == pytest.approx(1.0)
        assert attempt.passed is None and attempt.verdict is None
        assert Membership.objects.get(expert=candidate, panel=personas.panel_a).qualified is False
        assert exam_refusal(exam, candidate) == ""
    with pytest.raises(ExamError):
        exam_attempt_override(attempt=attempt, passed=True, reason="просто так", user=None)


def test_feedback_rows_on_hand_made_references_and_the_item_is_locked(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(personas, answers, [(0, c["a"], 2), (0, c["b"], 1), (1, c["critical"], 0)],
                 mode="practice")  # fmt: skip
    attempt = exam_attempt_start(exam=exam, expert=candidate)
    first, second = attempt.items.select_related("assignment", "item").order_by("item__position")
    # Before the answer is in, there is no feedback at all.
    with pytest.raises(ExamError):
        practice_feedback(attempt, practice_link(attempt, first.assignment_id))  # type: ignore[arg-type]
    _take_one(attempt, first, {c["a"].pk: 0, c["b"].pk: 1}, django_capture_on_commit_callbacks)
    link = practice_link(attempt, first.assignment_id)
    assert link is not None
    fb = practice_feedback(attempt, link)
    got = {(r.criterion.key, r.score, r.ref_score, r.ref_comment, r.match) for r in fb.rows}
    assert got == {
        (c["a"].key, 0, 2, f"Эталон: {c['a'].key}", False),
        (c["b"].key, 1, 1, f"Эталон: {c['b'].key}", True),
    }
    assert (fb.n_matched, fb.n_total) == (1, 2)
    link.assignment.refresh_from_db()
    assert link.assignment.locked  # no changing the answer after seeing the reference
    # The other item of the round is not part of this item's feedback (nor answered yet).
    assert practice_link(attempt, second.assignment_id) is not None
    assert all(r.item_id == first.item_id for r in fb.rows)


def _take_one(
    attempt: ExamAttempt, link: Any, scores: dict[int, int | None], capture: Callable[..., Any]
) -> None:
    _take_item(link, scores, capture)


def test_practice_pages_show_the_reference_after_each_item_to_its_expert_only(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(personas, answers, [(0, c["a"], 2), (1, c["b"], 1)], mode="practice")
    client = Client()
    client.login(username="candidate", password=PASSWORD)
    listing = client.get(reverse("my_exams")).content.decode()
    assert "Start the practice" in listing and "Эталон" not in listing
    first = client.post(reverse("exam_start", args=[exam.pk]), follow=True)
    html = first.content.decode()
    assert "Practice “Наука”: item 1 of 2" in html and "Submit and see the reference" in html
    assert "Эталон" not in html
    attempt = ExamAttempt.objects.get(expert=candidate)
    one, two = (
        link.assignment
        for link in attempt.items.select_related("assignment").order_by("item__position")
    )
    # The second item's feedback before it is answered: no reference, on to the next open item.
    early = client.get(reverse("exam_practice_feedback", args=[attempt.pk, two.pk]))
    assert early.status_code == HTTPStatus.FOUND and "Эталон" not in early.content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        sent = client.post(reverse("assignment", args=[one.pk]), _form_of(one, {c["a"].pk: 1}))
    feedback_url = reverse("exam_practice_feedback", args=[attempt.pk, one.pk])
    assert sent["Location"] == feedback_url
    page = client.get(feedback_url)
    html = page.content.decode()
    assert page.status_code == HTTPStatus.OK
    assert f"Эталон: {c['a'].key}" in html and "differs" in html and "Next practice item" in html

    # Nobody else reads it: another expert of the panel (404), its supervisor (403: not a
    # candidate page; he reads attempts in the console).
    other = Client()
    other.login(username="expert_a", password=PASSWORD)
    assert other.get(feedback_url).status_code == HTTPStatus.NOT_FOUND
    assert other.get(reverse("exam_attempt_result", args=[attempt.pk])).status_code == 404
    sup = Client()
    sup.login(username="sup_a", password=PASSWORD)
    assert sup.get(feedback_url).status_code == HTTPStatus.FORBIDDEN

    nxt = client.get(page.context["continue_url"])
    assert nxt["Location"] == reverse("assignment", args=[two.pk])
    with django_capture_on_commit_callbacks(execute=True):
        sent = client.post(reverse("assignment", args=[two.pk]), _form_of(two, {c["b"].pk: 1}))
    page = client.get(sent["Location"])
    assert f"Эталон: {c['b'].key}" in page.content.decode()
    done = client.get(page.context["continue_url"], follow=True)
    assert done.request["PATH_INFO"] == reverse("exam_attempt_result", args=[attempt.pk])
    html = done.content.decode()
    assert f"Эталон: {c['a'].key}" in html  # the mismatch
    assert f"Эталон: {c['b'].key}" not in html  # a match is not listed
    assert Membership.objects.get(expert=candidate, panel=personas.panel_a).qualified is False
    # The panel's supervisor reads the round in the console: no verdict to override.
    console = sup.get(reverse("console_attempt", args=[attempt.pk])).content.decode()
    assert "Practice: no verdict" in console and "override-form" not in console


def test_the_exam_result_shows_each_mismatch_with_its_comment_only_after_grading(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(personas, answers, [(0, c["a"], 2), (0, c["b"], 1), (1, c["critical"], 0)])
    attempt = exam_attempt_start(exam=exam, expert=candidate)
    first, _second = attempt.items.select_related("assignment").order_by("item__position")
    client = Client()
    client.login(username="candidate", password=PASSWORD)
    _take_one(attempt, first, {c["a"].pk: 0, c["b"].pk: 1}, django_capture_on_commit_callbacks)
    # A qualifying exam shows no feedback page, and no result before it is graded.
    url = reverse("exam_practice_feedback", args=[attempt.pk, first.assignment_id])
    assert client.get(url).status_code == HTTPStatus.NOT_FOUND
    early = client.get(reverse("exam_attempt_result", args=[attempt.pk]))
    assert early.status_code == HTTPStatus.FOUND and "Эталон" not in early.content.decode()
    second = attempt.items.select_related("assignment").order_by("item__position")[1]
    _take_one(attempt, second, {c["critical"].pk: 1}, django_capture_on_commit_callbacks)
    attempt.refresh_from_db()
    assert attempt.graded and attempt.passed is False
    listing = client.get(reverse("my_exams")).content.decode()
    assert reverse("exam_attempt_result", args=[attempt.pk]) in listing
    html = client.get(reverse("exam_attempt_result", args=[attempt.pk])).content.decode()
    assert f"Эталон: {c['a'].key}" in html and f"Эталон: {c['critical'].key}" in html
    assert f"Эталон: {c['b'].key}" not in html  # matched: not shown
    assert "(2 / 3)" in html


def test_exam_and_practice_copies_stay_out_of_the_dataset(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any], tmp_path: Path
) -> None:
    personas, answers, c, candidate = setup
    practice = _exam(personas, answers[:1], [(0, c["a"], 2)], mode="practice")
    exam = _exam(personas, answers[:1], [(0, c["a"], 2)])
    ids = []
    for e in (practice, exam):
        attempt = _take(
            exam_attempt_start(exam=e, expert=candidate),
            {0: {c["a"].pk: 2}},
            django_capture_on_commit_callbacks,
        )
        ids += list(
            Estimate.objects.filter(assignment__exam_item__attempt=attempt).values_list(
                "pk", "triple_id"
            )
        )
    assert len(ids) == 2
    aggregation_run()
    triple_ids = [t for _pk, t in ids]
    assert not TripleAggregate.objects.filter(triple_id__in=triple_ids, excluded_reason="").exists()
    dataset_export(tmp_path / "ds", ExportOptions(fmt="parquet"))
    exported = pq.read_table(tmp_path / "ds" / "estimates.parquet").to_pandas()
    assert not set(exported["estimate_id"]) & {pk for pk, _t in ids}


def _listing_row(client: Client, exam_pk: int) -> str:
    """The candidate's exam list, the card of one exam only."""
    html = client.get(reverse("my_exams")).content.decode()
    start = html.index(f'id="exam-{exam_pk}"')
    return html[start : html.index("</section>", start)]


def test_a_practice_round_stays_practice_when_the_exam_turns_qualifying(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    """The issue's case: 0.93 in practice, then the supervisor switches the exam to qualifying.
    The round is not a failed attempt, uses none of the attempts and starts no retake wait."""
    personas, answers, _c, candidate = setup
    fourteen = [
        x for x in criteria_for(answers[0].instruction) if x.rubric and x.rubric.values == [0, 1, 2]
    ][:14]
    assert len(fourteen) == 14
    exam = _exam(personas, answers[:1], [(0, x, 2) for x in fourteen], mode="practice",
                 max_attempts=1, retake_wait_hours=24)  # fmt: skip
    scores = {x.pk: 2 for x in fourteen} | {fourteen[0].pk: 1}  # 13 of 14: 0.93
    practice = _take(
        exam_attempt_start(exam=exam, expert=candidate),
        {0: scores},
        django_capture_on_commit_callbacks,
    )
    assert practice.coefficient == pytest.approx(13 / 14) and practice.verdict is None

    qualifying = exam_update(exam=exam, user=personas.supervisor_a, mode="qualifying")
    practice.refresh_from_db()
    assert qualifying.pk != exam.pk and practice.is_practice and practice.verdict is None
    assert exam_refusal(qualifying, candidate) == ""
    client = Client()
    client.login(username="candidate", password=PASSWORD)
    row = _listing_row(client, qualifying.pk)
    assert "0.93" in row and 'attempt-mode">practice<' in row  # the round, marked so
    assert "verdict failed" not in row and "verdict passed" not in row
    assert "refusal" not in row and "Start the exam" in row
    # The supervisor's list of attempts shows it as practice, with no verdict either.
    sup = Client()
    sup.login(username="sup_a", password=PASSWORD)
    attempts = sup.get(reverse("console_exam", args=[qualifying.pk])).content.decode()
    attempts = attempts[attempts.index('id="attempts"') :]
    assert "attempt-mode" in attempts and "badge bad" not in attempts

    started = client.post(reverse("exam_start", args=[qualifying.pk]))
    assert started.status_code == HTTPStatus.FOUND
    exam_round = ExamAttempt.objects.get(expert=candidate, exam=qualifying)
    assert not exam_round.is_practice and exam_round.number == 2
    exam_round = _take(exam_round, {0: scores}, django_capture_on_commit_callbacks)
    assert exam_round.verdict is True
    assert Membership.objects.get(expert=candidate, panel=personas.panel_a).qualified is True
    row = _listing_row(client, qualifying.pk)
    assert row.count("verdict passed") == 1 and "verdict failed" not in row


def test_a_qualifying_attempt_keeps_its_verdict_when_the_exam_turns_practice(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(personas, answers[:1], [(0, c["a"], 2)])
    passed = _take(
        exam_attempt_start(exam=exam, expert=candidate),
        {0: {c["a"].pk: 2}},
        django_capture_on_commit_callbacks,
    )
    membership = Membership.objects.get(expert=candidate, panel=personas.panel_a)
    assert passed.verdict is True and membership.qualified is True

    practice = exam_update(exam=exam, user=personas.supervisor_a, mode="practice")
    passed.refresh_from_db()
    assert practice.is_practice and not passed.is_practice and passed.verdict is True
    # Practice is open to a candidate who passed; the round grants and takes nothing.
    assert exam_refusal(practice, candidate) == ""
    round_ = _take(
        exam_attempt_start(exam=practice, expert=candidate),
        {0: {c["a"].pk: 0}},
        django_capture_on_commit_callbacks,
    )
    assert round_.is_practice and round_.coefficient == 0 and round_.verdict is None
    membership.refresh_from_db()
    assert membership.qualified is True
    client = Client()
    client.login(username="candidate", password=PASSWORD)
    row = _listing_row(client, practice.pk)
    assert row.count("verdict passed") == 1 and "verdict failed" not in row
    assert 'attempt-mode">qualifying exam<' in row  # the earlier attempt, marked so
    # The qualifying verdict stays the supervisor's to override, and with it the qualification.
    sup = Client()
    sup.login(username="sup_a", password=PASSWORD)
    page = sup.get(reverse("console_attempt", args=[passed.pk])).content.decode()
    assert "override-form" in page and "Practice: no verdict" not in page
    exam_attempt_override(
        attempt=passed, passed=False, reason="проверка", user=personas.supervisor_a
    )
    membership.refresh_from_db()
    assert membership.qualified is False
