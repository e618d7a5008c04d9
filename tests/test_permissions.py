"""Role and object rules (django-rules): who may do what, on which object."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import Client
from django.urls import reverse

from material.models import Answer
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


def test_experts_view_only_their_own_assignments(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    a, b = _work(personas, make_answer)
    user_a, user_b = personas.expert_a.user, personas.expert_b.user
    assert user_a.has_perm("work.view_assignment", a)
    assert not user_a.has_perm("work.view_assignment", b)
    assert user_b.has_perm("work.view_assignment", b)
    assert not user_b.has_perm("work.view_assignment", a)
    assert not AnonymousUser().has_perm("work.view_assignment", a)


def test_supervisors_act_only_on_their_panels(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    a, b = _work(personas, make_answer)
    sup_a, sup_b = personas.supervisor_a, personas.supervisor_b
    assert sup_a.has_perm("work.view_assignment", a)
    assert not sup_a.has_perm("work.view_assignment", b)
    assert sup_a.has_perm("work.reassign_assignment", a)
    assert not sup_a.has_perm("work.reassign_assignment", b)
    assert sup_a.has_perm("panels.manage_panel", personas.panel_a)
    assert not sup_a.has_perm("panels.manage_panel", personas.panel_b)
    assert sup_a.has_perm("panels.manage_expert", personas.expert_a)
    assert not sup_a.has_perm("panels.manage_expert", personas.expert_b)
    assert sup_b.has_perm("panels.manage_panel", personas.panel_b)
    assert list(panels_for_user(sup_a)) == [personas.panel_a]


def test_admins_may_do_everything_experts_and_supervisors_may_not_import(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    a, b = _work(personas, make_answer)
    admin = personas.admin
    for obj in (a, b):
        assert admin.has_perm("work.view_assignment", obj)
        assert admin.has_perm("work.reassign_assignment", obj)
    assert admin.has_perm("material.import_material")
    assert admin.has_perm("dataset.export_dataset")
    for user in (personas.expert_a.user, personas.supervisor_a):
        assert not user.has_perm("material.import_material")
        assert not user.has_perm("dataset.export_dataset")
    assert personas.expert_a.user.has_perm("work.view_queue")
    assert not personas.supervisor_a.has_perm("work.view_queue")
    assert personas.supervisor_a.has_perm("panels.view_console")
    assert not personas.expert_a.user.has_perm("panels.view_console")


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
