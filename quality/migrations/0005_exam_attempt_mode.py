"""ExamAttempt.mode: the mode an attempt was taken in, filled from its exam version's mode."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models


def fill_from_exam(apps: Any, schema_editor: Any) -> None:
    ExamAttempt = apps.get_model("quality", "ExamAttempt")
    ExamAttempt.objects.filter(exam__mode="practice").update(mode="practice")


class Migration(migrations.Migration):
    dependencies = [
        ("quality", "0004_exam_mode"),
    ]

    operations = [
        migrations.AddField(
            model_name="examattempt",
            name="mode",
            field=models.CharField(
                choices=[("qualifying", "qualifying exam"), ("practice", "practice")],
                default="qualifying",
                max_length=12,
            ),
            preserve_default=False,
        ),
        migrations.RunPython(fill_from_exam, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="examattempt",
            constraint=models.CheckConstraint(
                condition=models.Q(("mode__in", ["qualifying", "practice"])),
                name="exam_attempt_mode_valid",
            ),
        ),
    ]
