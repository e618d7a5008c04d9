"""Answer generation: models answering the benchmark's instructions on the GPU worker.

POLLUX: 1,300 instructions × 7 models and the 800 QA and technical instructions × 3 models.
A generation configuration (versioned, like a judge configuration) names the answering model,
its backend and sampling, and which task groups it answers; a run applies it to a set of
instructions in batches claimed like judge batches (runs.batched). Configurations, runs and
batches are rows of the one run model (runs.models), read through the proxies here. Every
output is kept with its configuration version, parameters, time and finish reason, and only a
complete one becomes an answer of the material.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.utils.translation import gettext_lazy as _

from material.models import Answer, Instruction
from runs.models import Backend as Backend
from runs.models import Purpose, PurposeManager, Run, RunBatch, RunConfig
from runs.models import RunStatus as RunStatus


class GenerationConfig(RunConfig):
    """One version of a generation configuration; never edited (a change is a new version),
    so each answer keeps pointing at the exact settings it was generated with."""

    purpose_value = Purpose.GENERATE
    # A generation batch is smaller than a judge's; no judge prompt or decoding.
    purpose_defaults = {"batch_size": 8, "prompt_template": "", "decoding": dict}
    # The stubs type a manager by `Self`: the proxy's own rows are meant.
    objects: ClassVar[PurposeManager[GenerationConfig]] = PurposeManager(Purpose.GENERATE)  # type: ignore[assignment]

    class Meta:
        proxy = True
        ordering = ["name", "-version"]
        verbose_name = _("generation configuration")
        verbose_name_plural = _("generation configurations")


class GenerationRun(Run):
    """A generation configuration applied to a scope of instructions: {"group": task id} |
    {"source": "authoring: <campaign>"} | {"all": true}; the config's task groups always
    apply."""

    purpose_value = Purpose.GENERATE
    purpose_defaults = {"status": RunStatus.RUNNING}
    # The stubs type a manager by `Self`: the proxy's own rows are meant.
    objects: ClassVar[PurposeManager[GenerationRun]] = PurposeManager(Purpose.GENERATE)  # type: ignore[assignment]

    class Meta:
        proxy = True
        ordering = ["-created_at"]
        verbose_name = _("generation run")
        verbose_name_plural = _("generation runs")


class GenerationBatch(RunBatch):
    """A slice of a generation run: which instructions (`instruction_ids`) one job of kind
    "generation" answers."""

    # The stubs type a manager by `Self`: the proxy's own rows are meant.
    objects: ClassVar[PurposeManager[GenerationBatch]] = PurposeManager(  # type: ignore[assignment]
        Purpose.GENERATE, "run__purpose"
    )

    class Meta:
        proxy = True
        ordering = ["run", "number"]
        verbose_name = _("generation batch")
        verbose_name_plural = _("generation batches")


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
    # HTTP requests the output took (first try and retries): what a request budget counts.
    attempts = models.PositiveSmallIntegerField(default=1)
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
