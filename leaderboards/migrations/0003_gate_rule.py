from __future__ import annotations

from django.db import migrations, models

# Boards made before the setting were computed with "any vote" (one violation vote scores the
# answer 0): they keep it, so that their published numbers do not change on the next
# recomputation; a new board takes POLLUX's rule (docs/leaderboards.md says why).
CHOICES = [
    ("pollux", "POLLUX: an answer with a violation vote leaves the means"),
    ("any", "any vote: an answer with a violation vote scores 0 on every criterion"),
    (
        "majority",
        "majority: an answer most of whose votes on a critical criterion are violations scores "
        "0 on every criterion",
    ),
]


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboards", "0002_submissions_settings"),
    ]

    operations = [
        migrations.AddField(
            model_name="leaderboard",
            name="gate_rule",
            field=models.CharField(
                choices=CHOICES, default="any", max_length=8, verbose_name="critical gate rule"
            ),
        ),
        migrations.AlterField(
            model_name="leaderboard",
            name="gate_rule",
            field=models.CharField(
                choices=CHOICES, default="pollux", max_length=8, verbose_name="critical gate rule"
            ),
        ),
    ]
