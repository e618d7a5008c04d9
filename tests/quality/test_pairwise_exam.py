"""Side-by-side (REPA) qualification exams: gold pool -> exam pairs, attempts, grading, pages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from material.models import Answer, AnswerPair, Instruction, LanguageModel
from panels.models import Membership
from protocol.pairwise import Label, swap
from quality.exams import (
    ExamError,
    ReferenceInput,
    exam_attempt_start,
    exam_create,
    exam_item_add,
    exam_references_set,
)
from quality.kind_pairwise import (
    GOLD_COMMENT,
    attempt_pair_comparisons,
    exam_pairs_add_from_gold,
)
from quality.models import LABEL_CHOICES, Exam, ExamAttempt, ExamItem, ReferenceLabel
from taxonomy.models import ComparisonCriterion
from taxonomy.services import criteria_for
from tests.conftest import PASSWORD, Personas, make_expert
from work.comparisons import comparison_refuse, comparisons_build
from work.models import (
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    Estimate,
    EstimateStatus,
    ReservedAnswer,
    Triple,
    TripleKind,
)
from work.services import ScoreInput, ScoringClosed, assignment_submit

pytestmark = pytest.mark.django_db

MODEL_A, MODEL_B = "Alpha-7B-secret", "Beta-13B-secret"
GOOD = "Ответ соответствует критерию, замечаний нет."


def _pair(n: int) -> AnswerPair:
    instruction = Instruction.objects.create(text=f"Объясните, почему небо голубое ({n}).")
    a = Answer.objects.create(
        instruction=instruction,
        model=LanguageModel.objects.get_or_create(name=MODEL_A)[0],
        text=f"Левый ответ {n}: рассеяние Рэлея.",
        text_hash=f"pa{n}",
    )
    b = Answer.objects.create(
        instruction=instruction,
        model=LanguageModel.objects.get_or_create(name=MODEL_B)[0],
        text=f"Правый ответ {n}: потому что так.",
        text_hash=f"pb{n}",
    )
    return AnswerPair.objects.create(instruction=instruction, answer_a=a, answer_b=b)


def _gold_labels(n: int) -> dict[str, Label]:
    """Per criterion key, the label all three experts give pair n (every kind of label)."""
    keys = [c.key for c in ComparisonCriterion.objects.order_by("position")]
    cycle = [Label.A, Label.B, Label.BOTH_GOOD, Label.BOTH_BAD]
    return {key: cycle[(i + n) % 4] for i, key in enumerate(keys)}


def _label(pair: AnswerPair, labels: dict[str, Label], *, dissent: str = "") -> None:
    """Submit three experts' labels on every triple of the pair; on `dissent` one differs."""
    for triple in Triple.objects.filter(pair=pair).select_related("comparison_criterion"):
        key = triple.comparison_criterion.key  # type: ignore[union-attr]
        estimates = list(Estimate.objects.filter(triple=triple).order_by("slot"))
        assert len(estimates) == 3
        for k, estimate in enumerate(estimates):
            label = labels[key]
            if key == dissent and k == 0:
                label = Label.BOTH_BAD if label is not Label.BOTH_BAD else Label.A
            estimate.label = label.value
            estimate.status = EstimateStatus.SUBMITTED
            estimate.save(update_fields=["label", "status"])


@pytest.fixture
def gold(personas: Personas) -> dict[str, Any]:
    """Panel A's pairs: 0 and 1 unanimous on every criterion, 2 unanimous but one criterion."""
    make_expert("labeller1", personas.panel_a)
    make_expert("labeller2", personas.panel_a)
    pairs = [_pair(n) for n in range(3)]
    comparisons_build(panel_id=personas.panel_a.pk, route=True, seed=3)
    _label(pairs[0], _gold_labels(0))
    _label(pairs[1], _gold_labels(1))
    _label(pairs[2], _gold_labels(2), dissent="overall")
    candidate = make_expert("candidate", personas.panel_a, qualified=False)
    return {"personas": personas, "pairs": pairs, "candidate": candidate}


