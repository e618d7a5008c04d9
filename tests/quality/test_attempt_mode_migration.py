"""Migration quality 0005: each existing attempt takes the mode of its exam version."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from panels.models import Expert, Panel
from tests.conftest import make_user

BEFORE = [("quality", "0004_exam_mode")]
AFTER = [("quality", "0005_exam_attempt_mode")]


@pytest.mark.django_db(transaction=True)
def test_existing_attempts_take_their_exam_versions_mode() -> None:
    panel = Panel.objects.create(number=90, key="migration", name_en="M", name_ru="М")
    expert = Expert.objects.create(user=make_user("candidate"), profession="linguist")
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        exam, attempt = old.get_model("quality", "Exam"), old.get_model("quality", "ExamAttempt")
        lineage = uuid.uuid4()
        practice = exam.objects.create(
            panel_id=panel.pk, lineage=lineage, version=1, title="Т", mode="practice"
        )
        qualifying = exam.objects.create(
            panel_id=panel.pk, lineage=lineage, version=2, title="Т", mode="qualifying"
        )
        rounds = [
            attempt.objects.create(exam=e, expert_id=expert.pk, number=n, coefficient=0.93)
            for n, e in enumerate([practice, qualifying], start=1)
        ]
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps.get_model("quality", "ExamAttempt")
        modes = [new.objects.get(pk=r.pk).mode for r in rounds]
        assert modes == ["practice", "qualifying"]
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
