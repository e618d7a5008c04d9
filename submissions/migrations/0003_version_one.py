"""Today's submissions belong to version 1 of their board (leaderboards 0005 made it)."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def forwards(apps: Any, schema_editor: Any) -> None:
    Submission = apps.get_model("submissions", "Submission")
    BoardVersion = apps.get_model("leaderboards", "BoardVersion")
    for board, pk in BoardVersion.objects.filter(number=1).values_list("leaderboard_id", "pk"):
        Submission.objects.filter(leaderboard_id=board, version__isnull=True).update(version=pk)


def backwards(apps: Any, schema_editor: Any) -> None:
    apps.get_model("submissions", "Submission").objects.update(version=None)


class Migration(migrations.Migration):
    dependencies = [
        ("submissions", "0002_versions"),
        ("leaderboards", "0005_version_one"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
