from __future__ import annotations

import threading
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from material.models import Answer, LanguageModel
from panels.models import Panel
from protocol.rationale import rationale_errors
from tests.conftest import Personas, criterion_of, make_expert, rubric_of
from work.assignments import assignments_build
from work.models import Assignment, AssignmentStatus, Estimate, EstimateRevision
from work.services import ScoreInput, ScoringClosed, assignment_submit, estimate_save_draft

pytestmark = pytest.mark.django_db

GOOD = "Ответ полностью соответствует критерию, ошибок нет."
# What the code does now (measured on a page of 11 criteria), tight so that a query per
# criterion or per navigation link fails the test. One of them reads the session: sessions live
# in the database, so that a Redis restart cannot fail an expert's request. Another is the
# supervisor's return notice (work.context_processors.review_returns, issue #18). Three more
# belong to the comment thread (discussion.context_processors): the item's owner, its thread and
# the navigation's count of unread replies, whatever the number of criteria.
QUERIES_PAGE = 10
# 10: the session read, and a check for a critical violation the expert recorded on the same
# answer for another panel (issue #11, item 12): one query, whatever the number of criteria.
QUERIES_SUBMIT = 10


@pytest.mark.parametrize(
    ("text", "score", "is_na", "ok"),
    [
        ("", 1, False, False),  # required
        ("   ", 2, False, False),
        ("Плохо", 0, False, False),  # one word: only for the best score
        ("Отлично", 2, False, True),  # one word is enough for the best score
        ("Хорошо", 1, False, False),
        ("Есть ошибки", 1, False, True),
        ("Some English words", 1, False, False),  # Russian required by default
        # Was accepted ("Cyrillic present"): 5 Cyrillic letters of 17 is not mostly Russian.
        ("Ответ OK, mostly fine", 1, False, False),
        ("Ответ верный, mostly fine", 1, False, True),  # 11 of 21 letters are Cyrillic
        ("", None, True, False),  # NA needs a rationale
        ("Неприменимо", None, True, False),  # one word is not enough for NA
        ("Критерий неприменим здесь", None, True, True),
    ],
)
def test_rationale_rules(text: str, score: int | None, is_na: bool, ok: bool) -> None:
    # More cases, shared with the aggregation and the page: tests/protocol/test_rationale_rule.py.
    errors = rationale_errors(text, score=score, is_na=is_na, best_score=2)
    assert (errors == []) is ok, errors


def test_the_language_check_can_be_switched_off(settings: Any) -> None:
    settings.POLLUX = {**settings.POLLUX, "RATIONALE_SCRIPT": None}
    assert rationale_errors("Fine words", score=1, is_na=False, best_score=2) == []


def _setup(make_answer: Callable[..., Answer], **kwargs: Any) -> tuple[Assignment, Assignment]:
    science = Panel.objects.get(key="science")
    make_expert("sci1", science)
    make_expert("sci2", science)
    answer = make_answer(**kwargs)
    assignments_build(answer_ids=[answer.pk])
    a, b = Assignment.objects.filter(panel=science, answer=answer).order_by("pk")
    return a, b


def _good_items(
    assignment: Assignment, **overrides: tuple[int | None, bool, str]
) -> list[ScoreInput]:
    items = []
    for e in assignment.estimates.select_related("triple__rubric", "triple__criterion"):
        score = 0 if e.triple.group == "critical" else rubric_of(e.triple).max_value
        items.append(ScoreInput(triple_id=e.triple_id, score=score, rationale=GOOD))
    return items


def test_a_full_submission_stores_every_score(make_answer: Callable[..., Answer]) -> None:
    a, _b = _setup(make_answer)
    result = assignment_submit(assignment=a, items=_good_items(a))
    assert result.ok, result.errors
    a.refresh_from_db()
    assert a.status == AssignmentStatus.SUBMITTED
    assert a.estimates.exclude(status="submitted").count() == 0
    assert all(e.rubric_id == e.triple.rubric_id for e in a.estimates.select_related("triple"))


def test_it_rejects_a_missing_rationale_and_writes_nothing(
    make_answer: Callable[..., Answer],
) -> None:
    a, _b = _setup(make_answer)
    items = _good_items(a)
    items[3].rationale = ""
    result = assignment_submit(assignment=a, items=items)
    assert not result.ok
    assert list(result.errors) == [items[3].triple_id]
    assert a.estimates.filter(status="submitted").count() == 0


def test_it_rejects_a_score_outside_the_scale(make_answer: Callable[..., Answer]) -> None:
    a, _b = _setup(make_answer)
    items = _good_items(a)
    items[4].score = 7
    result = assignment_submit(assignment=a, items=items)
    assert not result.ok and items[4].triple_id in result.errors


