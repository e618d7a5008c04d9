"""Qualification exams: grading on hand-made cases, thresholds, tolerance, versions, overrides."""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from openpyxl import Workbook

from material.models import Answer
from panels.models import Expert, Membership, SupervisorAction
from quality.copies import scores_match
from quality.exam_import import exam_import
from quality.exams import (
    ExamError,
    ReferenceInput,
    exam_attempt_override,
    exam_attempt_start,
    exam_create,
    exam_item_add,
    exam_references_set,
    exam_refusal,
    exam_update,
)
from quality.models import Exam, ExamAttempt, ReferenceScore
from taxonomy.models import Criterion
from taxonomy.services import criteria_for
from tests.conftest import PASSWORD, Personas, criterion_id_of, make_expert
from work.models import Assignment, AssignmentKind, Estimate, ReservedAnswer, Triple
from work.services import ScoreInput, ScoringClosed, assignment_submit

pytestmark = pytest.mark.django_db

GOOD = "Ответ соответствует критерию, замечаний нет."


def _pick(answer: Answer) -> dict[str, Criterion]:
    """Criteria of the answer's task by scale: a binary critical gate, two 0/1/2 criteria and
    one that allows NA; plus any 0..4 criterion of the catalogue."""
    found: dict[str, Criterion] = {}
    three = []
    for c in criteria_for(answer.instruction):
        values = c.rubric.values if c.rubric else []
        if c.group == "critical" and values == [0, 1] and "critical" not in found:
            found["critical"] = c
        elif values == [0, 1, 2] and c.group != "critical":
            if c.allows_na and "na" not in found:
                found["na"] = c
            else:
                three.append(c)
    found["a"], found["b"] = three[0], three[1]
    wide = next(
        c
        for c in Criterion.objects.select_related("rubric").exclude(rubric=None)
        if c.rubric and c.rubric.values == [0, 1, 2, 3, 4]
    )
    found["wide"] = wide
    return found


def _exam(
    personas: Personas,
    answers: list[Answer],
    refs: list[tuple[int, Criterion, int | None]],
    **options: Any,
) -> Exam:
    """An open exam of panel A: refs are (answer index, criterion, score or None for NA)."""
    sup = personas.supervisor_a
    exam = exam_create(panel=personas.panel_a, title="Наука", user=sup, is_active=True, **options)
    copies = []
    for answer in answers:
        exam, item = exam_item_add(exam=exam, answer=answer, user=sup)
        copies.append(item.scored_answer_id)
    return exam_references_set(
        exam=exam,
        rows=[
            ReferenceInput(
                answer_id=copies[i],
                criterion_id=c.pk,
                score=s,
                is_na=s is None,
                comment=f"Эталон: {c.key}",
            )
            for i, c, s in refs
        ],
        user=sup,
    )


def _take(
    attempt: ExamAttempt,
    answers: dict[int, dict[int, Any]],
    capture: Callable[..., Any],
) -> ExamAttempt:
    """Submit every exam assignment: answers[item position][criterion id] = score (None = NA)."""
    links = attempt.items.select_related("item", "assignment").order_by("item__position")
    for link in links:
        _take_item(link, answers[link.item.position], capture)
    attempt.refresh_from_db()
    return attempt


def _take_item(link: Any, wanted: dict[int, Any], capture: Callable[..., Any]) -> None:
    """Submit one exam assignment: wanted[criterion id] = score (None = NA)."""
    items = [
        ScoreInput(
            triple_id=e.triple_id,
            score=wanted[criterion_id_of(e.triple)],
            is_na=wanted[criterion_id_of(e.triple)] is None,
            rationale=GOOD,
        )
        for e in link.assignment.estimates.select_related("triple")
    ]
    with capture(execute=True):
        result = assignment_submit(assignment=link.assignment, items=items)
    assert result.ok, (result.errors, result.form_errors)


@pytest.fixture
def setup(
    personas: Personas, make_answer: Callable[..., Answer]
) -> tuple[Personas, list[Answer], dict[str, Criterion], Expert]:
    answers = [make_answer(), make_answer(text="Другой ответ модели о клетках.")]
    candidate = make_expert("candidate", personas.panel_a, qualified=False)
    return personas, answers, _pick(answers[0]), candidate


