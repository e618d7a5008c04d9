"""The thread pages and fragments, and the threads on the work pages: real requests."""

from __future__ import annotations

from http import HTTPStatus

import pytest
from django.test import Client
from django.urls import reverse

from discussion import services
from discussion.models import Comment, Thread
from material.models import Answer, AnswerPair, Instruction, LanguageModel
from tests.conftest import make_expert
from tests.discussion.conftest import Scene
from work.comparisons import comparisons_build
from work.models import Assignment, AssignmentStatus

pytestmark = pytest.mark.django_db


def client_of(user: object) -> Client:
    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    return client


def url(item: object) -> str:
    name = "discussion_markup" if item.__class__.__name__ == "Markup" else "discussion_assignment"
    return reverse(name, args=[item.pk])  # type: ignore[attr-defined]


def test_the_expert_posts_and_the_supervisor_reads_and_replies(scene: Scene) -> None:
    expert, sup = client_of(scene.p.expert_a.user), client_of(scene.p.supervisor_a)
    response = expert.post(url(scene.assignment), {"body": "Почему критерий 5?"})
    assert response.status_code == HTTPStatus.FOUND
    page = sup.get(url(scene.assignment))
    assert page.status_code == HTTPStatus.OK
    assert "Почему критерий 5?" in page.content.decode()
    assert scene.p.expert_a.pseudonym in page.content.decode()
    fragment = sup.post(
        url(scene.assignment), {"body": "Смотрите руководство."}, HTTP_HX_REQUEST="true"
    )
    assert fragment.status_code == HTTPStatus.OK
    html = fragment.content.decode()
    assert "<html" not in html and "Смотрите руководство." in html and "data-thread" in html
    assert Comment.objects.count() == 2


@pytest.mark.parametrize("body", ["", "   ", "я" * (services.BODY_MAX + 1)])
def test_a_bad_body_is_a_400_naming_the_field_and_keeps_the_form(scene: Scene, body: str) -> None:
    expert = client_of(scene.p.expert_a.user)
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        response = expert.post(url(scene.assignment), {"body": body}, **headers)  # type: ignore[arg-type]
        assert response.status_code == HTTPStatus.BAD_REQUEST
        html = response.content.decode()
        assert "body:" in html and "data-comment-form" in html
    assert not Comment.objects.exists()


def test_a_double_submit_is_stored_once(scene: Scene) -> None:
    expert = client_of(scene.p.expert_a.user)
    for _ in range(2):
        expert.post(url(scene.markup), {"body": "Одно и то же"}, HTTP_HX_REQUEST="true")
    assert Comment.objects.count() == 1


def test_a_forged_or_foreign_item_is_a_404_and_no_role_is_a_403(scene: Scene) -> None:
    expert = client_of(scene.p.expert_a.user)
    assert expert.get(reverse("discussion_assignment", args=[10**9])).status_code == 404
    assert expert.get(reverse("discussion_markup", args=[10**9])).status_code == 404
    assert expert.post(url(scene.b_assignment), {"body": "x"}).status_code == 404
    assert expert.get(url(scene.peer_assignment)).status_code == 404
    assert client_of(scene.p.supervisor_b).get(url(scene.assignment)).status_code == 404
    assert client_of(scene.nobody).get(url(scene.assignment)).status_code == 403
    assert client_of(scene.nobody).get(reverse("discussion_threads")).status_code == 403
    assert not Comment.objects.exists()


def test_another_expert_never_sees_the_thread_nor_its_count(scene: Scene) -> None:
    services.comment_post(
        item=scene.assignment, user=scene.p.expert_a.user, body="Секретный вопрос"
    )
    services.comment_post(item=scene.assignment, user=scene.p.supervisor_a, body="Секретный ответ")
    peer = client_of(scene.peer_assignment.expert.user)
    assert peer.get(url(scene.assignment)).status_code == 404
    for page in (
        reverse("discussion_threads"),
        reverse("assignment", args=[scene.peer_assignment.pk]),
    ):
        html = peer.get(page).content.decode()
        assert "Секретн" not in html
        assert (
            'id="nav-comments">Комментарии <span' not in html
            and "badge bad" not in html.split("</nav>")[0]
        )
    owner = client_of(scene.p.expert_a.user).get(reverse("queue")).content.decode()
    assert 'title="Threads with unread replies">1</span>' in owner


