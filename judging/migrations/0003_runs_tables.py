"""Judge configurations, runs and batches become the one run model's rows (runs.models).

The judge tables are renamed to the run tables and given the union of both purposes' fields,
so every judge row keeps its id and every foreign key that points at it (estimates, reports,
submissions, leaderboards) keeps pointing at the same row. runs 0001 then takes the models
over in the migration state and judging 0004 turns them into proxies; generation 0003 moves
the generation rows in (with new ids).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import runs.models

CHOICES_PURPOSE = [("judge", "judge"), ("generate", "generation")]


def mirror_max_new_tokens(apps, schema_editor):
    # A judge's token limit lives in its decoding; the shared column mirrors it.
    config = apps.get_model("judging", "JudgeConfig")
    for row in config.objects.all().only("pk", "decoding"):
        limit = int((row.decoding or {}).get("max_new_tokens", 1024))
        config.objects.filter(pk=row.pk).update(max_new_tokens=limit)


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0002_pairwise_runs"),
        ("jobs", "0006_alter_job_kind"),
        ("material", "0003_text_search_indexes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="judgeconfig", name="judge_config_version_unique"),
        migrations.RemoveConstraint(model_name="judgebatch", name="judge_batch_number_unique"),
        migrations.AlterModelTable(name="judgeconfig", table="runs_runconfig"),
        migrations.AlterModelTable(name="judgerun", table="runs_run"),
        migrations.AlterModelTable(name="judgebatch", table="runs_runbatch"),
        # The configuration: the purpose, generation's fields, the shared defaults.
        migrations.AddField(
            model_name="judgeconfig",
            name="purpose",
            field=models.CharField(choices=CHOICES_PURPOSE, default="judge", max_length=10),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="judgeconfig",
            name="max_new_tokens",
            field=models.PositiveIntegerField(default=1024),
        ),
        migrations.AddField(
            model_name="judgeconfig",
            name="model",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="material.languagemodel",
            ),
        ),
        migrations.AddField(
            model_name="judgeconfig", name="system_prompt", field=models.TextField(blank=True)
        ),
        migrations.AddField(
            model_name="judgeconfig", name="temperature", field=models.FloatField(default=0.0)
        ),
        migrations.AddField(
            model_name="judgeconfig", name="top_p", field=models.FloatField(default=1.0)
        ),
        migrations.AddField(
            model_name="judgeconfig", name="top_k", field=models.PositiveIntegerField(default=0)
        ),
        migrations.AddField(
            model_name="judgeconfig",
            name="seed",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="judgeconfig",
            name="api_key_env",
            field=models.CharField(
                blank=True,
                help_text="Name of the environment variable holding the API key (never the key).",
                max_length=100,
            ),
        ),
        migrations.AlterField(
            model_name="judgeconfig",
            name="prompt_template",
            field=models.TextField(blank=True, default=runs.models.default_prompt_template),
        ),
        migrations.AlterField(
            model_name="judgeconfig",
            name="decoding",
            field=models.JSONField(blank=True, default=runs.models.default_decoding),
        ),
        migrations.AddConstraint(
            model_name="judgeconfig",
            constraint=models.UniqueConstraint(
                fields=("purpose", "name", "version"), name="run_config_version_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="judgeconfig",
            constraint=models.CheckConstraint(
                condition=models.Q(("temperature__gte", 0), ("temperature__lte", 5)),
                name="run_config_temperature_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="judgeconfig",
            constraint=models.CheckConstraint(
                condition=models.Q(("top_p__gt", 0), ("top_p__lte", 1)),
                name="run_config_top_p_range",
            ),
        ),
        # The run: the purpose and generation's counters.
        migrations.AddField(
            model_name="judgerun",
            name="purpose",
            field=models.CharField(choices=CHOICES_PURPOSE, default="judge", max_length=10),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="judgerun", name="failed", field=models.PositiveIntegerField(default=0)
        ),
        migrations.AddField(
            model_name="judgerun", name="truncated", field=models.PositiveIntegerField(default=0)
        ),
        migrations.AddField(
            model_name="judgerun", name="seconds", field=models.FloatField(default=0)
        ),
        # The batch: one list of item ids, one name on the job.
        migrations.RenameField(model_name="judgebatch", old_name="triple_ids", new_name="item_ids"),
        migrations.AlterField(
            model_name="judgebatch",
            name="job",
            field=models.OneToOneField(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="run_batch",
                to="jobs.job",
            ),
        ),
        migrations.AddConstraint(
            model_name="judgebatch",
            constraint=models.UniqueConstraint(
                fields=("run", "number"), name="run_batch_number_unique"
            ),
        ),
        migrations.RunPython(mirror_max_new_tokens, migrations.RunPython.noop),
    ]
