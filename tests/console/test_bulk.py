"""Bulk actions of the data browser (console.bulk, issue #29 item 13): reassign, reopen and send
to review on a selection of assignments, refusals per row, all-or-nothing permissions, and bad
input answered 400 naming the field."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from console import bulk, queues
from console.models import ReviewRequest
from material.models import Answer
from panels.models import Expert, Membership, SupervisorAction
from tests.conftest import PASSWORD, Personas, make_expert, rubric_of
from work import review
from work.assignments import assignments_build
from work.models import (
    Assignment,
    AssignmentStatus,
    Estimate,
    EstimateRevision,
    EstimateStatus,
    ReviewStatus,
)
from work.selectors import next_assignment_id
from work.services import ScoreInput, assignment_submit

pytestmark = pytest.mark.django_db

RATIONALE = "Обоснование эксперта: ответ точен и полон, ошибок по существу нет."
COMMENT = "Проверьте фактическую точность ещё раз."


def _login(user: Any) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def _submit(assignment: Assignment, rationale: str = RATIONALE) -> None:
    items = []
    for e in assignment.estimates.select_related("triple__rubric"):
        score = 0 if e.triple.group == "critical" else max(rubric_of(e.triple).values)
        items.append(ScoreInput(triple_id=e.triple_id, score=score, rationale=rationale))
    result = assignment_submit(assignment=assignment, items=items)
    assert result.ok, (result.errors, result.form_errors)


@dataclass
class Work:
    answer: Answer
    open_a: Assignment  # expert_a's, open
    done: Assignment  # peer's, submitted
    peer: Expert
    free: Expert  # an expert of panel A with no work on the answer


@pytest.fixture
def work(personas: Personas, make_answer: Callable[..., Answer]) -> Work:
    peer = make_expert("peer_a", personas.panel_a)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    open_a = Assignment.objects.get(expert=personas.expert_a, answer=answer)
    done = Assignment.objects.get(expert=peer, answer=answer)
    _submit(done)
    # Joins after the build: no work on the answer yet.
    free = make_expert("free_a", personas.panel_a)
    return Work(answer=answer, open_a=open_a, done=done, peer=peer, free=free)


def _apply(action: str, rows: list[Assignment], user: Any, **extra: str) -> bulk.BulkResult:
    data = bulk.BulkInput(
        action=action,
        ids=[a.pk for a in rows],
        expert_id=int(extra["expert"]) if "expert" in extra else None,
        comment=extra.get("comment", ""),
    )
    return bulk.bulk_apply(data=data, assignments=rows, user=user)


def _slots(assignment: Assignment) -> set[tuple[int, int]]:
    return set(Estimate.objects.filter(assignment=assignment).values_list("triple_id", "slot"))


# --- reassign -------------------------------------------------------------------------------


def test_reassign_moves_open_work_to_the_chosen_expert_in_the_same_slots(
    personas: Personas, work: Work
) -> None:
    slots = _slots(work.open_a)
    result = _apply(bulk.REASSIGN, [work.open_a], personas.supervisor_a, expert=str(work.free.pk))

    assert (result.done, result.refused, result.target) == (1, [], work.free.pseudonym)
    work.open_a.refresh_from_db()
    assert work.open_a.status == AssignmentStatus.RELEASED
    assert work.open_a.drafts_backup["_reason"] == "reassigned"
    moved = Assignment.objects.get(expert=work.free, answer=work.answer)
    assert moved.status == AssignmentStatus.ASSIGNED and moved.panel == personas.panel_a
    assert _slots(moved) == slots
    # The overlap's copy of the expert stays the assignment's.
    assert set(moved.estimates.values_list("expert_id", flat=True)) == {work.free.pk}
    assert next_assignment_id(work.free.user_id) == moved.pk
    assert SupervisorAction.objects.filter(action="reassign", expert=personas.expert_a).exists()


def test_reassign_refuses_per_row_submitted_work_and_an_expert_who_holds_the_answer(
    personas: Personas, work: Work
) -> None:
    result = _apply(
        bulk.REASSIGN, [work.open_a, work.done], personas.supervisor_a, expert=str(work.peer.pk)
    )

    assert result.done == 0
    reasons = {r.assignment_id: r.reason for r in result.refused}
    assert reasons[work.open_a.pk] == f"{work.peer.pseudonym} already has work on this answer."
    assert reasons[work.done.pk] == "already submitted: reopen it instead."
    work.open_a.refresh_from_db()
    assert work.open_a.status != AssignmentStatus.RELEASED


def test_reassign_refuses_an_expert_outside_the_panel_or_paused(
    personas: Personas, work: Work
) -> None:
    with pytest.raises(bulk.BulkInputError) as outside:
        _apply(
            bulk.REASSIGN, [work.open_a], personas.supervisor_a, expert=str(personas.expert_b.pk)
        )
    assert outside.value.field == "expert"
    Membership.objects.filter(expert=work.free).update(is_paused=True)
    with pytest.raises(bulk.BulkInputError):
        _apply(bulk.REASSIGN, [work.open_a], personas.supervisor_a, expert=str(work.free.pk))
    assert not Assignment.objects.filter(expert__in=[personas.expert_b, work.free]).exists()


# --- reopen ---------------------------------------------------------------------------------


def test_reopen_sends_submitted_work_back_keeping_its_values_and_history(
    personas: Personas, work: Work
) -> None:
    before = {e.pk: (e.score, e.rationale) for e in work.done.estimates.all()}
    result = _apply(bulk.REOPEN, [work.done, work.open_a], personas.supervisor_a, comment=COMMENT)

    assert result.done == 1
    assert [r.assignment_id for r in result.refused] == [work.open_a.pk]
    work.done.refresh_from_db()
    assert work.done.status == AssignmentStatus.IN_PROGRESS
    assert next_assignment_id(work.peer.user_id) == work.done.pk
    estimates = list(work.done.estimates.all())
    # What he wrote stays on his page; every estimate carries the comment.
    assert {e.pk: (e.score, e.rationale) for e in estimates} == before
    assert {e.review_status for e in estimates} == {ReviewStatus.RETURNED}
    assert {e.review_comment for e in estimates} == {COMMENT}
    # The resubmission keeps the previous values as revisions.
    _submit(work.done, rationale=RATIONALE + " Перепроверено: факты сверены с источником.")
    assert EstimateRevision.objects.filter(estimate__assignment=work.done).exists()


# --- send to review -------------------------------------------------------------------------


def test_send_to_review_puts_submitted_estimates_into_the_sent_queue_until_reviewed(
    personas: Personas, work: Work
) -> None:
    result = _apply(bulk.REVIEW, [work.done, work.open_a], personas.supervisor_a)

    assert result.done == 1
    assert result.refused == [bulk.Refusal(work.open_a.pk, "nothing submitted to review.")]
    rubric = Estimate.objects.filter(
        assignment=work.done,
        status=EstimateStatus.SUBMITTED,
        triple__kind="pointwise",
        triple__panel=personas.panel_a,
    )
    assert ReviewRequest.objects.count() == rubric.count() > 0
    page = queues.queue_page(personas.panel_a, queues.SENT, viewer=personas.supervisor_a)
    assert {i.estimate_id for i in page.items} == set(rubric.values_list("pk", flat=True))

    again = _apply(bulk.REVIEW, [work.done], personas.supervisor_a)
    assert again.refused == [bulk.Refusal(work.done.pk, "already in the review queue.")]

    first = rubric.order_by("pk").first()
    assert first is not None
    review.estimate_accept(estimate=first, user=personas.supervisor_a)
    page = queues.queue_page(personas.panel_a, queues.SENT, viewer=personas.supervisor_a)
    assert first.pk not in {i.estimate_id for i in page.items}
    # Sent again after its review: back in the queue, one request per estimate.
    assert _apply(bulk.REVIEW, [work.done], personas.supervisor_a).done == 1
    page = queues.queue_page(personas.panel_a, queues.SENT, viewer=personas.supervisor_a)
    assert first.pk in {i.estimate_id for i in page.items}
    assert ReviewRequest.objects.count() == rubric.count()


# --- the view -------------------------------------------------------------------------------


def _post(client: Client, **data: Any) -> Any:
    return client.post(reverse("console_bulk"), {"back": "kind=assignments", **data})


def test_a_forged_id_of_another_panel_changes_nothing(
    personas: Personas, work: Work, make_answer: Callable[..., Answer]
) -> None:
    other = make_answer(task="Original Text Generation / Literary text / Poetry")
    assignments_build(answer_ids=[other.pk])
    theirs = Assignment.objects.filter(panel=personas.panel_b).first()
    assert theirs is not None
    client = _login(personas.supervisor_a)

    response = _post(client, action="review", ids=[work.done.pk, theirs.pk])
    assert response.status_code == HTTPStatus.NOT_FOUND
    response = _post(client, action="review", ids=[work.done.pk, 999_999])
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert not ReviewRequest.objects.exists()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"action": "review"}, "Selection"),
        ({"action": "review", "ids": ["1x"]}, "Selection"),
        ({"action": "delete", "ids": ["1"]}, "Action"),
        ({"action": "reopen", "ids": ["1"], "comment": " "}, "Comment for the expert"),
        ({"action": "reassign", "ids": ["1"]}, "To expert"),
        ({"action": "reassign", "ids": ["1"], "expert": "abc"}, "To expert"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    personas: Personas, data: dict[str, Any], field: str
) -> None:
    response = _post(_login(personas.supervisor_a), **data)

    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert f"{field}:" in response.content.decode()


def test_an_expert_outside_the_panel_is_a_400_naming_the_field(
    personas: Personas, work: Work
) -> None:
    response = _post(
        _login(personas.supervisor_a),
        action="reassign",
        ids=[work.open_a.pk],
        expert=personas.expert_b.pk,
    )

    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert 'id="bulk-error"' in response.content.decode()
    assert "To expert: not an active, qualified expert of panel" in response.content.decode()
    assert not Assignment.objects.filter(expert=personas.expert_b).exists()


def test_the_result_says_how_many_moved_and_why_the_others_did_not_in_russian(
    personas: Personas, work: Work
) -> None:
    client = _login(personas.supervisor_a)
    client.cookies["django_language"] = "ru"
    with translation.override("ru"):
        response = _post(
            client, action="reassign", ids=[work.open_a.pk, work.done.pk], expert=work.free.pk
        )
    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"] == reverse("console_browser") + "?kind=assignments"
    page = client.get(response["Location"]).content.decode()
    assert f"1 назначение передано эксперту {work.free.pseudonym}." in page
    assert "1 строка оставлена как была:" in page
    assert f"Назначение №{work.done.pk}: уже сдано: вместо этого откройте его заново." in page


def test_the_browser_lists_work_with_a_checkbox_per_row(personas: Personas, work: Work) -> None:
    html = (
        _login(personas.supervisor_a)
        .get(reverse("console_browser"), {"kind": "assignments"})
        .content.decode()
    )

    for a in (work.open_a, work.done):
        assert f'name="ids" value="{a.pk}"' in html
    assert 'id="bulk-all"' in html and 'value="reassign"' in html
    # Only the panel's active experts may take work.
    assert work.free.pseudonym in html and personas.expert_b.pseudonym not in html


def test_an_expert_may_not_act(personas: Personas, work: Work) -> None:
    response = _post(_login(personas.expert_a.user), action="review", ids=[work.done.pk])
    assert response.status_code == HTTPStatus.FORBIDDEN