def test_resolving_is_for_the_panels_supervisors(scene: Scene) -> None:
    comment = services.comment_post(
        item=scene.assignment, user=scene.p.expert_a.user, body="Вопрос"
    )
    resolve = reverse("discussion_resolve", args=[comment.thread_id])
    assert client_of(scene.p.expert_a.user).post(resolve, {"resolved": "1"}).status_code == 403
    assert client_of(scene.p.supervisor_b).post(resolve, {"resolved": "1"}).status_code == 404
    sup = client_of(scene.p.supervisor_a)
    assert sup.post(resolve, {"resolved": "yes"}).status_code == 400
    assert (
        sup.post(reverse("discussion_resolve", args=[10**9]), {"resolved": "1"}).status_code == 404
    )
    assert sup.post(resolve, {"resolved": "1"}).status_code == HTTPStatus.FOUND
    assert Thread.objects.get().resolved
    fragment = sup.post(resolve, {"resolved": "0"}, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200 and "data-resolve" in fragment.content.decode()
    assert not Thread.objects.get().resolved


def test_the_work_pages_hold_their_thread(scene: Scene) -> None:
    services.comment_post(
        item=scene.assignment, user=scene.p.expert_a.user, body="На странице оценки"
    )
    services.comment_post(
        item=scene.markup, user=scene.p.expert_a.user, body="На странице разметки"
    )
    expert = client_of(scene.p.expert_a.user)
    rubric = expert.get(reverse("assignment", args=[scene.assignment.pk])).content.decode()
    assert "На странице оценки" in rubric and "data-comment-box" in rubric
    assert "discussion/comments.js" in rubric and "<kbd>C</kbd>" in rubric
    markup = expert.get(reverse("markup_work_page", args=[scene.markup.pk])).content.decode()
    assert "На странице разметки" in markup and "<kbd>C</kbd>" in markup
    # Another expert's page of the same answer shows none of it.
    peer = client_of(scene.peer_assignment.expert.user)
    page = peer.get(reverse("assignment", args=[scene.peer_assignment.pk])).content.decode()
    assert "На странице оценки" not in page


def test_the_review_page_shows_each_experts_thread_under_his_code(scene: Scene) -> None:
    services.comment_post(item=scene.assignment, user=scene.p.expert_a.user, body="Вопрос к панели")
    review = reverse("console_answer_review", args=[scene.p.panel_a.pk, scene.assignment.answer_id])
    html = client_of(scene.p.supervisor_a).get(review).content.decode()
    assert "Вопрос к панели" in html
    assert f'id="thread-assignment-{scene.assignment.pk}"' in html
    assert f'id="thread-assignment-{scene.peer_assignment.pk}"' in html
    assert scene.p.expert_a.user.username not in html and scene.p.expert_a.pseudonym not in html


def test_the_review_page_hides_the_threads_from_a_supervisor_who_scores_the_answer(
    scene: Scene,
) -> None:
    services.comment_post(item=scene.assignment, user=scene.p.expert_a.user, body="Вопрос к панели")
    peer = scene.peer_assignment.expert.user
    scene.p.panel_a.supervisors.add(peer)
    review = reverse("console_answer_review", args=[scene.p.panel_a.pk, scene.assignment.answer_id])
    html = client_of(peer).get(review).content.decode()
    assert "Вопрос к панели" not in html and "data-comment-box" not in html


def test_the_list_shows_the_expert_his_unread_and_the_supervisor_his_panels(scene: Scene) -> None:
    services.comment_post(item=scene.assignment, user=scene.p.expert_a.user, body="Вопрос")
    services.comment_post(item=scene.assignment, user=scene.p.supervisor_a, body="Ответ")
    services.comment_post(item=scene.b_assignment, user=scene.p.expert_b.user, body="Вопрос Б")
    mine = client_of(scene.p.expert_a.user).get(reverse("discussion_threads")).content.decode()
    assert "data-unread" in mine and url(scene.assignment) in mine
    assert url(scene.b_assignment) not in mine
    sup_b = client_of(scene.p.supervisor_b).get(reverse("discussion_threads")).content.decode()
    assert url(scene.b_assignment) in sup_b and url(scene.assignment) not in sup_b
    assert f'data-panel="{scene.p.panel_b.number}"' in sup_b
    assert f'data-panel="{scene.p.panel_a.number}"' not in sup_b
    admin = client_of(scene.p.admin).get(reverse("discussion_threads")).content.decode()
    assert url(scene.b_assignment) in admin and url(scene.assignment) in admin
    # Reading the thread clears the expert's unread mark.
    client_of(scene.p.expert_a.user).get(url(scene.assignment))
    mine = client_of(scene.p.expert_a.user).get(reverse("discussion_threads")).content.decode()
    assert "data-unread" not in mine


def test_no_automatic_field_names_the_model(scene: Scene) -> None:
    """The thread pages show the item by kind and number, never the answer's model."""
    services.comment_post(item=scene.assignment, user=scene.p.expert_a.user, body="Вопрос")
    model = scene.assignment.answer.model.name
    for user in (scene.p.expert_a.user, scene.p.supervisor_a, scene.p.admin):
        for page in (url(scene.assignment), reverse("discussion_threads")):
            assert model not in client_of(user).get(page).content.decode()


def test_a_paused_or_released_assignment_keeps_its_thread_readable(scene: Scene) -> None:
    services.comment_post(item=scene.assignment, user=scene.p.expert_a.user, body="Вопрос")
    Assignment.objects.filter(pk=scene.assignment.pk).update(status=AssignmentStatus.RELEASED)
    assert client_of(scene.p.expert_a.user).get(url(scene.assignment)).status_code == 200
    other = make_expert("other", scene.p.panel_a)
    assert client_of(other.user).get(url(scene.assignment)).status_code == 404


def test_the_side_by_side_page_holds_the_pairs_thread(scene: Scene) -> None:
    """A pair's thread is on its page for the expert, and on the thread page for his
    supervisors, by kind and number: neither model's name anywhere."""
    instruction = Instruction.objects.create(text="Сравните два ответа.")
    answers = [
        Answer.objects.create(
            instruction=instruction,
            model=LanguageModel.objects.get_or_create(name=name, version="1")[0],
            text=f"Ответ {name}.",
            text_hash=f"pair-disc-{name}",
        )
        for name in ("Модель-Альфа", "Модель-Бета")
    ]
    pair = AnswerPair.objects.create(
        instruction=instruction, answer_a=answers[0], answer_b=answers[1]
    )
    comparisons_build(panel_id=scene.p.panel_a.pk, route=True, pair_ids=[pair.pk], seed=1)
    mine = Assignment.objects.get(pair=pair, expert=scene.p.expert_a)
    services.comment_post(item=mine, user=scene.p.expert_a.user, body="Ответы одинаковы?")
    page = client_of(scene.p.expert_a.user).get(reverse("assignment", args=[mine.pk]))
    html = page.content.decode()
    assert page.status_code == 200 and "Ответы одинаковы?" in html and "data-comment-box" in html
    thread = client_of(scene.p.supervisor_a).get(url(mine)).content.decode()
    assert "Ответы одинаковы?" in thread and "Side-by-side comparison" in thread
    assert "Модель-Альфа" not in thread and "Модель-Бета" not in thread
    assert client_of(scene.p.expert_b.user).get(url(mine)).status_code == 404


def test_the_console_counts_open_threads_per_panel(scene: Scene) -> None:
    services.comment_post(item=scene.assignment, user=scene.p.expert_a.user, body="Вопрос")
    sup_a = client_of(scene.p.supervisor_a).get(reverse("console")).content.decode()
    assert f'data-panel="{scene.p.panel_a.number}"' in sup_a
    sup_b = client_of(scene.p.supervisor_b).get(reverse("console")).content.decode()
    assert "data-panel=" not in sup_b
