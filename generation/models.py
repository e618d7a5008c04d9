"""Answer generation: models answering the benchmark's instructions on the GPU worker.

POLLUX: 1,300 instructions × 7 models and the 800 QA and technical instructions × 3 models.
A generation configuration (versioned, like a judge configuration) names the answering model,
its backend and sampling, and which task groups it answers; a run applies it to a set of
instructions in batches claimed like judge batches (jobs.services); every output is kept with
its configuration version, parameters, time and finish reason, and only a complete one becomes
an answer of the material.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from jobs.models import Job, JobStatus
from material.models import Answer, Instruction, LanguageModel
from taxonomy.models import Task


class Backend(models.TextChoices):
    TRANSFORMERS = "transformers", _("transformers (local weights)")
    OPENAI = "openai", _("OpenAI-compatible endpoint")


class GenerationConfig(models.Model):
    """One version of a generation configuration; never edited (a change is a new version),
    so each answer keeps pointing at the exact settings it was generated with."""

    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    # The model whose answers these are (blind to experts, like every model).
    model = models.ForeignKey(LanguageModel, on_delete=models.PROTECT, related_name="+")
    backend = models.CharField(max_length=16, choices=Backend.choices)
    model_path = models.CharField(max_length=500, blank=True)
    endpoint = models.URLField(max_length=500, blank=True)
    endpoint_model = models.CharField(max_length=200, blank=True)
    api_key_env = models.CharField(max_length=100, blank=True)
    system_prompt = models.TextField(blank=True)
    temperature = models.FloatField(default=0.0)
    top_p = models.FloatField(default=1.0)
    top_k = models.PositiveIntegerField(default=0)
    max_new_tokens = models.PositiveIntegerField(default=1024)
    seed = models.BigIntegerField(null=True, blank=True)
    batch_size = models.PositiveIntegerField(default=8)
    # Which task groups (top-level tasks) this model answers; none = all of them.
    task_groups = models.ManyToManyField(Task, blank=True, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-version"]
        verbose_name = _("generation configuration")
        verbose_name_plural = _("generation configurations")
        constraints = [
            models.UniqueConstraint(
                fields=["name", "version"], name="generation_config_version_unique"
            ),
            models.CheckConstraint(
                condition=Q(temperature__gte=0) & Q(temperature__lte=5),
                name="generation_temperature_range",
            ),
            models.CheckConstraint(
                condition=Q(top_p__gt=0) & Q(top_p__lte=1), name="generation_top_p_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    def parameters(self) -> dict[str, object]:
        """The sampling parameters every answer records."""
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "max_new_tokens": self.max_new_tokens,
            "seed": self.seed,
            "system_prompt": bool(self.system_prompt),
        }


class RunStatus(models.TextChoices):
    RUNNING = "running", _("running")
    DONE = "done", _("done")
    CANCELLED = "cancelled", _("cancelled")
    FAILED = "failed", _("failed")


class GenerationRun(models.Model):
    config = models.ForeignKey(GenerationConfig, on_delete=models.PROTECT, related_name="runs")
    # {"group": task id} | {"source": "authoring: <campaign>"} | {"all": true}; the config's task
    # groups always apply.
    scope = models.JSONField(default=dict)
    status = models.CharField(max_length=12, choices=RunStatus.choices, default=RunStatus.RUNNING)
    cancelled = models.BooleanField(default=False)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    truncated = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    generated_tokens = models.PositiveBigIntegerField(default=0)
    seconds = models.FloatField(default=0)
    message = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("generation run")
        verbose_name_plural = _("generation runs")

    def __str__(self) -> str:
        return f"generation run {self.pk} ({self.config})"

    @property
    def percent(self) -> int:
        if not self.total:
            return 100 if self.status == RunStatus.DONE else 0
        return min(100, int(100 * self.done / self.total))

    @property
    def is_active(self) -> bool:
        return self.status == RunStatus.RUNNING

    @property
    def tokens_per_second(self) -> float | None:
        return self.generated_tokens / self.seconds if self.seconds else None


class GenerationBatch(models.Model):
    """A slice of a run: which instructions one job of kind "generation" answers."""

    run = models.ForeignKey(GenerationRun, on_delete=models.CASCADE, related_name="batches")
    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="generation_batch")
    number = models.PositiveIntegerField()
    instruction_ids = models.JSONField()
    seconds = models.FloatField(default=0)

    class Meta:
        ordering = ["run", "number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="generation_batch_unique")
        ]

    def __str__(self) -> str:
        return f"batch {self.number} of generation run {self.run_id}"

    @property
    def status(self) -> str:
        return str(self.job.status)

    @property
    def failed(self) -> bool:
        return self.job.status == JobStatus.FAILED


class Generation(models.Model):
    """One instruction answered in one run: the output as the backend gave it. Only a complete
    one ("stop") is an answer of the material; a truncated or failed one is kept here, marked,
    and never silently enters the pool."""

    class Outcome(models.TextChoices):
        OK = "ok", _("complete")
        TRUNCATED = "truncated", _("truncated (max tokens)")
        FAILED = "failed", _("failed")

    run = models.ForeignKey(GenerationRun, on_delete=models.CASCADE, related_name="outputs")
    instruction = models.ForeignKey(Instruction, on_delete=models.CASCADE, related_name="+")
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    text = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=16, blank=True)
    error = models.TextField(blank=True)
    answer = models.ForeignKey(
        Answer, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    prompt_tokens = models.PositiveIntegerField(default=0)
    generated_tokens = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("generation")
        verbose_name_plural = _("generations")
        constraints = [
            models.UniqueConstraint(fields=["run", "instruction"], name="generation_once_per_run")
        ]

    def __str__(self) -> str:
        return f"generation of instruction {self.instruction_id} in run {self.run_id}"
