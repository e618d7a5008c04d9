"""Who reads and writes which thread: the item's expert, his panel's supervisors (not blind on
it), admins; nobody else, whatever else he is."""

from __future__ import annotations

import pytest

from discussion import selectors, services
from discussion.models import Thread
from panels.access import allowed
from tests.conftest import make_expert
from tests.discussion.conftest import Scene
from work.models import AssignmentStatus

pytestmark = pytest.mark.django_db


def test_the_items_expert_his_supervisors_and_admins_comment_nobody_else(scene: Scene) -> None:
    p = scene.p
    for item in (scene.assignment, scene.markup):
        assert allowed(p.expert_a.user, "discussion.comment", item)
        assert allowed(p.supervisor_a, "discussion.comment", item)
        assert allowed(p.admin, "discussion.comment", item)
        assert not allowed(p.expert_b.user, "discussion.comment", item)
        assert not allowed(p.supervisor_b, "discussion.comment", item)
        assert not allowed(scene.nobody, "discussion.comment", item)
        # A peer on the same answer and panel is another expert: not his item.
        assert not allowed(scene.peer_assignment.expert.user, "discussion.comment", item)


def test_only_supervisors_and_admins_resolve(scene: Scene) -> None:
    p = scene.p
    assert allowed(p.supervisor_a, "discussion.resolve", scene.assignment)
    assert allowed(p.admin, "discussion.resolve", scene.assignment)
    assert not allowed(p.expert_a.user, "discussion.resolve", scene.assignment)
    assert not allowed(p.expert_a.user, "discussion.resolve_threads")
    assert not allowed(p.supervisor_b, "discussion.resolve", scene.assignment)


def test_a_supervisor_with_open_work_on_the_answer_sees_no_thread_on_it(scene: Scene) -> None:
    """He scores the answer blind: another expert's questions on it are hidden from him, as
    its scores are on the review page, until his own work is submitted."""
    services.comment_post(item=scene.assignment, user=scene.p.expert_a.user, body="Вопрос")
    peer = scene.peer_assignment.expert.user
    scene.p.panel_a.supervisors.add(peer)
    assert scene.peer_assignment.status in (AssignmentStatus.ASSIGNED, AssignmentStatus.IN_PROGRESS)
    assert not allowed(peer, "discussion.comment", scene.assignment)
    assert not selectors.visible_threads(peer).filter(assignment=scene.assignment).exists()
    scene.peer_assignment.status = AssignmentStatus.SUBMITTED
    scene.peer_assignment.save(update_fields=["status"])
    assert allowed(peer, "discussion.comment", scene.assignment)
    assert selectors.visible_threads(peer).filter(assignment=scene.assignment).exists()


def test_a_supervisor_who_is_an_expert_sees_no_markup_thread(scene: Scene) -> None:
    """As on the markup pages (markup.rules): markups are for supervisors who mark none."""
    services.comment_post(item=scene.markup, user=scene.p.expert_a.user, body="Вопрос")
    marker = make_expert("marker", scene.p.panel_b)
    scene.p.panel_a.supervisors.add(marker.user)
    assert not allowed(marker.user, "discussion.comment", scene.markup)
    assert not selectors.visible_threads(marker.user).filter(markup=scene.markup).exists()
    assert allowed(marker.user, "discussion.comment", scene.assignment)


def test_the_list_query_agrees_with_the_rule(scene: Scene) -> None:
    p = scene.p
    for item, user in (
        (scene.assignment, p.expert_a.user),
        (scene.markup, p.expert_a.user),
        (scene.b_assignment, p.expert_b.user),
        (scene.peer_assignment, scene.peer_assignment.expert.user),
    ):
        services.comment_post(item=item, user=user, body="Вопрос")
    users = [
        p.expert_a.user, p.expert_b.user, p.supervisor_a, p.supervisor_b, p.admin, scene.nobody,
        scene.peer_assignment.expert.user,
    ]  # fmt: skip
    for user in users:
        seen = set(selectors.visible_threads(user).values_list("pk", flat=True))
        for thread in Thread.objects.select_related(
            "assignment__expert", "assignment__panel", "markup__expert", "markup__panel"
        ):
            item = thread.assignment or thread.markup
            assert (thread.pk in seen) == allowed(user, "discussion.comment", item), (user, item)
