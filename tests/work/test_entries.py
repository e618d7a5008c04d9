"""One entry per answer (issue #18): an expert who scores an answer for two panels gets one queue
row and one page; each criterion is still stored on its own panel's assignment."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from material.models import Answer
from panels.models import Membership, Panel
from tests.conftest import criterion_of, make_expert, rubric_of
from tests.work.test_scoring import _two_panel_work
from work.models import Assignment, AssignmentStatus, Estimate, Flag

pytestmark = pytest.mark.django_db

GOOD = "Ответ полностью соответствует критерию, ошибок нет."


def _two_panels(make_answer: Callable[..., Answer]) -> tuple[Assignment, Assignment]:
    """(the assignment with the critical gates, the other panel's), both of one expert."""
    return _two_panel_work(make_answer)


def _post(*assignments: Assignment, bad: int | None = None, violation: bool = False) -> dict:
    data: dict[str, Any] = {"submission_key": "entry-1", "time_total": "60000"}
    for a in assignments:
        for e in a.estimates.select_related("triple__rubric", "triple__criterion"):
            if e.triple.group == "critical":
                key = criterion_of(e.triple).key
                score = 1 if violation and key == "narushenie_formata" else 0
            else:
                score = rubric_of(e.triple).max_value
            data[f"score_{e.triple_id}"] = str(score)
            data[f"rationale_{e.triple_id}"] = "" if e.triple_id == bad else GOOD
    return data


def _login(client: Client, a: Assignment) -> None:
    client.force_login(a.expert.user)


def test_the_queue_lists_an_answer_of_two_panels_once_and_names_both(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    gates, other = _two_panels(make_answer)
    _login(client, gates)
    html = client.get(reverse("queue")).content.decode()
    lead, sibling = sorted([gates, other], key=lambda a: a.pk)
    assert f'href="{reverse("assignment", args=[lead.pk])}"' in html
    assert f'href="{reverse("assignment", args=[sibling.pk])}"' not in html
    first, second = sorted([gates.panel, other.panel], key=lambda p: p.number)
    # Each panel as the queue names a single one: its number and its name.
    assert f"{first.number} · {first.name}; {second.number} · {second.name}" in html
    assert 'data-count="assigned">1<' in html


def test_one_page_shows_every_panels_criteria_and_starts_them_all(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    gates, other = _two_panels(make_answer)
    _login(client, gates)
    html = client.get(reverse("assignment", args=[gates.pk])).content.decode()
    for e in Estimate.objects.filter(assignment__in=[gates, other]):
        assert f'name="rationale_{e.triple_id}"' in html
    assert 'id="entry-panels"' in html
    for a in (gates, other):
        a.refresh_from_db()
        assert a.status == AssignmentStatus.IN_PROGRESS
    assert other.reserved_until == gates.reserved_until


def test_one_submission_stores_each_criterion_for_its_own_panel(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    gates, other = _two_panels(make_answer)
    _login(client, gates)
    done = client.post(reverse("assignment", args=[other.pk]), _post(gates, other))
    assert done.status_code == HTTPStatus.FOUND, done.content.decode()[:2000]
    for a in (gates, other):
        a.refresh_from_db()
        assert a.status == AssignmentStatus.SUBMITTED and not a.critical_stop
        assert not a.estimates.exclude(status="submitted").exists()
        assert a.submission_key == "entry-1"
    # The page's minute is split by the criteria each panel had.
    n_gates, n_other = gates.estimates.count(), other.estimates.count()
    assert gates.time_spent_ms == 60000 * n_gates // (n_gates + n_other)
    assert other.time_spent_ms == 60000 * n_other // (n_gates + n_other)
    # A double click changes nothing.
    again = client.post(reverse("assignment", args=[other.pk]), _post(gates, other))
    assert again.status_code == HTTPStatus.FOUND


def test_a_refused_criterion_of_one_panel_leaves_the_whole_answer_unwritten(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    gates, other = _two_panels(make_answer)
    bad = other.estimates.exclude(triple__group="critical").first()
    assert bad is not None
    _login(client, gates)
    page = client.post(
        reverse("assignment", args=[gates.pk]), _post(gates, other, bad=bad.triple_id)
    )
    assert page.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert f'id="err_{bad.triple_id}"><div>' in page.content.decode()
    assert not Estimate.objects.filter(assignment__in=[gates, other], status="submitted").exists()
    for a in (gates, other):
        a.refresh_from_db()
        assert a.status != AssignmentStatus.SUBMITTED


def test_a_critical_violation_on_the_page_stops_the_other_panel_too(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    gates, other = _two_panels(make_answer)
    _login(client, gates)
    # Posted from the other panel's row: the gates are still submitted first.
    done = client.post(reverse("assignment", args=[other.pk]), _post(gates, other, violation=True))
    assert done.status_code == HTTPStatus.FOUND
    for a in (gates, other):
        a.refresh_from_db()
        assert a.status == AssignmentStatus.SUBMITTED and a.critical_stop
    assert not other.estimates.exclude(status="skipped").exists()


def test_a_draft_of_the_other_panels_criterion_is_kept_on_its_assignment(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    gates, other = _two_panels(make_answer)
    target = other.estimates.exclude(triple__group="critical").first()
    assert target is not None
    _login(client, gates)
    saved = client.post(
        reverse("assignment_draft", args=[gates.pk]),
        {
            "triple": target.triple_id,
            f"score_{target.triple_id}": "1",
            f"rationale_{target.triple_id}": "Черновик",
        },
    )
    assert saved.status_code == HTTPStatus.OK, saved.content
    target.refresh_from_db()
    assert target.status == "draft" and target.rationale == "Черновик"


def test_skipping_the_answer_releases_every_panels_work_and_flags_each(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    gates, other = _two_panels(make_answer)
    _login(client, gates)
    client.get(reverse("assignment", args=[gates.pk]))
    done = client.post(
        reverse("assignment_flag", args=[gates.pk]),
        {"kind": "broken", "reason": "garbled", "comment": ""},
    )
    assert done.status_code == HTTPStatus.FOUND
    for a in (gates, other):
        a.refresh_from_db()
        assert a.status == AssignmentStatus.RELEASED
    assert set(Flag.objects.values_list("assignment_id", flat=True)) == {gates.pk, other.pk}


def test_work_of_a_paused_panel_stays_off_the_page(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    gates, other = _two_panels(make_answer)
    Membership.objects.filter(expert=other.expert, panel=other.panel).update(is_paused=True)
    _login(client, gates)
    html = client.get(reverse("assignment", args=[gates.pk])).content.decode()
    assert 'id="entry-panels"' not in html
    for e in other.estimates.all():
        assert f'name="rationale_{e.triple_id}"' not in html
    other.refresh_from_db()
    assert other.status == AssignmentStatus.ASSIGNED
    # Submitting the page scores the gates' panel only.
    done = client.post(reverse("assignment", args=[gates.pk]), _post(gates))
    assert done.status_code == HTTPStatus.FOUND
    other.refresh_from_db()
    assert other.status == AssignmentStatus.ASSIGNED


def test_another_experts_work_on_the_answer_never_joins_the_entry(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    gates, _other = _two_panels(make_answer)
    science = Panel.objects.get(key="science")
    stranger = make_expert("stranger", science)
    answer = gates.answer
    Assignment.objects.create(expert=stranger, answer=answer, panel=science)
    theirs = Assignment.objects.get(expert=stranger, answer=answer)
    _login(client, gates)
    # Their criteria are neither shown nor accepted on the expert's page.
    assert client.get(reverse("assignment", args=[theirs.pk])).status_code == HTTPStatus.NOT_FOUND
    html = client.get(reverse("assignment", args=[gates.pk])).content.decode()
    assert f"/assignments/{theirs.pk}/" not in html


def test_a_returned_estimate_reopens_only_its_own_assignment(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    gates, other = _two_panels(make_answer)
    _login(client, gates)
    assert (
        client.post(reverse("assignment", args=[gates.pk]), _post(gates, other)).status_code == 302
    )
    # Reopened alone (as a supervisor's return does): its page shows its own criteria only.
    Assignment.objects.filter(pk=other.pk).update(status=AssignmentStatus.IN_PROGRESS)
    html = client.get(reverse("assignment", args=[other.pk])).content.decode()
    assert 'id="entry-panels"' not in html
    for e in gates.estimates.all():
        assert f'name="rationale_{e.triple_id}"' not in html


def test_each_criterion_links_its_own_panels_guideline(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    gates, other = _two_panels(make_answer)
    _login(client, gates)
    html = client.get(reverse("assignment", args=[gates.pk])).content.decode()
    for a in (gates, other):
        url = reverse("guidelines_panel", args=[a.panel_id])
        for e in a.estimates.select_related("triple__criterion"):
            key = criterion_of(e.triple).key
            assert f'href="{url}?criterion={key}"' in html, (a.panel_id, key)


def test_a_client_posting_one_panels_criteria_submits_that_assignment_only(
    make_answer: Callable[..., Answer], client: Client
) -> None:
    gates, other = _two_panels(make_answer)
    _login(client, gates)
    done = client.post(reverse("assignment", args=[other.pk]), _post(other))
    assert done.status_code == HTTPStatus.FOUND, done.content.decode()[:2000]
    other.refresh_from_db()
    gates.refresh_from_db()
    assert other.status == AssignmentStatus.SUBMITTED
    assert gates.status != AssignmentStatus.SUBMITTED
    assert not gates.estimates.filter(status="submitted").exists()
