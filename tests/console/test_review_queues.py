"""The review queues of a panel (issue #18): each queue's order and content, the review page's
next / previous within a queue, bounded queries and who may open them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from console import queues
from console.models import ReviewRequest
from dataset.models import TripleAggregate
from material.models import Answer
from panels.models import Expert
from quality.control import control_item_add, control_items_distribute, control_settings_update
from quality.models import ControlDelivery
from tests.conftest import PASSWORD, Personas, make_expert, rubric_of
from tests.console.test_console import _gold
from work.assignments import assignments_build
from work.models import Assignment, Estimate, ReviewStatus, Triple
from work.services import ScoreInput, assignment_submit

pytestmark = pytest.mark.django_db

GOOD = "Ответ соответствует критерию, замечаний нет."
LATIN = "The answer is fine overall, nothing to add."
POETRY = "Original Text Generation / Literary text / Poetry"


def _login(username: str) -> Client:
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    return client


def _best(e: Estimate) -> int:
    return rubric_of(e.triple).best_value


def _submit(assignment: Assignment, value: Callable[[Estimate], int] = _best) -> None:
    items = [
        ScoreInput(triple_id=e.triple_id, score=value(e), rationale=GOOD)
        for e in assignment.estimates.select_related("triple__rubric")
    ]
    result = assignment_submit(assignment=assignment, items=items)
    assert result.ok, (result.errors, result.form_errors)


@dataclass
class Material:
    answers: list[Answer]  # panel A's, scored by expert_a and peer
    other: Answer  # panel B's, scored by expert_b
    peer: Expert


@pytest.fixture
def material(personas: Personas, make_answer: Callable[..., Answer]) -> Material:
    peer = make_expert("peer_a", personas.panel_a)
    answers = [make_answer(text=f"Ответ номер {i}") for i in range(3)]
    other = make_answer(task=POETRY)
    assignments_build(answer_ids=[a.pk for a in [*answers, other]])
    now = timezone.now()
    for i, answer in enumerate(answers):
        for expert in (personas.expert_a, peer):
            assignment = Assignment.objects.get(expert=expert, answer=answer, kind="work")
            _submit(assignment)
            # Submitted an hour apart, answer 0 first: "newest first" is answer 2 first.
            Estimate.objects.filter(assignment=assignment).update(
                submitted_at=now - timedelta(hours=10 - i)
            )
    _submit(Assignment.objects.get(expert=personas.expert_b, answer=other, kind="work"))
    return Material(answers=answers, other=other, peer=peer)


def _rubric_triples(answer: Answer, personas: Personas) -> list[Triple]:
    return list(
        Triple.objects.filter(answer=answer, panel=personas.panel_a)
        .exclude(group="critical")
        .order_by("position", "pk")
    )


def _queue(client: Client, panel_pk: int, **params: Any) -> Any:
    response = client.get(reverse("console_review_queues", args=[panel_pk]), params)
    assert response.status_code == HTTPStatus.OK
    return response


def _rows(response: Any) -> list[Any]:
    return [item for _pos, item, _url in response.context["rows"]]


def _aggregate(triple: Triple, confidence: float) -> TripleAggregate:
    return TripleAggregate.objects.create(
        triple=triple, n_estimates=2, mean=3.0, mode=3, confidence=confidence
    )


def test_lowest_confidence_first_and_never_another_panels(
    personas: Personas, material: Material
) -> None:
    t0 = _rubric_triples(material.answers[0], personas)[0]
    t1 = _rubric_triples(material.answers[1], personas)[0]
    t2 = _rubric_triples(material.answers[2], personas)[0]
    _aggregate(t0, 0.9)
    _aggregate(t1, 0.2)
    _aggregate(t2, 0.5)
    other = Triple.objects.filter(answer=material.other, panel=personas.panel_b).first()
    assert other is not None
    _aggregate(other, 0.01)

    response = _queue(_login("sup_a"), personas.panel_a.pk, queue="low_confidence")
    assert [i.triple_id for i in _rows(response)] == [t1.pk, t2.pk, t0.pk]
    html = response.content.decode()
    review = reverse("console_answer_review", args=[personas.panel_a.pk, material.answers[1].pk])
    assert f'href="{review}?queue=low_confidence&amp;pos=1#triple-{t1.pk}"' in html
    # Panel B's own queue has its triple, and nothing of A's.
    b_rows = _rows(_queue(_login("sup_b"), personas.panel_b.pk, queue="low_confidence"))
    assert [i.triple_id for i in b_rows] == [other.pk]


def test_rationale_failures_found_by_the_rule(personas: Personas, material: Material) -> None:
    mine = Estimate.objects.filter(
        expert=personas.expert_a, triple__answer=material.answers[0]
    ).exclude(triple__group="critical")
    bad = mine.order_by("pk").first()
    assert bad is not None
    # Written around the form (an import, an older rule): a Latin rationale breaks the script rule.
    Estimate.objects.filter(pk=bad.pk).update(rationale=LATIN)
    theirs = Estimate.objects.filter(expert=personas.expert_b, triple__answer=material.other)
    Estimate.objects.filter(pk=theirs.order_by("pk").values("pk")[:1]).update(rationale=LATIN)

    # One word is enough for the best score of the scale (all of the fixture's scores are the
    # best): this one complies; the same word under a lower score does not.
    one_word_best, one_word_low = mine.order_by("pk")[1:3]
    Estimate.objects.filter(pk=one_word_best.pk).update(rationale="Отлично")
    low = min(rubric_of(one_word_low.triple).values)
    Estimate.objects.filter(pk=one_word_low.pk).update(rationale="Плохо", score=low)

    response = _queue(_login("sup_a"), personas.panel_a.pk, queue="rationale")
    rows = _rows(response)
    assert [i.estimate_id for i in rows] == sorted([bad.pk, one_word_low.pk], reverse=True)
    rows = [i for i in rows if i.estimate_id == bad.pk]
    assert rows[0].problems == ["Write the rationale in Russian (mostly Cyrillic letters)."]
    assert rows[0].expert == personas.expert_a.pseudonym
    # Panel B sees its own failure only.
    b_rows = _rows(_queue(_login("sup_b"), personas.panel_b.pk, queue="rationale"))
    assert [i.answer_id for i in b_rows] == [material.other.pk]


def test_an_experts_recent_work_newest_first(personas: Personas, material: Material) -> None:
    client = _login("sup_a")
    code = personas.expert_a.pseudonym
    rows = _rows(_queue(client, personas.panel_a.pk, queue="expert", expert=code))
    expected = list(
        Estimate.objects.filter(expert=personas.expert_a, triple__panel=personas.panel_a)
        .order_by("-submitted_at", "-id")
        .values_list("pk", flat=True)
    )
    assert [i.estimate_id for i in rows] == expected
    assert rows[0].answer_id == material.answers[2].pk
    assert rows[-1].answer_id == material.answers[0].pk
    assert {i.expert for i in rows} == {code}
    # Another panel's expert does not exist here; no expert chosen lists nothing.
    assert _rows(_queue(client, personas.panel_a.pk, queue="expert")) == []
    other = _queue(client, personas.panel_a.pk, queue="expert", expert=personas.expert_b.pseudonym)
    assert _rows(other) == [] and other.context["expert"] is None
    picker = _queue(client, personas.panel_a.pk, queue="expert").content.decode()
    assert code in picker and personas.expert_b.pseudonym not in picker


def test_control_mismatches_listed_and_matches_not(
    personas: Personas,
    make_answer: Callable[..., Answer],
    django_capture_on_commit_callbacks: Callable[..., Any],
    django_assert_max_num_queries: Callable[..., Any],
) -> None:
    panel = personas.panel_a
    golds = [make_answer(text=f"Эталонный ответ {i}") for i in range(2)]
    for gold in golds:
        _gold(gold, personas, best=True)
        control_item_add(panel=panel, answer=gold, user=personas.supervisor_a)
    control_settings_update(panel=panel, user=personas.supervisor_a, rate=1.0, min_items=5)
    assignments_build(answer_ids=[make_answer(text=f"Рабочий {i}").pk for i in range(2)])
    assert control_items_distribute(panel_id=panel.pk) == 2
    deliveries = list(ControlDelivery.objects.filter(expert=personas.expert_a).order_by("pk"))
    off, right = deliveries

    def worst_rubric(e: Estimate) -> int:
        values = rubric_of(e.triple).values
        return _best(e) if e.triple.group == "critical" else min(values)

    with django_capture_on_commit_callbacks(execute=True):
        _submit(off.assignment, worst_rubric)
        _submit(right.assignment)
    off.refresh_from_db()
    right.refresh_from_db()
    assert off.n_matched < off.n_total and right.n_matched == right.n_total > 0

    client = _login("sup_a")
    with django_assert_max_num_queries(40) as one:
        rows = _rows(_queue(client, panel.pk, queue="control"))
    assert [i.answer_id for i in rows] == [off.item.answer_id]
    assert rows[0].expert == personas.expert_a.pseudonym
    assert len(rows[0].mismatches) == off.n_total - off.n_matched
    assert all(m.score != m.reference for m in rows[0].mismatches)
    assert _rows(_queue(_login("sup_b"), personas.panel_b.pk, queue="control")) == []
    # A second mismatching delivery (as stored by grading) costs no extra query.
    ControlDelivery.objects.filter(pk=right.pk).update(n_matched=0)
    with django_assert_max_num_queries(40) as two:
        assert len(_rows(_queue(client, panel.pk, queue="control"))) == 2
    assert len(one.captured_queries) == len(two.captured_queries)


def test_next_and_previous_on_the_review_page_follow_the_queue(
    personas: Personas, material: Material
) -> None:
    triples = [_rubric_triples(a, personas)[0] for a in material.answers]
    for t, c in zip(triples, (0.1, 0.2, 0.3), strict=True):
        _aggregate(t, c)
    client = _login("sup_a")
    panel = personas.panel_a

    def review(answer: Answer) -> str:
        return reverse("console_answer_review", args=[panel.pk, answer.pk])

    response = client.get(review(material.answers[1]), {"queue": "low_confidence", "pos": "2"})
    nav = response.context["nav"]
    assert nav["previous_url"] == (
        f"{review(material.answers[0])}?queue=low_confidence&pos=1#triple-{triples[0].pk}"
    )
    assert nav["next_url"] == (
        f"{review(material.answers[2])}?queue=low_confidence&pos=3#triple-{triples[2].pk}"
    )
    html = response.content.decode()
    assert 'id="queue-next"' in html and 'id="queue-prev"' in html
    # The last item has no next; the first none before it.
    last = client.get(review(material.answers[2]), {"queue": "low_confidence", "pos": "3"})
    assert last.context["nav"]["next_url"] == "" and 'id="queue-next"' not in last.content.decode()
    first = client.get(review(material.answers[0]), {"queue": "low_confidence", "pos": "1"})
    assert first.context["nav"]["previous_url"] == ""
    # Without a queue the page is as before; an unknown queue is no queue.
    assert client.get(review(material.answers[0])).context["nav"] is None
    assert client.get(review(material.answers[0]), {"queue": "nope"}).context["nav"] is None

    # Accepting from a queue comes back to the same place in it.
    estimate = Estimate.objects.filter(triple=triples[1], expert=personas.expert_a).get()
    # The page's reviewable estimates in order, as the keyboard walks them.
    page = client.get(review(material.answers[1]), {"queue": "low_confidence", "pos": "2"})
    rows = re.findall(
        r'<tr id="triple-(\d+)"(.*?)(?=<tr id="triple-|</tbody>)', page.content.decode(), re.S
    )
    order = [
        (int(e), int(t))
        for t, row in rows
        for e in re.findall(r'data-estimate="(\d+)" data-reviewable="1"', row)
    ]
    at = [e for e, _t in order].index(estimate.pk)
    assert at + 1 < len(order), order  # another estimate to move on to
    following = order[at + 1]
    accept = reverse("console_estimate_accept", args=[panel.pk, estimate.pk])
    done = client.post(accept + "?queue=low_confidence&pos=2")
    assert done.status_code == HTTPStatus.FOUND
    # ... with the next estimate of the same answer selected and scrolled to, so the next a / s
    # acts on the one after the estimate just accepted, not on another criterion.
    assert done["Location"] == (
        review(material.answers[1])
        + f"?queue=low_confidence&pos=2&estimate={following[0]}#triple-{following[1]}"
    )
    estimate.refresh_from_db()
    assert estimate.review_status == ReviewStatus.ACCEPTED
    again = client.get(done["Location"].split("#")[0])
    assert 'selected" data-code="' in again.content.decode()
    assert again.context["selected_estimate"] == following[0]


def test_the_experts_queue_keeps_its_expert_in_next_links(
    personas: Personas, material: Material
) -> None:
    code = personas.expert_a.pseudonym
    response = _login("sup_a").get(
        reverse("console_answer_review", args=[personas.panel_a.pk, material.answers[2].pk]),
        {"queue": "expert", "pos": "1", "expert": code},
    )
    nav = response.context["nav"]
    assert f"expert={code}" in nav["next_url"] and nav["previous_url"] == ""
    assert f"expert={code}" in nav["queue_url"]


def test_who_may_open_the_queues(personas: Personas, material: Material) -> None:
    url_a = reverse("console_review_queues", args=[personas.panel_a.pk])
    assert Client().get(url_a).status_code == HTTPStatus.FOUND  # to the login page
    assert _login("expert_a").get(url_a).status_code == HTTPStatus.FORBIDDEN
    assert _login("sup_b").get(url_a).status_code == HTTPStatus.NOT_FOUND
    assert _login("admin").get(url_a).status_code == HTTPStatus.OK
    assert _login("sup_a").get(url_a).status_code == HTTPStatus.OK
    # Linked from every page of the panel's console.
    panel_page = _login("sup_a").get(reverse("console_panel", args=[personas.panel_a.pk]))
    assert url_a in panel_page.content.decode()


def test_a_supervisor_with_open_work_sees_none_of_it_in_the_queues(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    """Scoring blind: his own open answer is in no queue, whatever its confidence."""
    sup_expert = make_expert("sup_expert", personas.panel_a)
    personas.panel_a.supervisors.add(sup_expert.user)
    open_answer, done_answer = make_answer(text="Открытый ответ"), make_answer(text="Готовый")
    assignments_build(answer_ids=[open_answer.pk, done_answer.pk])
    assert Assignment.objects.filter(expert=sup_expert, answer=open_answer).exists()
    _submit(Assignment.objects.get(expert=sup_expert, answer=done_answer))
    _aggregate(_rubric_triples(open_answer, personas)[0], 0.01)
    _aggregate(_rubric_triples(done_answer, personas)[0], 0.5)
    rows = _rows(_queue(_login("sup_expert"), personas.panel_a.pk, queue="low_confidence"))
    assert [i.answer_id for i in rows] == [done_answer.pk]
    assert len(_rows(_queue(_login("sup_a"), personas.panel_a.pk, queue="low_confidence"))) == 2


@pytest.mark.parametrize("queue", list(queues.QUEUES))
def test_a_page_costs_the_same_queries_for_one_row_or_many(
    personas: Personas,
    material: Material,
    queue: str,
    django_assert_max_num_queries: Callable[..., Any],
) -> None:
    for i, answer in enumerate(material.answers):
        for t in _rubric_triples(answer, personas):
            _aggregate(t, 0.1 + i / 10)
    Estimate.objects.filter(expert=personas.expert_a).update(rationale=LATIN)
    if queue == queues.SENT:
        # Every submitted estimate of the panel sent to review (console.bulk's send to review).
        ReviewRequest.objects.bulk_create(
            ReviewRequest(estimate=e, panel=personas.panel_a, requested_at=timezone.now())
            for e in Estimate.objects.filter(triple__panel=personas.panel_a, status="submitted")
        )
    client = _login("sup_a")
    params = {"queue": queue, "expert": personas.expert_a.pseudonym}
    with django_assert_max_num_queries(40) as many:
        rows = _rows(_queue(client, personas.panel_a.pk, **params))
    if queue != "control":
        assert len(rows) > 3
    # Fewer rows: only answer 0's.
    Estimate.objects.exclude(triple__answer=material.answers[0]).filter(
        triple__panel=personas.panel_a
    ).update(rationale=GOOD, submitted_at=None, status="draft")
    TripleAggregate.objects.exclude(triple__answer=material.answers[0]).delete()
    with django_assert_max_num_queries(40) as few:
        rows_few = _rows(_queue(client, personas.panel_a.pk, **params))
    if queue != "control":
        assert 0 < len(rows_few) < len(rows)
    assert len(few.captured_queries) == len(many.captured_queries)