def _pair_exam(personas: Personas, n: int = 5, **options: Any) -> Exam:
    exam = exam_create(
        panel=personas.panel_a, title="Сравнение", user=personas.supervisor_a, is_active=True,
        **options,
    )  # fmt: skip
    exam, _items = exam_pairs_add_from_gold(exam=exam, n=n, seed=1, user=personas.supervisor_a)
    return exam


def _source_pair(item: ExamItem) -> AnswerPair:
    assert item.pair is not None
    source_a = ReservedAnswer.objects.get(answer_id=item.pair.answer_a_id).source_id
    return AnswerPair.objects.get(answer_a_id=source_a)


def _client(username: str) -> Client:
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    return client


def _shown_form(
    assignment: Assignment, labels: dict[str, Label], *, place: bool = True
) -> dict[str, str]:
    """The compare page's POST: labels (pair orientation) as the candidate sees them placed.

    With `place=False` the pair's own labels are posted as if shown unswapped: wrong on every
    A/B criterion of a swapped assignment.
    """
    form = {"time_total": "1000", "submission_key": f"k-{assignment.pk}", "comment": "ок"}
    for key, label in labels.items():
        shown = swap(label) if assignment.swapped and place else label
        form[f"label_{key}"] = shown.value
    return form


def _pair_links(attempt: ExamAttempt) -> list[Any]:
    return list(
        attempt.items.filter(item__pair__isnull=False)
        .select_related("item", "assignment")
        .order_by("item__position")
    )


def _refs(item: ExamItem) -> dict[str, Label]:
    return {
        r.comparison_criterion.key: Label(r.label)
        for r in ReferenceLabel.objects.filter(item=item).select_related("comparison_criterion")
    }


def test_the_gold_pool_becomes_exam_pairs_with_their_unanimous_labels(
    gold: dict[str, Any],
) -> None:
    personas, pairs = gold["personas"], gold["pairs"]
    exam = _pair_exam(personas, n=5)
    items = list(exam.items.select_related("pair").order_by("position"))
    # Only the two pairs unanimous on every criterion: pair 2 has one disputed criterion.
    assert sorted(_source_pair(i).pk for i in items) == [pairs[0].pk, pairs[1].pk]
    n_criteria = ComparisonCriterion.objects.count()
    for item in items:
        assert item.answer_id is None and item.pair is not None
        source = _source_pair(item)
        # A frozen copy: both answers copied and reserved as exam material, same orientation.
        copies = ((item.pair.answer_a, source.answer_a), (item.pair.answer_b, source.answer_b))
        for copy, original in copies:
            assert copy.pk != original.pk and copy.text == original.text
            assert copy.reserved.purpose == ReservedAnswer.Purpose.EXAM
            assert copy.reserved.source_id == original.pk
        refs = ReferenceLabel.objects.filter(item=item)
        assert refs.count() == n_criteria
        assert {r.comment for r in refs} == {GOLD_COMMENT}
        assert {r.author_id for r in refs} == {None}
        assert _refs(item) == _gold_labels(pairs.index(source))
    # Nothing left to add, and the copies are never routed as real work.
    with pytest.raises(ExamError):
        exam_pairs_add_from_gold(exam=exam, n=1, seed=2)
    assert (
        comparisons_build(panel_id=personas.panel_a.pk, route=True, seed=4)["triples_created"] == 0
    )
    with pytest.raises(ExamError):
        exam_pairs_add_from_gold(exam=exam, n=0)