def test_na_only_where_the_criterion_allows_it(make_answer: Callable[..., Answer]) -> None:
    a, _b = _setup(make_answer)
    items = _good_items(a)
    estimates = {e.triple_id: e for e in a.estimates.select_related("triple__criterion")}
    critical = next(i for i in items if estimates[i.triple_id].triple.group == "critical")
    domain = next(i for i in items if criterion_of(estimates[i.triple_id].triple).allows_na)
    critical.is_na, critical.score = True, None
    domain.is_na, domain.score, domain.rationale = True, None, "Критерий здесь неприменим"
    result = assignment_submit(assignment=a, items=items)
    assert list(result.errors) == [critical.triple_id]
    critical.is_na, critical.score = False, 0
    assert assignment_submit(assignment=a, items=items).ok
    stored = Estimate.objects.get(assignment=a, triple_id=domain.triple_id)
    assert stored.is_na and stored.score is None


def test_a_critical_violation_skips_the_remaining_criteria(
    make_answer: Callable[..., Answer],
) -> None:
    a, _b = _setup(make_answer)
    estimates = list(a.estimates.select_related("triple"))
    gate = next(e for e in estimates if criterion_of(e.triple).key == "narushenie_formata")
    items = [
        ScoreInput(triple_id=gate.triple_id, score=1, rationale="Ответ зациклен и нечитаем."),
    ] + [
        ScoreInput(triple_id=e.triple_id, score=0, rationale="Цензор не сработал вовсе.")
        for e in estimates
        if e.triple.group == "critical" and e.pk != gate.pk
    ]
    result = assignment_submit(assignment=a, items=items)
    assert result.ok and result.critical_stop, result.errors
    a.refresh_from_db()
    assert a.critical_stop
    skipped = a.estimates.filter(status="skipped")
    assert skipped.count() == len([e for e in estimates if e.triple.group != "critical"])
    assert not skipped.filter(score__isnull=False).exists()
    assert a.estimates.filter(status="submitted", triple__group="critical").count() == 2


def test_submitting_twice_stores_once(make_answer: Callable[..., Answer]) -> None:
    a, _b = _setup(make_answer)
    items = _good_items(a)
    first = assignment_submit(assignment=a, items=items, submission_key="k1")
    second = assignment_submit(assignment=a, items=items, submission_key="k1")
    third = assignment_submit(assignment=a, items=items, submission_key="other-tab")
    assert first.ok and not first.already_submitted
    assert second.already_submitted and third.already_submitted
    assert not EstimateRevision.objects.exists()


def test_editing_a_submitted_score_keeps_history_until_locked(
    make_answer: Callable[..., Answer],
) -> None:
    a, _b = _setup(make_answer)
    items = _good_items(a)
    assert assignment_submit(assignment=a, items=items).ok
    target = next(i for i in items if i.score == 2)
    target.score, target.rationale = 1, "Есть небольшие недочёты в тексте."
    assert assignment_submit(assignment=a, items=items).ok
    estimate = Estimate.objects.get(assignment=a, triple_id=target.triple_id)
    assert (estimate.score, estimate.revision) == (1, 1)
    revision = EstimateRevision.objects.get(estimate=estimate)
    assert (revision.score, revision.rationale) == (2, GOOD)

    Assignment.objects.filter(pk=a.pk).update(locked=True)
    target.score = 0
    with pytest.raises(ScoringClosed):
        assignment_submit(assignment=a, items=items)
    estimate.refresh_from_db()
    assert estimate.score == 1


