"""Races of the scoring flow, through the web views: double submission, two tabs, a stale form
after the batch was locked, and an assignment reclaimed while its expert was still typing.

Each scenario counts what was submitted and what is stored, and asserts they are equal.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from material.models import Answer
from tests.conftest import Personas
from tests.faults.experts import form
from work.assignments import assignments_build, assignments_release_expired
from work.models import Assignment, AssignmentStatus, Estimate, EstimateRevision

GOOD = "Ответ соответствует критерию, замечаний нет."
OTHER = "Ответ хороший, но есть мелкие неточности."


def _setup(personas: Personas, make_answer: Callable[..., Answer]) -> tuple[Client, Assignment]:
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    client = Client()
    client.force_login(personas.expert_a.user)
    return client, Assignment.objects.get(expert=personas.expert_a, answer=answer)


def _stored(assignment: Assignment) -> dict[int, tuple[int | None, str]]:
    return {
        e.triple_id: (e.score, e.rationale)
        for e in Estimate.objects.filter(assignment=assignment, status="submitted")
    }


@pytest.mark.django_db(transaction=True)
def test_a_double_click_submits_once(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    """Two identical POSTs at the same moment (a double click): one submission, no revision."""
    _client, assignment = _setup(personas, make_answer)
    url = reverse("assignment", args=[assignment.pk])
    page = _client.get(url)
    data = form(page.content.decode())
    codes: list[int] = []

    def post() -> None:
        client = Client()
        client.force_login(personas.expert_a.user)
        codes.append(client.post(url, data).status_code)
        connection.close()  # each thread has its own connection: give it back

    threads = [threading.Thread(target=post) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert codes == [302, 302]
    n_scores = len([k for k in data if k.startswith("score_")])
    assert len(_stored(assignment)) == n_scores
    assert not EstimateRevision.objects.filter(estimate__assignment=assignment).exists()


@pytest.mark.django_db
def test_two_tabs_keep_the_last_submission_and_its_history(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    client, assignment = _setup(personas, make_answer)
    url = reverse("assignment", args=[assignment.pk])
    tab1 = form(client.get(url).content.decode())
    tab2 = form(client.get(url).content.decode())
    tab2 |= {k: OTHER for k in tab2 if k.startswith("rationale_")}
    assert client.post(url, tab1).status_code == 302
    assert client.post(url, tab2).status_code == 302
    stored = _stored(assignment)
    n = len([k for k in tab1 if k.startswith("score_")])
    assert len(stored) == n and {r for _s, r in stored.values()} == {OTHER}
    # The first tab's text is not lost: it is the previous revision of each estimate.
    revisions = EstimateRevision.objects.filter(estimate__assignment=assignment)
    assert revisions.count() == n and {r.rationale for r in revisions} == {GOOD}


@pytest.mark.django_db
def test_a_stale_form_after_the_batch_was_locked_is_refused_and_keeps_the_text(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    client, assignment = _setup(personas, make_answer)
    url = reverse("assignment", args=[assignment.pk])
    first = form(client.get(url).content.decode())
    assert client.post(url, first).status_code == 302
    stale = form(client.get(url).content.decode()) | {"submission_key": "stale"}
    stale |= {k: OTHER for k in stale if k.startswith("rationale_")}
    supervisor = Client()
    supervisor.force_login(personas.supervisor_a)
    locked = supervisor.post(reverse("console_lock", args=[personas.panel_a.pk]), {})
    assert locked.status_code == 302
    assignment.refresh_from_db()
    assert assignment.locked
    before = _stored(assignment)
    response = client.post(url, stale)
    assert response.status_code == 409
    text = response.content.decode()
    assert OTHER in text  # what they typed is shown back to them
    assert "locked" in text or "заблокир" in text.lower()
    assert _stored(assignment) == before


def _reclaim_while_typing(
    personas: Personas, make_answer: Callable[..., Answer]
) -> tuple[Client, Assignment, dict[str, str], str, str]:
    """The expert autosaves a draft, the reservation expires and the sweeper frees the slots."""
    client, assignment = _setup(personas, make_answer)
    url = reverse("assignment", args=[assignment.pk])
    data = form(client.get(url).content.decode())
    triple = next(k.split("_")[1] for k in data if k.startswith("score_"))
    typed = "Черновик эксперта, который ещё печатает."
    draft = client.post(
        reverse("assignment_draft", args=[assignment.pk]),
        {
            "triple": triple,
            f"score_{triple}": data[f"score_{triple}"],
            f"rationale_{triple}": typed,
        },
        headers={"HX-Request": "true"},
    )
    assert draft.status_code == 200
    Assignment.objects.filter(pk=assignment.pk).update(
        reserved_until=timezone.now() - timedelta(minutes=1)
    )
    assert assignments_release_expired() == 1
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.RELEASED
    return client, assignment, data, triple, typed


@pytest.mark.django_db
def test_a_reclaimed_assignment_keeps_the_typed_text_and_says_why(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    client, assignment, data, triple, typed = _reclaim_while_typing(personas, make_answer)
    assert assignment.drafts_backup[triple]["rationale"] == typed
    # The expert, still typing, submits: refused with the reason; nothing is stored as submitted.
    response = client.post(
        reverse("assignment", args=[assignment.pk]), data | {f"rationale_{triple}": typed}
    )
    assert response.status_code == 409
    text = response.content.decode()
    assert "expired" in text or "истек" in text.lower() or "истёк" in text.lower()
    assert not _stored(assignment)
    assignment.refresh_from_db()
    assert assignment.drafts_backup[triple]["rationale"] == typed


@pytest.mark.django_db
def test_a_reclaimed_assignment_shows_the_typed_text_on_the_page(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    client, assignment, data, triple, typed = _reclaim_while_typing(personas, make_answer)
    url = reverse("assignment", args=[assignment.pk])
    response = client.post(url, data | {f"rationale_{triple}": typed})
    assert typed in response.content.decode()
    assert typed in client.get(url).content.decode()