def test_a_pair_with_one_disputed_criterion_never_enters(personas: Personas) -> None:
    make_expert("labeller1", personas.panel_a)
    make_expert("labeller2", personas.panel_a)
    pair = _pair(7)
    comparisons_build(panel_id=personas.panel_a.pk, route=True, seed=3)
    _label(pair, _gold_labels(0), dissent="factuality")
    exam = exam_create(panel=personas.panel_a, title="Сравнение", user=personas.supervisor_a)
    with pytest.raises(ExamError):
        exam_pairs_add_from_gold(exam=exam, n=3, seed=1)
    assert not exam.items.exists() and not ReferenceLabel.objects.exists()
    # Another panel's gold is not this panel's either.
    _label(pair, _gold_labels(0))
    other = exam_create(panel=personas.panel_b, title="Чужое", user=personas.supervisor_b)
    with pytest.raises(ExamError):
        exam_pairs_add_from_gold(exam=other, n=3, seed=1)


def test_correct_labels_in_a_swapped_placement_pass(
    gold: dict[str, Any], django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, candidate = gold["personas"], gold["candidate"]
    exam = _pair_exam(personas)
    client = _client("candidate")
    started = client.post(reverse("exam_start", args=[exam.pk]))
    attempt = ExamAttempt.objects.get(expert=candidate)
    links = _pair_links(attempt)
    assert len(links) == 2
    assert started["Location"] == reverse("assignment", args=[links[0].assignment.pk])
    # One placement of each kind, whatever the draw was.
    Assignment.objects.filter(pk=links[0].assignment.pk).update(swapped=True)
    Assignment.objects.filter(pk=links[1].assignment.pk).update(swapped=False)
    for link in links:
        assignment = Assignment.objects.get(pk=link.assignment.pk)
        assert assignment.kind == AssignmentKind.EXAM and assignment.pair is not None
        assert assignment.pair.answer_a.reserved.purpose == ReservedAnswer.Purpose.EXAM
        assert set(
            assignment.estimates.values_list("triple__kind", "triple__required_overlap", "slot")
        ) == {(TripleKind.PAIRWISE, 1, 1)}
        with django_capture_on_commit_callbacks(execute=True):
            sent = client.post(
                reverse("compare_submit", args=[assignment.pk]),
                _shown_form(assignment, _refs(link.item)),
            )
        # Within the exam: its continue page, never the regular queue.
        assert sent.status_code == 302
        assert sent["Location"].startswith(reverse("exam_attempt_continue", args=[attempt.pk])), (
            sent["Location"]
        )
        # Stored in the pair's orientation: the reference itself, whatever side was shown.
        stored = {
            e.triple.comparison_criterion.key: e.label  # type: ignore[union-attr]
            for e in assignment.estimates.select_related("triple__comparison_criterion")
        }
        assert stored == {k: v.value for k, v in _refs(link.item).items()}
    attempt.refresh_from_db()
    n = 2 * ComparisonCriterion.objects.count()
    assert (attempt.n_total, attempt.n_matched, attempt.coefficient) == (n, n, 1.0)
    assert attempt.passed is True
    assert Membership.objects.get(expert=candidate, panel=personas.panel_a).qualified
    assert all(r.match for r in attempt_pair_comparisons(attempt))
    # The last item's continue page shows the result.
    done = client.get(sent["Location"], follow=True)
    assert done.request["PATH_INFO"] == reverse("my_exams")


def test_labels_as_if_unswapped_or_wrong_do_not_pass(
    gold: dict[str, Any], django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, candidate = gold["personas"], gold["candidate"]
    exam = _pair_exam(personas)
    attempt = exam_attempt_start(exam=exam, expert=candidate, seed=5)
    links = _pair_links(attempt)
    Assignment.objects.filter(pk__in=[link.assignment.pk for link in links]).update(swapped=True)
    client = _client("candidate")
    first, second = links
    # First pair: the pair's labels posted without undoing the swap (A/B criteria all wrong).
    one = Assignment.objects.get(pk=first.assignment.pk)
    refs_one = _refs(first.item)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("compare_submit", args=[one.pk]), _shown_form(one, refs_one, place=False)
        )
    # Second pair: "both bad" on everything.
    two = Assignment.objects.get(pk=second.assignment.pk)
    refs_two = _refs(second.item)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("compare_submit", args=[two.pk]),
            _shown_form(two, dict.fromkeys(refs_two, Label.BOTH_BAD)),
        )
    attempt.refresh_from_db()
    ties = {Label.BOTH_GOOD, Label.BOTH_BAD}
    expected = sum(1 for v in refs_one.values() if v in ties) + sum(
        1 for v in refs_two.values() if v is Label.BOTH_BAD
    )
    assert attempt.n_total == len(refs_one) + len(refs_two)
    assert attempt.n_matched == expected
    assert attempt.n_matched < attempt.n_total
    assert attempt.passed is False
    assert not Membership.objects.get(expert=candidate, panel=personas.panel_a).qualified
    # The supervisor sees each mismatched criterion with the reference, in pair orientation.
    review = _client("sup_a").get(reverse("console_attempt", args=[attempt.pk])).content.decode()
    assert review.count('class="mismatch"') == attempt.n_total - attempt.n_matched


