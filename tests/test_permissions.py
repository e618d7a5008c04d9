"""Role and object rules (django-rules): who may do what, on which object."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.test import Client
from django.urls import reverse

from material.models import Answer
from panels.access import allowed, get_object_for, require
from panels.models import Panel
from panels.selectors import panels_for_user
from tests.conftest import Personas
from work.assignments import assignments_build
from work.models import Assignment

pytestmark = pytest.mark.django_db


def _work(personas: Personas, make_answer: Callable[..., Answer]) -> tuple[Assignment, Assignment]:
    science = make_answer("Original Text Generation / Scientific text / Academic text")
    literary = make_answer("Original Text Generation / Literary text / Poetry")
    assignments_build(answer_ids=[science.pk, literary.pk])
    a = Assignment.objects.get(expert=personas.expert_a)
    b = Assignment.objects.get(expert=personas.expert_b)
    assert a.panel == personas.panel_a and b.panel == personas.panel_b
    return a, b


def test_experts_score_only_their_own_assignments(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    a, b = _work(personas, make_answer)
    user_a, user_b = personas.expert_a.user, personas.expert_b.user
    assert allowed(user_a, "work.score_assignment", a)
    assert not allowed(user_a, "work.score_assignment", b)
    assert allowed(user_b, "work.score_assignment", b)
    assert not allowed(user_b, "work.score_assignment", a)
    assert not allowed(AnonymousUser(), "work.score_assignment", a)
    # Nobody else scores an expert's assignment, not even an admin (a superuser included).
    for user in (personas.supervisor_a, personas.admin):
        assert not allowed(user, "work.score_assignment", a)


def test_supervisors_act_only_on_their_panels(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    sup_a, sup_b = personas.supervisor_a, personas.supervisor_b
    assert allowed(sup_a, "panels.manage_panel", personas.panel_a)
    assert not allowed(sup_a, "panels.manage_panel", personas.panel_b)
    assert allowed(sup_b, "panels.manage_panel", personas.panel_b)
    assert list(panels_for_user(sup_a)) == [personas.panel_a]


def test_admins_may_do_everything_experts_and_supervisors_may_not_import(
    personas: Personas,
) -> None:
    admin = personas.admin
    for panel in (personas.panel_a, personas.panel_b):
        assert allowed(admin, "panels.manage_panel", panel)
    assert allowed(admin, "material.import_material")
    assert allowed(admin, "dataset.export_dataset")
    for user in (personas.expert_a.user, personas.supervisor_a):
        assert not allowed(user, "material.import_material")
        assert not allowed(user, "dataset.export_dataset")
    assert allowed(personas.expert_a.user, "work.view_queue")
    assert not allowed(personas.supervisor_a, "work.view_queue")
    assert allowed(personas.supervisor_a, "panels.view_console")
    assert not allowed(personas.expert_a.user, "panels.view_console")


def test_the_access_helper_answers_403_for_the_role_and_404_for_the_object(
    personas: Personas,
) -> None:
    sup_a, expert = personas.supervisor_a, personas.expert_a.user
    role = "panels.view_console"
    assert get_object_for(sup_a, "panels.manage_panel", Panel, role=role, pk=personas.panel_a.pk)
    # Another panel, and a panel that does not exist, look the same: 404.
    for pk in (personas.panel_b.pk, 0):
        with pytest.raises(Http404):
            get_object_for(sup_a, "panels.manage_panel", Panel, role=role, pk=pk)
    # Without the role, whatever the object: 403.
    for pk in (personas.panel_a.pk, 0):
        with pytest.raises(PermissionDenied):
            get_object_for(expert, "panels.manage_panel", Panel, role=role, pk=pk)
    require(sup_a, role)
    with pytest.raises(PermissionDenied):
        require(expert, role)


def test_roles_reach_their_pages(personas: Personas, client: Client) -> None:
    client.force_login(personas.expert_a.user)
    assert client.get(reverse("home")).url == reverse("queue")  # type: ignore[attr-defined]
    assert client.get(reverse("console")).status_code == HTTPStatus.FORBIDDEN
    assert client.get(reverse("import_material")).status_code == HTTPStatus.FORBIDDEN
    client.force_login(personas.supervisor_a)
    assert client.get(reverse("home")).url == reverse("console")  # type: ignore[attr-defined]
    assert client.get(reverse("console")).status_code == HTTPStatus.OK
    assert client.get(reverse("import_material")).status_code == HTTPStatus.FORBIDDEN
    client.force_login(personas.admin)
    assert client.get(reverse("import_material")).status_code == HTTPStatus.OK
    assert client.get("/admin/work/estimate/").status_code == HTTPStatus.OK


def test_a_participant_lands_on_his_submissions_and_a_user_without_role_on_the_boards(
    client: Client,
) -> None:
    from participants.models import Participant
    from tests.conftest import make_user

    approved = make_user("team_lead")
    Participant.objects.create(user=approved, organisation="Team", approved=True)
    client.force_login(approved)
    assert client.get(reverse("home")).url == reverse("submissions")  # type: ignore[attr-defined]
    # Revoked (or never approved), or no role at all: the public pages, not the admin's login.
    waiting = make_user("waiting")
    Participant.objects.create(user=waiting, organisation="Later", approved=False)
    for user in (waiting, make_user("nobody")):
        client.force_login(user)
        assert client.get(reverse("home")).url == reverse("leaderboards")  # type: ignore[attr-defined]
        assert client.get(reverse("leaderboards")).status_code == HTTPStatus.OK
