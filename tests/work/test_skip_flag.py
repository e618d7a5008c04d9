"""An expert skips an answer or flags it as broken; the panel's supervisors resolve the flags."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from material.models import Answer
from panels.models import Panel
from tests.conftest import PASSWORD, Personas, make_expert
from work.assignments import assignments_build
from work.models import Assignment, AssignmentStatus, Estimate, Flag, FlagKind

pytestmark = pytest.mark.django_db


def _client(username: str) -> Client:
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    return client


def _skip(client: Client, assignment: Assignment, **data: str) -> Any:
    body = {"kind": "skip", "reason": "wrong_task", "comment": "не та задача"} | data
    return client.post(reverse("assignment_flag", args=[assignment.pk]), body)


def test_a_skipped_answer_goes_to_another_expert_never_back_to_the_skipper(
    catalogue: None, make_answer: Callable[..., Answer]
) -> None:
    science = Panel.objects.get(key="science")
    alice = make_expert("alice", science)
    bob = make_expert("bob", science)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    mine = Assignment.objects.get(expert=alice, panel=science, answer=answer)
    assert Assignment.objects.filter(answer=answer, panel=science, expert=bob).exists()

    response = _skip(_client("alice"), mine)
    assert response.status_code == 302
    mine.refresh_from_db()
    assert mine.status == AssignmentStatus.RELEASED
    assert not Estimate.objects.filter(assignment=mine).exists()
    flag = Flag.objects.get(assignment=mine)
    assert (flag.kind, flag.reason, flag.expert_id) == (FlagKind.SKIP, "wrong_task", alice.pk)

    # Nobody else is free: an expired reservation would be revived for alice, a skip is not.
    assignments_build(answer_ids=[answer.pk])
    mine.refresh_from_db()
    assert mine.status == AssignmentStatus.RELEASED
    assert not Estimate.objects.filter(triple__answer=answer, expert=alice).exists()

    carol = make_expert("carol", science)
    report = assignments_build(answer_ids=[answer.pk])
    assert report["assignments_created"] >= 1
    theirs = Assignment.objects.get(expert=carol, panel=science, answer=answer)
    assert theirs.status == AssignmentStatus.ASSIGNED
    assert Estimate.objects.filter(assignment=theirs).exists()
    mine.refresh_from_db()
    assert mine.status == AssignmentStatus.RELEASED

    # The page of the skipped answer says so (not "your reservation expired").
    page = _client("alice").get(reverse("assignment", args=[mine.pk]))
    assert "skipped this answer" in page.content.decode() or "пропустили" in page.content.decode()


def test_a_flag_reaches_the_supervisor_of_its_panel_only_and_is_resolved(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    mine = Assignment.objects.get(expert=personas.expert_a, panel=personas.panel_a)
    response = _skip(
        _client("expert_a"), mine, kind="broken", reason="garbled", comment="обрыв текста"
    )
    assert response.status_code == 302
    mine.refresh_from_db()
    assert mine.status == AssignmentStatus.RELEASED
    flag = Flag.objects.get(assignment=mine, kind=FlagKind.BROKEN)

    queue_a = reverse("console_flags", args=[personas.panel_a.pk])
    sup_a = _client("sup_a")
    page = sup_a.get(queue_a)
    assert page.status_code == 200
    html = page.content.decode()
    assert f'data-flag="{flag.pk}"' in html and "обрыв текста" in html
    assert personas.expert_a.pseudonym in html

    # The other panel's supervisor: the flag is not in his queue, and A's queue does not exist.
    sup_b = _client("sup_b")
    other = sup_b.get(reverse("console_flags", args=[personas.panel_b.pk]))
    assert other.status_code == 200 and "обрыв текста" not in other.content.decode()
    assert sup_b.get(queue_a).status_code == 404
    resolve = reverse("console_flag_resolve", args=[personas.panel_a.pk, flag.pk])
    assert sup_b.post(resolve, {"resolution": "fixed"}).status_code == 404
    # Through his own panel's URL the flag of panel A does not exist either.
    foreign = reverse("console_flag_resolve", args=[personas.panel_b.pk, flag.pk])
    assert sup_b.post(foreign, {"resolution": "fixed"}).status_code == 404

    # The experts table counts it.
    table = sup_a.get(reverse("console_experts", args=[personas.panel_a.pk])).content.decode()
    assert "0 / 1" in table

    # A bad resolution names the field; nothing is written.
    bad = sup_a.post(resolve, {"resolution": "maybe"})
    assert bad.status_code == 400 and "resolution" in bad.content.decode()
    flag.refresh_from_db()
    assert flag.resolved_at is None

    done = sup_a.post(resolve, {"resolution": "fixed", "note": "текст заменён"})
    assert done.status_code == 302
    flag.refresh_from_db()
    assert flag.resolution == "fixed" and flag.resolution_note == "текст заменён"
    assert flag.resolved_by == personas.supervisor_a and flag.resolved_at is not None
    assert f'data-flag="{flag.pk}"' not in sup_a.get(queue_a).content.decode()
    resolved = sup_a.get(queue_a + "?state=resolved").content.decode()
    assert f'data-flag="{flag.pk}"' in resolved and "текст заменён" in resolved
    # Resolved once: a second resolution is refused.
    assert sup_a.post(resolve, {"resolution": "ignored"}).status_code == 400


def test_an_expert_cannot_skip_another_experts_assignment(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    answer = make_answer()
    other = make_expert("other", personas.panel_a)
    assignments_build(answer_ids=[answer.pk])
    theirs = Assignment.objects.get(expert=other, panel=personas.panel_a)
    assert _skip(_client("expert_a"), theirs).status_code == 404
    assert _skip(_client("expert_b"), theirs).status_code == 404
    # Supervisors and admins are no experts: 403.
    assert _skip(_client("sup_a"), theirs).status_code == 403
    theirs.refresh_from_db()
    assert theirs.status == AssignmentStatus.ASSIGNED
    assert not Flag.objects.exists()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"kind": "later"}, "kind"),
        ({"reason": "boring"}, "reason"),
        ({"reason": "other", "comment": "  "}, "comment"),
        ({"comment": "x" * 2001}, "comment"),
    ],
)
def test_bad_flag_input_is_a_400_naming_the_field_and_changes_nothing(
    personas: Personas, make_answer: Callable[..., Answer], data: dict[str, str], field: str
) -> None:
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    mine = Assignment.objects.get(expert=personas.expert_a, panel=personas.panel_a)
    response = _skip(_client("expert_a"), mine, **data)
    assert response.status_code == 400
    assert f"{field}:" in response.content.decode()
    mine.refresh_from_db()
    assert mine.status == AssignmentStatus.ASSIGNED
    assert not Flag.objects.exists()


def test_a_closed_assignment_cannot_be_skipped(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    mine = Assignment.objects.get(expert=personas.expert_a, panel=personas.panel_a)
    client = _client("expert_a")
    assert _skip(client, mine).status_code == 302
    # Skipped once: the second attempt finds it closed.
    assert _skip(client, mine).status_code == 409
    assert Flag.objects.count() == 1


def test_the_scoring_page_shows_the_deadline_and_progress(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    mine = Assignment.objects.get(expert=personas.expert_a, panel=personas.panel_a)
    client = _client("expert_a")
    html = client.get(reverse("assignment", args=[mine.pk])).content.decode()
    mine.refresh_from_db()
    assert mine.reserved_until is not None
    local = timezone.localtime(mine.reserved_until)
    assert f"{local:%H:%M, %d.%m}" in html and 'id="reserved-until"' in html
    total = mine.estimates.count()
    assert '<b id="progress-done">0</b>' in html and f'id="progress-total">{total}<' in html
    # A draft counts.
    first = mine.estimates.order_by("triple__position").first()
    assert first is not None
    first.score, first.status = 0, "draft"
    first.save()
    html = client.get(reverse("assignment", args=[mine.pk])).content.decode()
    assert '<b id="progress-done">1</b>' in html
    queue = client.get(reverse("queue")).content.decode()
    assert f"{local:%H:%M, %d.%m}" in queue
