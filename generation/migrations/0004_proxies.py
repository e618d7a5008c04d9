"""Generation configurations, runs and batches are proxies of the run models: the old tables
go (generation 0003 moved their rows), and the outputs' run is checked again, now against the
run table."""

import django.db.models.deletion
from django.db import migrations, models

import runs.models


class Migration(migrations.Migration):
    dependencies = [
        ("generation", "0003_rows_to_runs"),
        ("runs", "0001_initial"),
    ]

    operations = [
        migrations.DeleteModel(name="GenerationBatch"),
        migrations.DeleteModel(name="GenerationRun"),
        migrations.DeleteModel(name="GenerationConfig"),
        migrations.CreateModel(
            name="GenerationConfig",
            fields=[],
            options={
                "verbose_name": "generation configuration",
                "verbose_name_plural": "generation configurations",
                "ordering": ["name", "-version"],
                "proxy": True,
                "indexes": [],
                "constraints": [],
            },
            bases=("runs.runconfig",),
            managers=[("objects", runs.models.PurposeManager("generate", "purpose"))],
        ),
        migrations.CreateModel(
            name="GenerationRun",
            fields=[],
            options={
                "verbose_name": "generation run",
                "verbose_name_plural": "generation runs",
                "ordering": ["-created_at"],
                "proxy": True,
                "indexes": [],
                "constraints": [],
            },
            bases=("runs.run",),
            managers=[("objects", runs.models.PurposeManager("generate", "purpose"))],
        ),
        migrations.CreateModel(
            name="GenerationBatch",
            fields=[],
            options={
                "verbose_name": "generation batch",
                "verbose_name_plural": "generation batches",
                "ordering": ["run", "number"],
                "proxy": True,
                "indexes": [],
                "constraints": [],
            },
            bases=("runs.runbatch",),
            managers=[("objects", runs.models.PurposeManager("generate", "run__purpose"))],
        ),
        migrations.AlterField(
            model_name="generation",
            name="run",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="outputs",
                to="generation.generationrun",
            ),
        ),
    ]
