"""The data migrations of issue #11's access items move existing rows where they belong."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.models import Answer
from tests.conftest import Personas

BEFORE = [
    ("annotation", "0006_triple_redundant_indexes"),
    ("panels", "0005_control_references_action"),
]
AFTER = [("annotation", "0007_reference_panel"), ("panels", "0006_membership_pause")]


@pytest.mark.django_db(transaction=True)
def test_pauses_references_and_gold_reservations_are_migrated(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    from annotation.assignments import assignments_build

    gold, built, orphan = make_answer(), make_answer(), make_answer()
    assignments_build(answer_ids=[built.pk])
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        _migrate_and_check(executor, personas, gold, built, orphan)
    finally:
        # Later migrations (of any app) come back: the transactional tests that follow share
        # this schema.
        latest = MigrationExecutor(connection)
        latest.migrate(latest.loader.graph.leaf_nodes())


def _migrate_and_check(
    executor: MigrationExecutor, personas: Personas, gold: Answer, built: Answer, orphan: Answer
) -> None:
    science, literature = personas.panel_a, personas.panel_b
    old = executor.loader.project_state(BEFORE).apps
    Expert = old.get_model("panels", "Expert")
    Membership = old.get_model("panels", "Membership")
    ControlItem = old.get_model("panels", "ControlItem")
    ReservedAnswer = old.get_model("panels", "ReservedAnswer")
    Reference = old.get_model("annotation", "ReferenceEstimate")
    Triple = old.get_model("annotation", "Triple")
    expert = Expert.objects.get(pk=personas.expert_a.pk)
    Membership.objects.create(expert=expert, panel_id=literature.pk)
    Expert.objects.filter(pk=expert.pk).update(is_paused=True, paused_reason="старая пауза")
    for panel in (science, literature):
        ControlItem.objects.create(panel_id=panel.pk, answer_id=gold.pk)
    ReservedAnswer.objects.create(answer_id=gold.pk, purpose="control")
    triple = Triple.objects.filter(answer_id=built.pk).first()
    assert triple is not None
    criterion_id = triple.criterion_id
    for answer in (gold, built, orphan):
        Reference.objects.create(answer_id=answer.pk, criterion_id=criterion_id, score=1)

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    Membership = new.get_model("panels", "Membership")
    Reference = new.get_model("annotation", "ReferenceEstimate")
    ReservedAnswer = new.get_model("panels", "ReservedAnswer")
    # The old global pause holds in each of the expert's panels, with its note.
    assert set(
        Membership.objects.filter(expert_id=expert.pk).values_list("is_paused", "paused_reason")
    ) == {(True, "старая пауза")}
    # A gold answer's reference is copied to each panel with a control item on it ...
    assert set(Reference.objects.filter(answer_id=gold.pk).values_list("panel_id", flat=True)) == {
        science.pk,
        literature.pk,
    }
    # ... else it goes to its triple's panel; one no panel can reach is dropped.
    assert list(
        Reference.objects.filter(answer_id=built.pk).values_list("panel_id", flat=True)
    ) == [triple.panel_id]
    assert not Reference.objects.filter(answer_id=orphan.pk).exists()
    # The gold answer is real work again for the other panels.
    assert not ReservedAnswer.objects.filter(answer_id=gold.pk).exists()