def _five_refs(c: dict[str, Criterion]) -> list[tuple[int, Criterion, int | None]]:
    return [(0, c["critical"], 0), (0, c["a"], 2), (0, c["b"], 1), (1, c["critical"], 0),
            (1, c["na"], None)]  # fmt: skip


def test_it_grades_a_hand_made_attempt_to_the_exact_coefficient(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(personas, answers, _five_refs(c))
    attempt = exam_attempt_start(exam=exam, expert=candidate)
    assert attempt.number == 1
    # 3 of 5 equal the reference: critical ✓, a ✗ (1 vs 2), b ✓, critical ✓, NA ✗ (2 vs NA).
    graded = _take(
        attempt,
        {
            0: {c["critical"].pk: 0, c["a"].pk: 1, c["b"].pk: 1},
            1: {c["critical"].pk: 0, c["na"].pk: 2},
        },
        django_capture_on_commit_callbacks,
    )
    assert (graded.n_matched, graded.n_total) == (3, 5)
    assert graded.coefficient == pytest.approx(0.6)
    assert graded.passed is False
    assert Membership.objects.get(expert=candidate, panel=personas.panel_a).qualified is False
    # The graded answers are final.
    first = Assignment.objects.filter(exam_item__attempt=graded).first()
    assert first is not None and first.locked
    with pytest.raises(ScoringClosed):
        assignment_submit(assignment=first, items=[])


def test_na_is_a_value_and_a_pass_at_the_threshold_grants_the_listed_groups(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(personas, answers, _five_refs(c), pass_threshold=0.8, criterion_groups=["task"])
    attempt = exam_attempt_start(exam=exam, expert=candidate)
    # 4 of 5: only `a` differs; NA equals NA.
    graded = _take(
        attempt,
        {
            0: {c["critical"].pk: 0, c["a"].pk: 0, c["b"].pk: 1},
            1: {c["critical"].pk: 0, c["na"].pk: None},
        },
        django_capture_on_commit_callbacks,
    )
    assert graded.coefficient == pytest.approx(0.8)
    assert graded.passed is True  # 4/5 meets a 0.8 threshold exactly
    membership = Membership.objects.get(expert=candidate, panel=personas.panel_a)
    assert membership.qualified is True
    assert membership.qualified_groups == ["task"]


def test_the_default_threshold_is_0_7(personas: Personas) -> None:
    exam = exam_create(panel=personas.panel_a, title="T", user=personas.supervisor_a)
    assert exam.pass_threshold == 0.7


@pytest.mark.parametrize(
    ("ref", "score", "scale", "tolerance", "expected"),
    [
        (2, 3, [0, 1, 2, 3, 4], 0, False),
        (2, 3, [0, 1, 2, 3, 4], 1, True),
        (2, 4, [0, 1, 2, 3, 4], 1, False),
        (2, 1, [0, 1, 2], 1, False),  # tolerance never applies to 0/1/2 scales
        (1, 0, [0, 1], 1, False),
        (None, None, [0, 1, 2], 0, True),  # NA == NA
        (None, 0, [0, 1, 2], 1, False),
        (1, None, [0, 1, 2], 1, False),
    ],
)
def test_matching_rules(
    ref: int | None, score: int | None, scale: list[int], tolerance: int, expected: bool
) -> None:
    assert (
        scores_match(
            ref_score=ref,
            ref_na=ref is None,
            score=score,
            is_na=score is None,
            scale=scale,
            tolerance=tolerance,
        )
        is expected
    )


def test_a_skipped_criterion_after_a_critical_stop_matches_nothing() -> None:
    assert not scores_match(
        ref_score=0, ref_na=False, score=None, is_na=False, scale=[0, 1, 2], tolerance=1
    )


@pytest.mark.parametrize(("tolerance", "coefficient"), [(0, 0.5), (1, 1.0)])
def test_tolerance_counts_a_one_point_slip_on_0_to_4_scales(
    setup: Any,
    django_capture_on_commit_callbacks: Callable[..., Any],
    tolerance: int,
    coefficient: float,
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(
        personas, answers[:1], [(0, c["wide"], 2), (0, c["critical"], 0)], tolerance=tolerance
    )
    attempt = exam_attempt_start(exam=exam, expert=candidate)
    graded = _take(
        attempt, {0: {c["wide"].pk: 3, c["critical"].pk: 0}}, django_capture_on_commit_callbacks
    )
    assert graded.coefficient == pytest.approx(coefficient)


def test_changing_a_taken_exam_makes_a_new_version_and_keeps_the_graded_attempt(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(personas, answers, _five_refs(c))
    # No attempt yet: edits stay in the same version.
    assert exam_update(exam=exam, pass_threshold=0.75).pk == exam.pk
    attempt = exam_attempt_start(exam=exam, expert=candidate)
    graded = _take(
        attempt,
        {
            0: {c["critical"].pk: 0, c["a"].pk: 1, c["b"].pk: 1},
            1: {c["critical"].pk: 0, c["na"].pk: 2},
        },
        django_capture_on_commit_callbacks,
    )
    copy_a = exam.items.order_by("position").first()
    assert copy_a is not None
    v2 = exam_references_set(
        exam=exam,
        rows=[ReferenceInput(answer_id=copy_a.scored_answer_id, criterion_id=c["a"].pk, score=1)],
        user=personas.supervisor_a,
    )
    assert v2.pk != exam.pk and v2.version == 2 and v2.lineage == exam.lineage
    exam.refresh_from_db()
    assert exam.is_active is False and v2.is_active is True
    # v1's reference is untouched; the attempt still points at v1 with the same grade.
    assert ReferenceScore.objects.get(item__exam=exam, criterion=c["a"]).score == 2
    assert ReferenceScore.objects.get(item__exam=v2, criterion=c["a"]).score == 1
    graded.refresh_from_db()
    assert graded.exam_id == exam.pk and graded.coefficient == pytest.approx(0.6)
    with pytest.raises(ExamError):
        exam_update(exam=exam, pass_threshold=0.5)  # an old version cannot be edited
    assert exam_update(exam=v2, max_attempts=5).pk == v2.pk  # v2 has no attempts yet


def test_override_needs_a_reason_is_audited_and_changes_qualification(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(personas, answers, _five_refs(c))
    attempt = _take(
        exam_attempt_start(exam=exam, expert=candidate),
        {
            0: {c["critical"].pk: 1, c["a"].pk: 1, c["b"].pk: 1},
            1: {c["critical"].pk: 0, c["na"].pk: 2},
        },
        django_capture_on_commit_callbacks,
    )
    assert attempt.passed is False
    with pytest.raises(ExamError):
        exam_attempt_override(attempt=attempt, passed=True, reason="  ", user=personas.supervisor_a)
    exam_attempt_override(
        attempt=attempt, passed=True, reason="Эталон спорный", user=personas.supervisor_a
    )
    attempt.refresh_from_db()
    assert attempt.verdict is True and attempt.passed is False
    assert attempt.override_by == personas.supervisor_a and attempt.override_at is not None
    assert Membership.objects.get(expert=candidate, panel=personas.panel_a).qualified is True
    log = SupervisorAction.objects.get(action="exam_override")
    assert log.actor == personas.supervisor_a and log.note == "Эталон спорный"
    assert log.data == {"attempt": attempt.pk, "before": False, "after": True}
    exam_attempt_override(
        attempt=attempt, passed=False, reason="Передумали", user=personas.supervisor_a
    )
    assert Membership.objects.get(expert=candidate, panel=personas.panel_a).qualified is False
    assert SupervisorAction.objects.filter(action="exam_override").count() == 2


def test_retakes_respect_the_waiting_period_and_the_number_of_attempts(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(personas, answers[:1], [(0, c["a"], 2)], max_attempts=2, retake_wait_hours=24)
    wrong = {0: {c["a"].pk: 0}}
    first = _take(exam_attempt_start(exam=exam, expert=candidate), wrong,
                  django_capture_on_commit_callbacks)  # fmt: skip
    assert first.passed is False
    assert "retake" in exam_refusal(exam, candidate)
    with pytest.raises(ExamError):
        exam_attempt_start(exam=exam, expert=candidate)
    ExamAttempt.objects.filter(pk=first.pk).update(
        submitted_at=timezone.now() - timedelta(hours=25)
    )
    second = exam_attempt_start(exam=exam, expert=candidate)
    assert second.number == 2
    # Each attempt scores its own copies: no clash with the first attempt's estimates.
    assert not set(second.items.values_list("answer_id", flat=True)) & set(
        first.items.values_list("answer_id", flat=True)
    )
    _take(second, wrong, django_capture_on_commit_callbacks)
    ExamAttempt.objects.filter(pk=second.pk).update(
        submitted_at=timezone.now() - timedelta(hours=25)
    )
    assert exam_refusal(exam, candidate) == "No attempts left."


def test_exam_material_is_frozen_and_reserved_from_real_work(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(personas, answers, _five_refs(c))
    attempt = exam_attempt_start(exam=exam, expert=candidate)
    copies = list(attempt.items.values_list("answer_id", flat=True))
    assert ReservedAnswer.objects.filter(answer_id__in=copies, purpose="exam").count() == 2
    # Triples of exam copies have overlap 1 and the candidate's slot 1: nothing left to fill.
    triples = Triple.objects.filter(answer_id__in=copies)
    assert set(triples.values_list("required_overlap", flat=True)) == {1}
    assert set(Estimate.objects.filter(triple__in=triples).values_list("slot", "expert_id")) == {
        (1, candidate.pk)
    }
    assert set(Assignment.objects.filter(answer_id__in=copies).values_list("kind", flat=True)) == {
        AssignmentKind.EXAM
    }
    # Editing the source answer later does not change the exam.
    answers[0].text = "Изменённый текст"
    answers[0].save(update_fields=["text"])
    assert Answer.objects.get(pk=copies[0]).text != "Изменённый текст"


def test_the_candidate_never_sees_the_reference(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(personas, answers, _five_refs(c))
    client = Client()
    client.login(username="candidate", password=PASSWORD)
    response = client.post(reverse("exam_start", args=[exam.pk]))
    assert response.status_code == HTTPStatus.FOUND
    page = client.get(response["Location"])
    assert page.status_code == HTTPStatus.OK
    assert "Эталон" not in page.content.decode()
    attempt = ExamAttempt.objects.get(expert=candidate)
    # The exam and attempt pages of the console are not for candidates.
    assert client.get(reverse("console_exam", args=[exam.pk])).status_code == 403
    assert client.get(reverse("console_attempt", args=[attempt.pk])).status_code == 403
    assert "Эталон" not in client.get(reverse("my_exams")).content.decode()


def test_supervisor_of_another_panel_cannot_see_or_override(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(personas, answers[:1], [(0, c["a"], 2)])
    attempt = _take(exam_attempt_start(exam=exam, expert=candidate), {0: {c["a"].pk: 0}},
                    django_capture_on_commit_callbacks)  # fmt: skip
    client = Client()
    client.login(username="sup_b", password=PASSWORD)
    assert client.get(reverse("console_exam", args=[exam.pk])).status_code == 404
    assert client.get(reverse("console_attempt", args=[attempt.pk])).status_code == 404
    response = client.post(
        reverse("console_attempt", args=[attempt.pk]), {"passed": "1", "reason": "Почему бы нет"}
    )
    assert response.status_code == 404
    attempt.refresh_from_db()
    assert attempt.override_passed is None


def test_the_supervisor_sees_mismatches_side_by_side_and_overrides_through_the_page(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(personas, answers[:1], [(0, c["a"], 2), (0, c["b"], 1)])
    attempt = _take(
        exam_attempt_start(exam=exam, expert=candidate),
        {0: {c["a"].pk: 0, c["b"].pk: 1}},
        django_capture_on_commit_callbacks,
    )
    client = Client()
    client.login(username="sup_a", password=PASSWORD)
    html = client.get(reverse("console_attempt", args=[attempt.pk])).content.decode()
    assert f"Эталон: {c['a'].key}" in html and GOOD in html  # reference comment + rationale
    assert f"Эталон: {c['b'].key}" not in html  # matches are hidden unless asked
    response = client.post(
        reverse("console_attempt", args=[attempt.pk]), {"passed": "1", "reason": "Спорный эталон"}
    )
    assert response.status_code == HTTPStatus.FOUND
    attempt.refresh_from_db()
    assert attempt.verdict is True


def _csv(rows: list[list[str]]) -> bytes:
    return ("\n".join(",".join(r) for r in [["answer", "criterion", "score", "comment"], *rows])
            ).encode()  # fmt: skip


def test_import_reports_every_bad_row_and_imports_nothing(setup: Any) -> None:
    personas, answers, c, _candidate = setup
    exam = exam_create(panel=personas.panel_a, title="T", user=personas.supervisor_a)
    content = _csv(
        [
            [str(answers[0].pk), c["a"].key, "2", "ок"],
            ["999999", c["a"].key, "1", ""],
            [str(answers[0].pk), "no-such-criterion", "1", ""],
            [str(answers[0].pk), c["b"].key, "7", ""],
            [str(answers[0].pk), c["b"].key, "много", ""],
            [str(answers[0].pk), c["a"].key, "1", "дубль"],
        ]
    )
    report = exam_import(exam=exam, content=content, filename="refs.csv")
    assert len(report.errors) == 5
    assert [e.split(":")[0] for e in report.errors] == ["Row 3", "Row 4", "Row 5", "Row 6", "Row 7"]
    assert "999999" in report.errors[0]
    assert not exam.items.exists() and not ReferenceScore.objects.exists()


def test_import_from_xlsx_adds_items_and_references(setup: Any) -> None:
    personas, answers, c, _candidate = setup
    exam = exam_create(panel=personas.panel_a, title="T", user=personas.supervisor_a)
    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["answer", "criterion", "score", "comment"])
    sheet.append([answers[0].pk, c["a"].key, 2, "Всё верно"])
    sheet.append([answers[0].pk, c["na"].key, "NA", "Неприменимо здесь"])
    sheet.append([answers[1].pk, c["b"].key, 0, "Ошибка в выводе"])
    buffer = io.BytesIO()
    book.save(buffer)
    report = exam_import(exam=exam, content=buffer.getvalue(), filename="refs.xlsx")
    assert report.errors == [] and report.rows == 3
    assert report.exam is not None and report.exam.pk == exam.pk
    assert exam.items.count() == 2
    na = ReferenceScore.objects.get(item__exam=exam, criterion=c["na"])
    assert na.is_na and na.score is None and na.comment == "Неприменимо здесь"


def test_import_through_the_page_shows_row_errors(setup: Any) -> None:
    personas, answers, c, _candidate = setup
    exam = exam_create(panel=personas.panel_a, title="T", user=personas.supervisor_a)
    client = Client()
    client.login(username="sup_a", password=PASSWORD)
    upload = io.BytesIO(_csv([[str(answers[0].pk), c["a"].key, "5", ""]]))
    upload.name = "refs.csv"
    response = client.post(reverse("console_exam_import", args=[exam.pk]), {"file": upload})
    assert response.status_code == 422
    assert "Row 2" in response.content.decode()


def _form_of(assignment: Assignment, scores: dict[int, int | None]) -> dict[str, str]:
    """The scoring page's POST for an assignment: scores[criterion id] (None = NA)."""
    form = {"submission_key": f"k-{assignment.pk}", "time_total": "1000"}
    for e in assignment.estimates.select_related("triple"):
        score = scores[criterion_id_of(e.triple)]
        form[f"score_{e.triple_id}"] = "na" if score is None else str(score)
        form[f"rationale_{e.triple_id}"] = GOOD
    return form


def test_an_exam_is_its_own_flow_from_the_first_item_to_the_result(
    setup: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, answers, c, candidate = setup
    # Regular work that waits in the candidate's queue, older than the exam's items.
    work = Assignment.objects.create(
        expert=candidate, answer=answers[1], panel=personas.panel_a, kind=AssignmentKind.WORK
    )
    exam = _exam(personas, answers, [(0, c["a"], 2), (1, c["b"], 1)])
    client = Client()
    client.login(username="candidate", password=PASSWORD)
    first = client.post(reverse("exam_start", args=[exam.pk]), follow=True)
    html = first.content.decode()
    assert "Exam “Наука”: item 1 of 2" in html
    assert "Submit and open the next exam item" in html
    attempt = ExamAttempt.objects.get(expert=candidate)
    links = list(attempt.items.select_related("assignment").order_by("item__position"))
    one, two = links[0].assignment, links[1].assignment
    assert first.request["PATH_INFO"] == reverse("assignment", args=[one.pk])

    with django_capture_on_commit_callbacks(execute=True):
        sent = client.post(reverse("assignment", args=[one.pk]), _form_of(one, {c["a"].pk: 2}))
    after_one = client.get(sent["Location"], follow=True)
    # The next unanswered item of the same attempt, never the regular work.
    assert after_one.request["PATH_INFO"] == reverse("assignment", args=[two.pk])
    html = after_one.content.decode()
    assert "Exam “Наука”: item 2 of 2" in html and "Submit and finish the exam" in html

    with django_capture_on_commit_callbacks(execute=True):
        sent = client.post(reverse("assignment", args=[two.pk]), _form_of(two, {c["b"].pk: 1}))
    after_two = client.get(sent["Location"], follow=True)
    assert after_two.request["PATH_INFO"] == reverse("my_exams")
    html = after_two.content.decode()
    assert "Exam “Наука” finished" in html and "passed" in html
    # The regular "next answer" never opens exam items, but still finds the regular work.
    assert client.get(reverse("queue_next"))["Location"] == reverse("assignment", args=[work.pk])


def test_regular_work_never_hands_over_to_an_open_exam(setup: Any) -> None:
    personas, answers, c, candidate = setup
    exam = _exam(personas, answers[:1], [(0, c["a"], 2)])
    exam_attempt_start(exam=exam, expert=candidate)
    client = Client()
    client.login(username="candidate", password=PASSWORD)
    response = client.get(reverse("queue_next"))
    assert response["Location"] == reverse("queue")


def test_one_reference_model_holds_exam_and_panel_gold(setup: Any) -> None:
    # ReferenceScore is both kinds of gold: an exam item's reference and a panel's reference on
    # an answer, side by side in one table; the database keeps each row to exactly one owner.
    personas, answers, c, _candidate = setup
    exam = exam_create(panel=personas.panel_a, title="T", user=personas.supervisor_a)
    exam, item = exam_item_add(exam=exam, answer=answers[0], user=personas.supervisor_a)
    criterion = c["a"]
    assert criterion.rubric is not None
    value = criterion.rubric.values[0]
    exam_ref = ReferenceScore.objects.create(
        item=item, criterion=criterion, rubric=criterion.rubric, score=value
    )
    panel_ref = ReferenceScore.objects.create(
        answer=answers[0], panel=personas.panel_a, criterion=criterion, score=value
    )
    assert list(item.references.all()) == [exam_ref]
    assert list(answers[0].references.all()) == [panel_ref]
    refused = [
        {"criterion": criterion, "score": value},  # no owner
        {  # two owners
            "item": item,
            "answer": answers[0],
            "panel": personas.panel_a,
            "criterion": criterion,
            "rubric": criterion.rubric,
            "score": value,
        },
        {"item": item, "criterion": c["b"], "score": value},  # an exam reference needs its rubric
        {"item": item, "criterion": c["b"], "rubric": criterion.rubric},  # ... and a value
        {"answer": answers[0], "criterion": criterion, "score": value},  # a panel's, no panel
    ]
    for fields in refused:
        with pytest.raises(IntegrityError), transaction.atomic():
            ReferenceScore.objects.create(**fields)
