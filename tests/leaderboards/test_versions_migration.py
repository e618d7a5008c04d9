"""Migrations leaderboards 0005 and submissions 0003: today's boards become version 1, frozen
at the items their latest snapshot used; their snapshots and submissions are version 1's."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("leaderboards", "0004_versions"), ("submissions", "0002_versions")]
AFTER = [("leaderboards", "0005_version_one"), ("submissions", "0003_version_one")]


@pytest.mark.django_db(transaction=True)
def test_todays_boards_become_version_one_at_their_latest_snapshots_items(
    make_answer: Any,
) -> None:
    from participants.models import Participant
    from tests.conftest import make_user

    before_snapshot = [make_answer() for _ in range(2)]
    after_snapshot = make_answer()
    participant = Participant.objects.create(user=make_user("pat"), approved=True)
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        board = old.get_model("leaderboards", "Leaderboard").objects.create(
            slug="old", title="Old", gate_rule="any", fixed_settings={"temperature": 0}
        )
        snapshot_model = old.get_model("leaderboards", "LeaderboardSnapshot")
        snapshot = snapshot_model.objects.create(leaderboard=board, data={})
        # The latest snapshot was computed before the third instruction came.
        old.get_model("material", "Instruction").objects.filter(
            pk=after_snapshot.instruction_id
        ).update(created_at=timezone.now() + timedelta(minutes=5))
        submission = old.get_model("submissions", "Submission").objects.create(
            participant_id=participant.pk,
            leaderboard=board,
            model_name="M",
            model_version="1",
            parameters="1B",
            gpus="-",
            logs="-",
            file_name="a.csv",
            content_sha256="0" * 64,
        )
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps
        (version,) = new.get_model("leaderboards", "BoardVersion").objects.filter(
            leaderboard_id=board.pk
        )
        assert version.number == 1 and version.gate_rule == "any"
        assert version.fixed_settings == {"temperature": 0}
        items = new.get_model("leaderboards", "VersionItem").objects.filter(version=version)
        assert sorted(items.values_list("instruction_id", flat=True)) == sorted(
            a.instruction_id for a in before_snapshot
        )
        item = items.get(instruction_id=before_snapshot[0].instruction_id)
        assert item.text == before_snapshot[0].instruction.text and item.criteria
        assert version.changelog["added"] == sorted(a.instruction_id for a in before_snapshot)
        snapshot_new = new.get_model("leaderboards", "LeaderboardSnapshot")
        assert snapshot_new.objects.get(pk=snapshot.pk).version_id == version.pk
        submission_new = new.get_model("submissions", "Submission")
        assert submission_new.objects.get(pk=submission.pk).version_id == version.pk
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