def test_drafts_survive_and_are_shown_again(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    a, _b = _setup(make_answer)
    e = a.estimates.first()
    assert e is not None
    estimate_save_draft(
        assignment=a, item=ScoreInput(triple_id=e.triple_id, score=1, rationale="Пишу черновик")
    )
    client.force_login(a.expert.user)
    page = client.get(reverse("assignment", args=[a.pk]))
    assert page.status_code == HTTPStatus.OK
    assert "Пишу черновик" in page.content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_same_expert_submitting_from_two_sessions_at_once_is_stored_once(
    make_answer: Callable[..., Answer],
) -> None:
    assert connection.vendor == "postgresql"
    a, _b = _setup(make_answer)
    items = _good_items(a)
    barrier = threading.Barrier(2)
    results: list[Any] = []

    def submit(key: str) -> None:
        try:
            barrier.wait()
            results.append(assignment_submit(assignment=a, items=items, submission_key=key))
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=(k,)) for k in ("tab-1", "tab-2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2 and all(r.ok for r in results)
    assert sorted(r.already_submitted for r in results) == [False, True]
    assert not EstimateRevision.objects.exists()
    assert a.estimates.filter(status="submitted").count() == len(items)


# --- pages and API --------------------------------------------------------------------


def test_an_expert_cannot_open_another_experts_assignment(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    a, b = _setup(make_answer)
    client.force_login(a.expert.user)
    assert client.get(reverse("assignment", args=[a.pk])).status_code == HTTPStatus.OK
    assert client.get(reverse("assignment", args=[b.pk])).status_code == HTTPStatus.NOT_FOUND
    forged = client.post(reverse("assignment", args=[b.pk]), {"score_1": "2"})
    assert forged.status_code == HTTPStatus.NOT_FOUND
    assert client.get(f"/api/assignments/{b.pk}/").status_code == HTTPStatus.NOT_FOUND


def test_the_scoring_page_hides_the_model_and_other_experts(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    a, b = _setup(make_answer, model="SecretModel-XL")
    assert assignment_submit(assignment=b, items=_good_items(b)).ok
    client.force_login(a.expert.user)
    html = client.get(reverse("assignment", args=[a.pk])).content.decode()
    api = client.get(f"/api/assignments/{a.pk}/").content.decode()
    for body in (html, api):
        assert "SecretModel" not in body
        assert GOOD not in body  # the other expert's rationale
        assert b.expert.pseudonym not in body
    assert LanguageModel.objects.filter(name="SecretModel-XL").exists()


def test_the_form_shows_errors_and_keeps_what_was_typed(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    a, _b = _setup(make_answer)
    client.force_login(a.expert.user)
    data = {f"score_{i.triple_id}": str(i.score) for i in _good_items(a)}
    data |= {f"rationale_{i.triple_id}": GOOD for i in _good_items(a)}
    # A criterion of a 0..2 scale: a one-word rationale is not enough for its middle score.
    first = next(
        i
        for i in _good_items(a)
        if rubric_of(Estimate.objects.get(assignment=a, triple_id=i.triple_id).triple).max_value
        == 2
    )
    data[f"score_{first.triple_id}"] = "1"
    data[f"rationale_{first.triple_id}"] = "Кратко"
    response = client.post(reverse("assignment", args=[a.pk]), data)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    body = response.content.decode()
    assert "одного слова достаточно только для высшей оценки" in body or "one word" in body
    assert "Кратко" in body
    data[f"rationale_{first.triple_id}"] = "Есть небольшие недочёты"
    ok = client.post(reverse("assignment", args=[a.pk]), data)
    assert ok.status_code == HTTPStatus.FOUND
    assert Estimate.objects.get(assignment=a, triple_id=first.triple_id).score == 1


def test_the_api_and_the_page_show_the_same_rows(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    # One builder (work.selectors.scoring_rows) feeds both: same criteria, order and values,
    # drafts included (a scored draft and an NA draft).
    a, _b = _setup(make_answer)
    items = _good_items(a)
    estimate_save_draft(assignment=a, item=items[0])
    na_row = next(
        e
        for e in a.estimates.select_related("triple__criterion")
        if criterion_of(e.triple).allows_na and e.triple_id != items[0].triple_id
    )
    estimate_save_draft(
        assignment=a,
        item=ScoreInput(triple_id=na_row.triple_id, score=None, is_na=True, rationale=GOOD),
    )
    client.force_login(a.expert.user)
    page = client.get(reverse("assignment", args=[a.pk]))
    api = client.get(f"/api/assignments/{a.pk}/").json()["criteria"]

    def shown(rows: list[dict[str, Any]], score: Callable[[dict[str, Any]], Any]) -> list[Any]:
        return [
            (
                int(r["triple_id"] if "triple_id" in r else r["tid"]),
                r["name"],
                r["group"],
                r["status"],
                score(r),
                r["is_na"],
                r["rationale"],
                [(str(level["value"]), level["text"]) for level in r["levels"]],
            )
            for r in rows
        ]

    page_rows = shown(
        page.context["rows"],
        lambda r: next((int(lv["value"]) for lv in r["levels"] if lv["on"]), None),
    )
    api_rows = shown(api, lambda r: None if r["is_na"] else r["score"])
    assert page_rows == api_rows
    assert len(api_rows) == a.estimates.count() >= 2
    drafted = {row[0]: row for row in api_rows}
    assert drafted[items[0].triple_id][4] == items[0].score
    assert drafted[na_row.triple_id][5] is True
    assert [r["description"] for r in api] == [r["desc"] for r in page.context["rows"]]


def test_the_api_scores_an_answer(make_answer: Callable[..., Answer], client: Client) -> None:
    a, _b = _setup(make_answer)
    client.force_login(a.expert.user)
    listing = client.get("/api/assignments/").json()
    assert [row["id"] for row in listing["results"]] == [a.pk]
    detail = client.get(f"/api/assignments/{a.pk}/").json()
    assert detail["criteria"][0]["group"] == "critical"
    payload: dict[str, Any] = {
        "submission_key": "api-1",
        "items": [
            {"triple_id": i.triple_id, "score": i.score, "rationale": i.rationale}
            for i in _good_items(a)
        ],
    }
    response = client.post(
        f"/api/assignments/{a.pk}/submit/", payload, content_type="application/json"
    )
    assert response.status_code == HTTPStatus.OK, response.content
    again = client.post(
        f"/api/assignments/{a.pk}/submit/", payload, content_type="application/json"
    )
    assert again.json()["already_submitted"] is True
    bad = {**payload, "items": [{**payload["items"][0], "score": 9}], "submission_key": "x"}
    assert (
        client.post(
            f"/api/assignments/{a.pk}/submit/", bad, content_type="application/json"
        ).status_code
        == HTTPStatus.UNPROCESSABLE_ENTITY
    )


def test_the_schema_documents_the_scoring_api(personas: Personas, client: Client) -> None:
    client.force_login(personas.admin)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/assignments/{id}/submit/" in schema


def test_non_experts_have_no_queue(personas: Personas, client: Client) -> None:
    client.force_login(personas.supervisor_a)
    assert client.get(reverse("queue")).status_code == HTTPStatus.FORBIDDEN
    assert client.get("/api/assignments/").status_code == HTTPStatus.FORBIDDEN
    client.logout()
    assert client.get(reverse("queue")).status_code == HTTPStatus.FOUND


def test_the_scoring_page_and_submission_use_a_bounded_number_of_queries(
    make_answer: Callable[..., Answer],
    client: Client,
    django_assert_max_num_queries: Callable[..., Any],
) -> None:
    # Guards against per-criterion queries creeping back (the page shows ~11 criteria here).
    a, _b = _setup(make_answer)
    client.force_login(a.expert.user)
    client.get(reverse("queue"))  # the session is loaded once before counting
    with django_assert_max_num_queries(QUERIES_PAGE):
        page = client.get(reverse("assignment", args=[a.pk]))
    assert page.status_code == HTTPStatus.OK
    data = {"submission_key": "k1"}
    for item in _good_items(a):
        data[f"score_{item.triple_id}"] = str(item.score)
        data[f"rationale_{item.triple_id}"] = item.rationale
    with django_assert_max_num_queries(QUERIES_SUBMIT):
        done = client.post(reverse("assignment", args=[a.pk]), data)
    assert done.status_code == HTTPStatus.FOUND
    assert a.estimates.filter(status="submitted").count() == a.estimates.count() > 5


def test_navigation_links_follow_the_roles(personas: Personas, client: Client) -> None:
    def links(user: Any) -> set[str]:
        client.force_login(user)
        html = client.get(reverse("home"), follow=True).content.decode()
        names = ("queue", "console", "import_material", "dataset", "judging_runs")
        return {name for name in names if f'href="{reverse(name)}"' in html}

    assert links(personas.expert_a.user) == {"queue"}
    assert links(personas.supervisor_a) == {"console", "judging_runs"}
    assert links(personas.admin) == {"console", "import_material", "dataset", "judging_runs"}


def _two_panel_work(make_answer: Callable[..., Answer]) -> tuple[Assignment, Assignment]:
    """One expert on one answer for two panels: (the assignment with the gates, the other)."""
    science = Panel.objects.get(key="science")
    crowd = Panel.objects.get(key="crowd")
    expert = make_expert("both", science, crowd)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    mine = list(Assignment.objects.filter(expert=expert, answer=answer).order_by("pk"))
    assert len(mine) == 2, mine
    gates = [a for a in mine if a.estimates.filter(triple__group="critical").exists()]
    assert len(gates) == 1
    other = next(a for a in mine if a.pk != gates[0].pk)
    assert other.estimates.exclude(triple__group="critical").exists()
    return gates[0], other


def _violation_items(assignment: Assignment) -> list[ScoreInput]:
    items = []
    for e in assignment.estimates.select_related("triple__criterion").filter(
        triple__group="critical"
    ):
        score = 1 if criterion_of(e.triple).key == "narushenie_formata" else 0
        items.append(ScoreInput(triple_id=e.triple_id, score=score, rationale=GOOD))
    return items


def test_a_critical_stop_carries_to_the_experts_other_panels_on_the_answer(
    make_answer: Callable[..., Answer],
) -> None:
    gated, other = _two_panel_work(make_answer)
    # A draft typed on the other panel's criteria before the violation was seen.
    draft_triple = other.estimates.first().triple_id  # type: ignore[union-attr]
    estimate_save_draft(
        assignment=other, item=ScoreInput(triple_id=draft_triple, score=1, rationale="Черновик")
    )
    result = assignment_submit(assignment=gated, items=_violation_items(gated))
    assert result.ok and result.critical_stop, result.errors
    other.refresh_from_db()
    assert other.status == AssignmentStatus.SUBMITTED and other.critical_stop
    assert not other.estimates.exclude(status="skipped").exists()
    assert not other.estimates.filter(score__isnull=False).exists()
    assert other.estimates.get(triple_id=draft_triple).rationale == "Черновик"
    # A later submission of the other assignment asks for nothing and scores nothing.
    again = assignment_submit(assignment=other, items=[])
    assert again.ok and again.critical_stop, again.errors
    assert not other.estimates.exclude(status="skipped").exists()


def test_withdrawing_the_violation_reopens_the_other_panels_work(
    make_answer: Callable[..., Answer],
) -> None:
    gated, other = _two_panel_work(make_answer)
    assert assignment_submit(assignment=gated, items=_violation_items(gated)).critical_stop
    result = assignment_submit(assignment=gated, items=_good_items(gated))
    assert result.ok and not result.critical_stop, result.errors
    other.refresh_from_db()
    assert other.status == AssignmentStatus.IN_PROGRESS and not other.critical_stop
    assert not other.estimates.filter(status="skipped").exists()
    assert assignment_submit(assignment=other, items=_good_items(other)).ok


def test_submission_updates_the_last_change_time(make_answer: Callable[..., Answer]) -> None:
    a, _b = _setup(make_answer)
    items = _good_items(a)
    estimate_save_draft(assignment=a, item=items[0])
    assert assignment_submit(assignment=a, items=items).ok
    for estimate in a.estimates.all():
        assert estimate.submitted_at is not None
        assert estimate.updated_at >= estimate.submitted_at, estimate


def test_the_queue_lists_work_in_progress_first_then_assigned_then_done(
    personas: Personas, make_answer: Callable[..., Answer], client: Client
) -> None:
    expert = personas.expert_a
    made = {
        status: Assignment.objects.create(
            expert=expert, answer=make_answer(), panel=personas.panel_a, status=status
        ).pk
        for status in (
            AssignmentStatus.ASSIGNED,
            AssignmentStatus.SUBMITTED,
            AssignmentStatus.IN_PROGRESS,
        )
    }
    client.force_login(expert.user)
    html = client.get(reverse("queue")).content.decode()
    rows = [html.index(f'href="{reverse("assignment", args=[pk])}"') for pk in made.values()]
    assigned, submitted, in_progress = rows
    assert in_progress < assigned < submitted


def test_one_word_is_for_the_best_end_of_each_scale_critical_gates_included(
    make_answer: Callable[..., Answer],
) -> None:
    """On the critical gates 0 ("no violation") is the best score: "Нет" suffices there; a
    one-word violation (1, which skips every other criterion) must be explained."""
    a, a2 = _setup(make_answer)
    items = _good_items(a)
    estimates = {e.triple_id: e for e in a.estimates.select_related("triple__rubric")}
    gates = [i for i in items if estimates[i.triple_id].triple.group == "critical"]
    assert gates and all(rubric_of(estimates[i.triple_id].triple).best_value == 0 for i in gates)
    for gate in gates:
        gate.score, gate.rationale = 0, "Нет"
    assert assignment_submit(assignment=a, items=items).ok

    gate_estimate = next(
        e for e in a2.estimates.select_related("triple") if e.triple.group == "critical"
    )
    refused = assignment_submit(
        assignment=a2,
        items=[ScoreInput(triple_id=gate_estimate.triple_id, score=1, rationale="Нарушение")],
    )
    assert not refused.ok and gate_estimate.triple_id in refused.errors
    assert not a2.estimates.filter(status="submitted").exists()


def test_the_catalogue_marks_only_the_critical_rubrics_best_at_the_lowest(catalogue: None) -> None:
    from taxonomy.models import BestEnd, Rubric

    lowest = Rubric.objects.filter(best_end=BestEnd.LOWEST)
    assert set(lowest.values_list("criterion__group", flat=True)) == {"critical"}
    assert not Rubric.objects.filter(criterion__group="critical", best_end=BestEnd.HIGHEST)
