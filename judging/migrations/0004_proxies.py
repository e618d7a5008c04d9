"""Judge configurations, runs and batches are proxies of the run models (runs 0001 took their
tables over): in the migration state only; nothing changes in the database."""

from django.db import migrations

import runs.models


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0003_runs_tables"),
        ("runs", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="JudgeBatch"),
                migrations.DeleteModel(name="JudgeRun"),
                migrations.DeleteModel(name="JudgeConfig"),
                migrations.CreateModel(
                    name="JudgeConfig",
                    fields=[],
                    options={
                        "verbose_name": "judge configuration",
                        "verbose_name_plural": "judge configurations",
                        "ordering": ["name", "-version"],
                        "proxy": True,
                        "indexes": [],
                        "constraints": [],
                    },
                    bases=("runs.runconfig",),
                    managers=[("objects", runs.models.PurposeManager("judge", "purpose"))],
                ),
                migrations.CreateModel(
                    name="JudgeRun",
                    fields=[],
                    options={
                        "verbose_name": "judge run",
                        "verbose_name_plural": "judge runs",
                        "ordering": ["-created_at"],
                        "proxy": True,
                        "indexes": [],
                        "constraints": [],
                    },
                    bases=("runs.run",),
                    managers=[("objects", runs.models.PurposeManager("judge", "purpose"))],
                ),
                migrations.CreateModel(
                    name="JudgeBatch",
                    fields=[],
                    options={
                        "verbose_name": "judge batch",
                        "verbose_name_plural": "judge batches",
                        "ordering": ["run", "number"],
                        "proxy": True,
                        "indexes": [],
                        "constraints": [],
                    },
                    bases=("runs.runbatch",),
                    managers=[("objects", runs.models.PurposeManager("judge", "run__purpose"))],
                ),
            ],
        ),
    ]
