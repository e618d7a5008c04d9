"""The thread's writes: a comment posted (validated, once), resolved, read; unread replies."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from discussion import selectors, services
from discussion.models import AuthorRole, Comment, Thread
from tests.discussion.conftest import Scene

pytestmark = pytest.mark.django_db


def test_the_first_comment_opens_the_thread_with_the_items_expert_and_panel(scene: Scene) -> None:
    comment = services.comment_post(
        item=scene.assignment, user=scene.p.expert_a.user, body="  Критерий 3 неясен.  "
    )
    thread = comment.thread
    assert comment.body == "Критерий 3 неясен."
    assert comment.author_role == AuthorRole.EXPERT
    assert (thread.assignment_id, thread.expert_id, thread.panel_id) == (
        scene.assignment.pk,
        scene.p.expert_a.pk,
        scene.p.panel_a.pk,
    )
    assert thread.awaiting_reply


@pytest.mark.parametrize("body", ["", "   \n  "])
def test_it_refuses_an_empty_comment_naming_the_field(scene: Scene, body: str) -> None:
    with pytest.raises(services.CommentRefused) as exc:
        services.comment_post(item=scene.assignment, user=scene.p.expert_a.user, body=body)
    assert exc.value.field == "body"
    assert not Thread.objects.exists()


def test_it_refuses_a_comment_over_the_limit(scene: Scene) -> None:
    services.comment_post(
        item=scene.assignment, user=scene.p.expert_a.user, body="я" * services.BODY_MAX
    )
    with pytest.raises(services.CommentRefused) as exc:
        services.comment_post(
            item=scene.assignment, user=scene.p.expert_a.user, body="я" * (services.BODY_MAX + 1)
        )
    assert exc.value.field == "body"
    assert str(services.BODY_MAX) in str(exc.value)
    assert Comment.objects.count() == 1


def test_the_same_text_twice_within_seconds_is_stored_once(scene: Scene) -> None:
    user = scene.p.expert_a.user
    first = services.comment_post(item=scene.assignment, user=user, body="Вопрос")
    second = services.comment_post(item=scene.assignment, user=user, body="Вопрос")
    assert first.pk == second.pk
    assert Comment.objects.count() == 1
    # Later, the same words are a new comment (asked again on purpose).
    with time_machine.travel(timezone.now() + timedelta(minutes=5)):
        services.comment_post(item=scene.assignment, user=user, body="Вопрос")
    assert Comment.objects.count() == 2


def test_a_supervisors_reply_is_unread_until_the_expert_reads_the_thread(scene: Scene) -> None:
    expert, sup = scene.p.expert_a.user, scene.p.supervisor_a
    services.comment_post(item=scene.assignment, user=expert, body="Вопрос")
    assert not selectors.unread_for_expert(expert).exists()
    reply = services.comment_post(item=scene.assignment, user=sup, body="Ответ")
    assert reply.author_role == AuthorRole.SUPERVISOR
    thread = reply.thread
    thread.refresh_from_db()
    assert not thread.awaiting_reply
    assert list(selectors.unread_for_expert(expert)) == [thread]
    # Another user reading it changes nothing for the expert.
    services.thread_read(thread=thread, user=sup)
    assert selectors.unread_for_expert(expert).exists()
    services.thread_read(thread=thread, user=expert)
    assert not selectors.unread_for_expert(expert).exists()


def test_the_experts_comment_reopens_a_resolved_thread(scene: Scene) -> None:
    comment = services.comment_post(item=scene.markup, user=scene.p.expert_a.user, body="К2?")
    thread = services.thread_resolve(
        thread=comment.thread, user=scene.p.supervisor_a, resolved=True
    )
    assert thread.resolved and thread.resolved_by == scene.p.supervisor_a
    services.comment_post(item=scene.markup, user=scene.p.expert_a.user, body="Ещё вопрос")
    thread.refresh_from_db()
    assert not thread.resolved and thread.resolved_at is None and thread.awaiting_reply


def test_an_admins_comment_is_signed_as_the_administrator(scene: Scene) -> None:
    comment = services.comment_post(item=scene.assignment, user=scene.p.admin, body="Смотрю")
    assert comment.author_role == AuthorRole.ADMIN


def test_panel_counts_count_open_threads_and_those_waiting(scene: Scene) -> None:
    services.comment_post(item=scene.assignment, user=scene.p.expert_a.user, body="Вопрос 1")
    services.comment_post(item=scene.markup, user=scene.p.expert_a.user, body="Вопрос 2")
    services.comment_post(item=scene.markup, user=scene.p.supervisor_a, body="Ответ")
    services.comment_post(item=scene.b_assignment, user=scene.p.expert_b.user, body="Вопрос Б")
    counts = selectors.panel_counts(scene.p.supervisor_a)
    assert [(c.panel, c.open, c.awaiting) for c in counts] == [(scene.p.panel_a, 2, 1)]
    everyone = {c.panel.pk: (c.open, c.awaiting) for c in selectors.panel_counts(scene.p.admin)}
    assert everyone == {scene.p.panel_a.pk: (2, 1), scene.p.panel_b.pk: (1, 1)}
