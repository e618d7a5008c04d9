"""The run models take over the judge tables that judging 0003 renamed and widened: in the
migration state only (the tables are there), then the generation configurations' task groups,
a new table. generation 0003 moves the generation rows in."""

import django.db.models.deletion
import runs.models
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('judging', '0003_runs_tables'),
        ('jobs', '0006_alter_job_kind'),
        ('material', '0003_text_search_indexes'),
        ('taxonomy', '0003_criterion_context'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='RunConfig',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('purpose', models.CharField(choices=[('judge', 'judge'), ('generate', 'generation')], max_length=10)),
                        ('name', models.CharField(max_length=100)),
                        ('version', models.PositiveIntegerField(default=1)),
                        ('backend', models.CharField(choices=[('transformers', 'transformers (local weights)'), ('openai', 'OpenAI-compatible endpoint')], default='transformers', max_length=16)),
                        ('model_path', models.CharField(blank=True, help_text='Local path or hub id of the weights.', max_length=500)),
                        ('endpoint', models.URLField(blank=True, help_text='Base URL of an OpenAI-compatible API.', max_length=500)),
                        ('endpoint_model', models.CharField(blank=True, help_text='Model name sent to the endpoint.', max_length=200)),
                        ('api_key_env', models.CharField(blank=True, help_text='Name of the environment variable holding the API key (never the key).', max_length=100)),
                        ('batch_size', models.PositiveIntegerField(default=32)),
                        ('max_new_tokens', models.PositiveIntegerField(default=1024)),
                        ('model_family', models.CharField(blank=True, max_length=100)),
                        ('prompt_template', models.TextField(blank=True, default=runs.models.default_prompt_template)),
                        ('decoding', models.JSONField(blank=True, default=runs.models.default_decoding)),
                        ('system_prompt', models.TextField(blank=True)),
                        ('temperature', models.FloatField(default=0.0)),
                        ('top_p', models.FloatField(default=1.0)),
                        ('top_k', models.PositiveIntegerField(default=0)),
                        ('seed', models.BigIntegerField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('model', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='material.languagemodel')),
                    ],
                    options={
                        'verbose_name': 'run configuration',
                        'verbose_name_plural': 'run configurations',
                        'ordering': ['name', '-version'],
                    },
                ),
                migrations.CreateModel(
                    name='Run',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('purpose', models.CharField(choices=[('judge', 'judge'), ('generate', 'generation')], max_length=10)),
                        ('kind', models.CharField(choices=[('pointwise', 'pointwise (POLLUX scores)'), ('pairwise', 'side by side (REPA labels)')], default='pointwise', max_length=10)),
                        ('templates', models.JSONField(blank=True, default=list)),
                        ('shots', models.PositiveSmallIntegerField(default=0)),
                        ('swapped', models.BooleanField(default=False)),
                        ('backend', models.CharField(choices=[('transformers', 'transformers (local weights)'), ('openai', 'OpenAI-compatible endpoint')], max_length=16)),
                        ('scope', models.JSONField(default=dict)),
                        ('status', models.CharField(choices=[('pending', 'pending'), ('running', 'running'), ('done', 'done'), ('cancelled', 'cancelled'), ('failed', 'failed')], default='pending', max_length=12)),
                        ('cancelled', models.BooleanField(default=False)),
                        ('total', models.PositiveIntegerField(default=0)),
                        ('done', models.PositiveIntegerField(default=0)),
                        ('parse_failures', models.PositiveIntegerField(default=0)),
                        ('failed', models.PositiveIntegerField(default=0)),
                        ('truncated', models.PositiveIntegerField(default=0)),
                        ('seconds', models.FloatField(default=0)),
                        ('prompt_tokens', models.PositiveBigIntegerField(default=0)),
                        ('generated_tokens', models.PositiveBigIntegerField(default=0)),
                        ('done_at_start', models.PositiveIntegerField(default=0)),
                        ('message', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('swap_of', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='swap_runs', to='runs.run')),
                        ('config', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='runs', to='runs.runconfig')),
                    ],
                    options={
                        'verbose_name': 'run',
                        'verbose_name_plural': 'runs',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.CreateModel(
                    name='RunBatch',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('number', models.PositiveIntegerField()),
                        ('item_ids', models.JSONField()),
                        ('seconds', models.FloatField(default=0)),
                        ('job', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='run_batch', to='jobs.job')),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='batches', to='runs.run')),
                    ],
                    options={
                        'verbose_name': 'run batch',
                        'verbose_name_plural': 'run batches',
                        'ordering': ['run', 'number'],
                        'constraints': [models.UniqueConstraint(fields=('run', 'number'), name='run_batch_number_unique')],
                    },
                ),
                migrations.AddConstraint(
                    model_name='runconfig',
                    constraint=models.UniqueConstraint(fields=('purpose', 'name', 'version'), name='run_config_version_unique'),
                ),
                migrations.AddConstraint(
                    model_name='runconfig',
                    constraint=models.CheckConstraint(condition=models.Q(('temperature__gte', 0), ('temperature__lte', 5)), name='run_config_temperature_range'),
                ),
                migrations.AddConstraint(
                    model_name='runconfig',
                    constraint=models.CheckConstraint(condition=models.Q(('top_p__gt', 0), ('top_p__lte', 1)), name='run_config_top_p_range'),
                ),
    
            ],
        ),
        migrations.AddField(
            model_name='runconfig',
            name='task_groups',
            field=models.ManyToManyField(blank=True, related_name='+', to='taxonomy.task'),
        ),
    ]
