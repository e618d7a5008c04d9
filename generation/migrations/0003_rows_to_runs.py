"""The generation configurations, runs and batches move into the run tables (runs.models) as
rows of purpose "generate", after the judge rows, which kept their ids: each generation row
gets a new id, and everything naming the old one follows it (the outputs' run, the batches'
jobs' params, the answers' generation_meta). Backwards, the rows move back the same way."""

from django.db import migrations

CONFIG_FIELDS = (
    "name",
    "version",
    "backend",
    "model_path",
    "endpoint",
    "endpoint_model",
    "api_key_env",
    "system_prompt",
    "temperature",
    "top_p",
    "top_k",
    "max_new_tokens",
    "seed",
    "batch_size",
    "created_by_id",
    "model_id",
)
RUN_FIELDS = (
    "scope",
    "status",
    "cancelled",
    "total",
    "done",
    "failed",
    "truncated",
    "prompt_tokens",
    "generated_tokens",
    "seconds",
    "message",
    "created_by_id",
    "finished_at",
)


def _move(apps, *, source, target, to_runs):
    """Copy the configurations, runs and batches from `source` models to `target` models
    (new ids) and point what names them at the new ids. The source rows stay: deleting them
    here would cascade to outputs whose run id is already a new one."""
    src_config, src_run, src_batch = source
    dst_config, dst_run, dst_batch = target
    job = apps.get_model("jobs", "Job")
    answer = apps.get_model("material", "Answer")
    generation = apps.get_model("generation", "Generation")
    purpose = {"purpose": "generate"} if to_runs else {}
    config_ids: dict[int, int] = {}
    for old in src_config.objects.order_by("pk"):
        extra = {"prompt_template": "", "decoding": {}} if to_runs else {}
        new = dst_config.objects.create(
            **purpose, **extra, **{f: getattr(old, f) for f in CONFIG_FIELDS}
        )
        # auto_now_add stamped the copy: it keeps the original's time.
        dst_config.objects.filter(pk=new.pk).update(created_at=old.created_at)
        new.task_groups.set(list(old.task_groups.values_list("pk", flat=True)))
        config_ids[old.pk] = new.pk
    run_ids: dict[int, int] = {}
    for old in src_run.objects.select_related("config").order_by("pk"):
        extra = {"backend": old.config.backend} if to_runs else {}
        new = dst_run.objects.create(
            **purpose,
            **extra,
            config_id=config_ids[old.config_id],
            **{f: getattr(old, f) for f in RUN_FIELDS},
        )
        dst_run.objects.filter(pk=new.pk).update(created_at=old.created_at)
        run_ids[old.pk] = new.pk
    ids_to, ids_from = ("item_ids", "instruction_ids") if to_runs else ("instruction_ids", "item_ids")
    for old in src_batch.objects.order_by("pk"):
        dst_batch.objects.create(
            run_id=run_ids[old.run_id],
            job_id=old.job_id,
            number=old.number,
            seconds=old.seconds,
            **{ids_to: getattr(old, ids_from)},
        )
        row = job.objects.filter(pk=old.job_id).first()
        if row is not None and isinstance(row.params, dict) and "run" in row.params:
            job.objects.filter(pk=row.pk).update(params={**row.params, "run": run_ids[old.run_id]})
    # Old and new ids may overlap: every output first steps aside to a negative id, so no two
    # outputs of one instruction share a run id on the way (the unique run, instruction).
    for old_id in run_ids:
        generation.objects.filter(run_id=old_id).update(run_id=-old_id)
    for old_id, new_id in run_ids.items():
        generation.objects.filter(run_id=-old_id).update(run_id=new_id)
    # The answers record the configuration and run that generated them.
    new_run_ids = set(run_ids.values())
    made = generation.objects.filter(run_id__in=new_run_ids, answer__isnull=False)
    for answer_id in made.values_list("answer_id", flat=True):
        row = answer.objects.get(pk=answer_id)
        meta = dict(row.generation_meta or {})
        if meta.get("run") in run_ids:
            meta["run"] = run_ids[meta["run"]]
        if meta.get("config_id") in config_ids:
            meta["config_id"] = config_ids[meta["config_id"]]
        answer.objects.filter(pk=row.pk).update(generation_meta=meta)


def _old(apps):
    return tuple(
        apps.get_model("generation", name)
        for name in ("GenerationConfig", "GenerationRun", "GenerationBatch")
    )


def _new(apps):
    return tuple(apps.get_model("runs", name) for name in ("RunConfig", "Run", "RunBatch"))


class _Purpose:
    """The run models narrowed to the generation rows (the source of the move backwards)."""

    def __init__(self, model, **lookup):
        self.model, self.lookup = model, lookup

    @property
    def objects(self):
        return self.model.objects.filter(**self.lookup)


def forwards(apps, schema_editor):
    _move(apps, source=_old(apps), target=_new(apps), to_runs=True)


def backwards(apps, schema_editor):
    config, run, batch = _new(apps)
    source = (
        _Purpose(config, purpose="generate"),
        _Purpose(run, purpose="generate"),
        _Purpose(batch, run__purpose="generate"),
    )
    _move(apps, source=source, target=_old(apps), to_runs=False)
    # The old tables dropped by generation 0004 took their rows; the run tables keep theirs.
    for model in reversed(source):
        model.objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("generation", "0002_run_fk_unchecked"),
        ("runs", "0001_initial"),
        ("jobs", "0006_alter_job_kind"),
        ("material", "0003_text_search_indexes"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