def test_a_mixed_exam_grades_scores_and_labels_together(
    gold: dict[str, Any],
    make_answer: Callable[..., Answer],
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    personas, candidate = gold["personas"], gold["candidate"]
    sup = personas.supervisor_a
    answer = make_answer()
    criteria = [
        c
        for c in criteria_for(answer.instruction)
        if c.group != "critical" and c.rubric and c.rubric.values == [0, 1, 2]
    ][:2]
    exam = exam_create(panel=personas.panel_a, title="Смешанный", user=sup, is_active=True)
    exam, item = exam_item_add(exam=exam, answer=answer, user=sup)
    exam = exam_references_set(
        exam=exam,
        rows=[
            ReferenceInput(answer_id=item.scored_answer_id, criterion_id=c.pk, score=2)
            for c in criteria
        ],
        user=sup,
    )
    exam, _items = exam_pairs_add_from_gold(exam=exam, n=1, seed=9, user=sup)
    attempt = exam_attempt_start(exam=exam, expert=candidate)
    links = list(attempt.items.select_related("item", "assignment").order_by("assignment_id"))
    # The attempt's sequence follows the exam's order: the answer first, then the pair.
    assert [link.item.task_kind for link in links] == ["pointwise", "pairwise"]
    pointwise, pairwise = links
    with django_capture_on_commit_callbacks(execute=True):
        result = assignment_submit(
            assignment=pointwise.assignment,
            items=[
                # One of the two scores off the reference.
                ScoreInput(triple_id=e.triple_id, score=2 if k == 0 else 1, rationale=GOOD)
                for k, e in enumerate(pointwise.assignment.estimates.order_by("triple__position"))
            ],
        )
    assert result.ok, (result.errors, result.form_errors)
    attempt.refresh_from_db()
    assert not attempt.graded  # the pair is still open
    refs = _refs(pairwise.item)
    assignment = Assignment.objects.get(pk=pairwise.assignment.pk)
    with django_capture_on_commit_callbacks(execute=True):
        _client("candidate").post(
            reverse("compare_submit", args=[assignment.pk]), _shown_form(assignment, refs)
        )
    attempt.refresh_from_db()
    assert attempt.n_total == 2 + len(refs)
    assert attempt.n_matched == 1 + len(refs)
    assert attempt.coefficient == pytest.approx((1 + len(refs)) / (2 + len(refs)))
    assert attempt.passed is True  # 12/13 over the default 0.7
    # Graded answers are final, the pair's too.
    assert Assignment.objects.get(pk=assignment.pk).locked


def test_the_candidate_page_is_blind_and_an_exam_pair_cannot_be_refused(
    gold: dict[str, Any], django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, candidate = gold["personas"], gold["candidate"]
    exam = _pair_exam(personas)
    client = _client("candidate")
    page = client.post(reverse("exam_start", args=[exam.pk]), follow=True)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Exam “Сравнение”: item 1 of 2" in html
    assert MODEL_A not in html and MODEL_B not in html
    assert GOLD_COMMENT not in html and 'id="refuse"' not in html
    attempt = ExamAttempt.objects.get(expert=candidate)
    assignment = _pair_links(attempt)[0].assignment
    with pytest.raises(ScoringClosed):
        comparison_refuse(assignment=assignment)
    assert Assignment.objects.get(pk=assignment.pk).status != AssignmentStatus.RELEASED
    # The supervisor's exam page shows the pairs and their references (texts, no models).
    sup_html = _client("sup_a").get(reverse("console_exam", args=[exam.pk])).content.decode()
    assert sup_html.count('class="card exam-pair"') == 2 and GOLD_COMMENT in sup_html
    assert MODEL_A not in sup_html


def test_the_console_form_adds_pairs_for_the_panels_supervisor_only(
    gold: dict[str, Any],
) -> None:
    personas = gold["personas"]
    exam = exam_create(panel=personas.panel_a, title="Сравнение", user=personas.supervisor_a)
    url = reverse("console_exam_pairs_add", args=[exam.pk])
    assert _client("sup_b").post(url, {"n": "2"}).status_code == 404
    assert _client("expert_a").post(url, {"n": "2"}).status_code == 403
    # Bad input: shown, nothing written.
    for data in ({"n": "0"}, {"n": "²"}, {"n": "9" * 20}, {"n": "1", "seed": "9" * 20}):
        bad = _client("sup_a").post(url, data, follow=True)
        assert bad.status_code == 200, data
        assert ("n:" in bad.content.decode()) or ("seed:" in bad.content.decode()), data
    assert not exam.items.exists()
    sent = _client("sup_a").post(url, {"n": "1", "seed": "4"})
    assert sent["Location"] == reverse("console_exam", args=[exam.pk])
    assert exam.items.filter(pair__isnull=False).count() == 1
    # A version somebody took is forked, never changed.
    exam.is_active = True
    exam.save()
    exam_attempt_start(exam=exam, expert=gold["candidate"])
    forked = _client("sup_a").post(url, {"n": "1", "seed": "4"})
    latest = Exam.objects.filter(lineage=exam.lineage).order_by("-version").first()
    assert latest is not None and latest.version == 2
    assert forked["Location"] == reverse("console_exam", args=[latest.pk])
    assert exam.items.count() == 1 and latest.items.count() == 2
    assert ReferenceLabel.objects.filter(item__exam=latest).count() == 2 * len(_gold_labels(0))


def test_a_practice_pair_shows_the_reference_labels_as_the_expert_saw_the_pair(
    gold: dict[str, Any], django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, candidate = gold["personas"], gold["candidate"]
    exam = _pair_exam(personas, n=1, mode="practice")
    client = _client("candidate")
    client.post(reverse("exam_start", args=[exam.pk]))
    attempt = ExamAttempt.objects.get(expert=candidate)
    (link,) = _pair_links(attempt)
    # Shown swapped: the pair's answer A sat on the right, as "B".
    Assignment.objects.filter(pk=link.assignment.pk).update(swapped=True)
    assignment = Assignment.objects.get(pk=link.assignment.pk)
    refs = _refs(link.item)
    with django_capture_on_commit_callbacks(execute=True):
        sent = client.post(
            reverse("compare_submit", args=[assignment.pk]), _shown_form(assignment, refs)
        )
    assert sent["Location"] == reverse("exam_practice_feedback", args=[attempt.pk, assignment.pk])
    page = client.get(sent["Location"])
    rows = page.context["feedback"].pair_rows
    assert {r.criterion.key for r in rows} == set(refs) and all(r.match for r in rows)
    # Every label reads in the page's placement: the expert's own equals the reference's.
    assert all(r.label == r.ref_label for r in rows)
    names = {code: str(name) for code, name in LABEL_CHOICES}
    assert {r.criterion.key: r.ref_label for r in rows} == {
        key: names[swap(label).value] for key, label in refs.items()
    }
    html = page.content.decode()
    assert "unanimous 3/3" in html  # the gold pair's reference comment
    attempt.refresh_from_db()
    assert attempt.passed is None
    assert not Membership.objects.get(expert=candidate, panel=personas.panel_a).qualified
