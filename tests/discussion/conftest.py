from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from markup.models import Markup, MarkupRole, MarkupStatus, MarkupText
from tests.conftest import Personas, make_expert, make_user
from work.assignments import assignments_build
from work.models import Assignment


@dataclass
class Scene:
    """expert_a's assignment and markup in panel A; a peer of A on the same answer; expert_b's
    assignment in panel B; supervisors of each panel; an admin; a user of no role."""

    p: Personas
    assignment: Any
    peer_assignment: Any
    b_assignment: Any
    markup: Any
    nobody: Any


@pytest.fixture
def scene(personas: Personas, make_answer: Any) -> Scene:
    peer = make_expert("peer_a", personas.panel_a)
    answer_a = make_answer()
    answer_b = make_answer(task="Literary text / Poetry")
    assignments_build(answer_ids=[answer_a.pk, answer_b.pk])
    assignment = Assignment.objects.get(expert=personas.expert_a, answer=answer_a)
    peer_assignment = Assignment.objects.get(expert=peer, answer=answer_a)
    b_assignment = Assignment.objects.filter(expert=personas.expert_b).first()
    assert b_assignment is not None
    text = MarkupText.objects.create(external_id="disc-1", text="Мы одеваем шапки.", subject="rus")
    markup = Markup.objects.create(
        text=text,
        source="expert",
        expert=personas.expert_a,
        author="expert_a",
        panel=personas.panel_a,
        role=MarkupRole.INDEPENDENT,
        status=MarkupStatus.DRAFT,
    )
    return Scene(personas, assignment, peer_assignment, b_assignment, markup, make_user("nobody"))
