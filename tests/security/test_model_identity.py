"""Wherever the model is hidden, every field that can carry it is hidden too (material.identity).

The persona: an expert of panel A who supervises panel B, with open work in A on an answer
both panels score, whose external id embeds the model's name (as the demo's do:
"demo-<item>-<model>"). In B's data browser and pickers he sees no model column, so he must
see no external id of an answer either, and cannot find an answer by typing one (a probe
that would tell him which model wrote the answer he is scoring). The admin, who sees models,
sees and searches external ids as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from material.models import Answer, Instruction, LanguageModel
from panels.models import Expert, Panel
from taxonomy.models import FunctionalStyle, Task
from tests.conftest import PASSWORD, Personas, make_expert
from work.assignments import assignments_build
from work.models import Assignment, AssignmentStatus

pytestmark = pytest.mark.django_db

MODEL = "GigaChat-Max"
EXTERNAL_ID = f"demo-chloroplast-{MODEL}"
TEXT = "Хлоропласты улавливают свет и запасают энергию в АТФ."


@dataclass
class Scene:
    panel_a: Panel
    panel_b: Panel
    expert: Expert  # an expert of A who supervises B
    answer: Answer
    admin: User


@pytest.fixture
def scene(personas: Personas) -> Scene:
    panel_a, panel_b = personas.panel_a, personas.panel_b
    expert = make_expert("exp_a_sup_b", panel_a)
    panel_b.supervisors.add(expert.user)
    poetry = Task.objects.get(is_leaf=True, path__endswith="Literary text / Poetry")
    instruction = Instruction.objects.create(
        external_id="instr-chloroplast",
        text="Напишите стихотворение о хлоропластах.",
        task=poetry,
        style=FunctionalStyle.objects.get(key="scientific-text"),
        complexity="medium",
    )
    lm, _ = LanguageModel.objects.get_or_create(name=MODEL, version="1")
    answer = Answer.objects.create(
        external_id=EXTERNAL_ID, instruction=instruction, model=lm, text=TEXT, text_hash="chl"
    )
    assignments_build(answer_ids=[answer.pk])
    assert {t.panel_id for t in answer.triples.all()} >= {panel_a.pk, panel_b.pk}
    # His open work in A on this very answer.
    assert Assignment.objects.filter(
        answer=answer, expert=expert, panel=panel_a, status=AssignmentStatus.ASSIGNED
    ).exists()
    return Scene(panel_a, panel_b, expert, answer, personas.admin)


def _login(user: User) -> Client:
    client = Client(raise_request_exception=False)
    assert client.login(username=user.username, password=PASSWORD)
    return client


def _browser(client: Client, **params: str | int) -> str:
    response = client.get(reverse("console_browser"), params)
    assert response.status_code == 200, response.content
    return response.content.decode()


def _pick(client: Client, panel: Panel, what: str, q: str) -> str:
    response = client.get(reverse("console_pick", args=[panel.pk, what]), {"q": q})
    assert response.status_code == 200, response.content
    return response.content.decode()


def _answers(html: str) -> set[int]:
    return {int(n) for n in re.findall(r'data-answer="(\d+)"', html)}


def test_an_expert_who_supervises_sees_no_field_that_names_the_model(scene: Scene) -> None:
    client = _login(scene.expert.user)
    b = scene.panel_b.pk
    html = _browser(client, kind="answers", panel=b)
    assert scene.answer.pk in _answers(html)  # the answer is listed...
    assert MODEL not in html and EXTERNAL_ID not in html  # ...without anything naming its model
    by_text = _browser(client, kind="answers", panel=b, q="хлоропласты")
    assert scene.answer.pk in _answers(by_text) and MODEL not in by_text
    # Its triples are not listed to him at all while his work is open (work.selectors).
    assert MODEL not in _browser(client, kind="triples", panel=b)
    for kind in ("answers", "triples", "instructions"):
        # Typing an external id finds nothing: it would tell which model wrote the answer.
        found = _browser(client, kind=kind, q=EXTERNAL_ID)
        assert scene.answer.pk not in _answers(found) and "instr-chloroplast" not in found, kind
    for what in ("answers", "triples"):
        options = _pick(client, scene.panel_b, what, "хлоропласты")
        assert "<option" in options and MODEL not in options, what
        assert "<option" not in _pick(client, scene.panel_b, what, EXTERNAL_ID), what


def test_the_console_forms_resolve_no_external_id_for_him(scene: Scene) -> None:
    """The control page's "references of answer…" field: an external id typed there would
    redirect to the answer's page (its id) — the same probe as a search."""
    url = reverse("console_control", args=[scene.panel_b.pk])
    probe = _login(scene.expert.user).get(url, {"references": EXTERNAL_ID})
    assert probe.status_code == 200  # "No such answer.", no redirect to the answer
    admin = _login(scene.admin).get(url, {"references": EXTERNAL_ID})
    assert admin.status_code == 302
    assert admin["Location"] == reverse(
        "console_control_references", args=[scene.panel_b.pk, scene.answer.pk]
    )


def test_a_supervisor_who_may_not_see_models_sees_no_external_id_either(
    scene: Scene, personas: Personas
) -> None:
    client = _login(personas.supervisor_b)
    for kind in ("answers", "triples"):
        html = _browser(client, kind=kind, panel=scene.panel_b.pk)
        assert scene.answer.pk in _answers(html), kind
        assert MODEL not in html and EXTERNAL_ID not in html, kind
    assert "<option" not in _pick(client, scene.panel_b, "answers", EXTERNAL_ID)
    assert MODEL not in _pick(client, scene.panel_b, "triples", "хлоропласты")


def test_the_admin_who_sees_models_sees_and_searches_external_ids(scene: Scene) -> None:
    client = _login(scene.admin)
    html = _browser(client, kind="answers", panel=scene.panel_b.pk)
    assert EXTERNAL_ID in html and MODEL in html
    assert _answers(_browser(client, q=EXTERNAL_ID)) == {scene.answer.pk}
    assert EXTERNAL_ID in _pick(client, scene.panel_b, "answers", EXTERNAL_ID)
    assert EXTERNAL_ID in _pick(client, scene.panel_b, "triples", "хлоропласты")
