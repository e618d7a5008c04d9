"""Judge configurations (versioned), judge runs, their batches and the judges' estimates."""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from jobs.models import Job
from runs.models import DEFAULT_MAX_NEW_TOKENS as DEFAULT_MAX_NEW_TOKENS
from runs.models import Backend, Purpose, PurposeManager, Run, RunBatch, RunConfig
from runs.models import BatchStatus as BatchStatus
from runs.models import RunKind as RunKind
from runs.models import RunStatus as RunStatus
from runs.models import default_decoding as default_decoding
from runs.models import default_prompt_template as default_prompt_template
from work.models import Triple

# The configuration, run and batch of a judge are rows of the one run model (runs.models),
# read through the proxies below; the names other apps import stay here.
JudgeBackendKind = Backend


class JudgeConfig(RunConfig):
    """One version of a judge configuration. Rows are never edited: a change is a new version,
    so every estimate keeps pointing at the exact settings it was made with."""

    purpose_value = Purpose.JUDGE
    # The stubs type a manager by `Self`: the proxy's own rows are meant.
    objects: ClassVar[PurposeManager[JudgeConfig]] = PurposeManager(Purpose.JUDGE)  # type: ignore[assignment]

    class Meta:
        proxy = True
        ordering = ["name", "-version"]
        verbose_name = _("judge configuration")
        verbose_name_plural = _("judge configurations")


class JudgeRun(Run):
    """A judge configuration applied to a scope of triples (a model, a task, a panel, all);
    its kind (judging.kinds) says what it judges."""

    purpose_value = Purpose.JUDGE
    # The stubs type a manager by `Self`: the proxy's own rows are meant.
    objects: ClassVar[PurposeManager[JudgeRun]] = PurposeManager(Purpose.JUDGE)  # type: ignore[assignment]

    class Meta:
        proxy = True
        ordering = ["-created_at"]
        verbose_name = _("judge run")
        verbose_name_plural = _("judge runs")


class JudgeBatch(RunBatch):
    """A slice of a judge run: which triples (`triple_ids`) one job of kind "judge_batch"
    judges."""

    # The stubs type a manager by `Self`: the proxy's own rows are meant.
    objects: ClassVar[PurposeManager[JudgeBatch]] = PurposeManager(Purpose.JUDGE, "run__purpose")  # type: ignore[assignment]

    class Meta:
        proxy = True
        ordering = ["run", "number"]
        verbose_name = _("judge batch")
        verbose_name_plural = _("judge batches")


class JudgeEstimate(models.Model):
    """A judge's score of one triple in one run. A failed parse keeps the raw text and no score:
    it is never a 0, which would be indistinguishable from the lowest real score."""

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="estimates")
    triple = models.ForeignKey(Triple, on_delete=models.CASCADE, related_name="judge_estimates")
    config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="estimates")
    score = models.FloatField(null=True, blank=True)
    parse_ok = models.BooleanField()
    error = models.TextField(blank=True)
    raw_text = models.TextField(blank=True)
    feedback = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    generated_tokens = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("judge estimate")
        verbose_name_plural = _("judge estimates")
        constraints = [
            models.UniqueConstraint(fields=["run", "triple"], name="judge_estimate_run_triple"),
            models.CheckConstraint(
                condition=(Q(parse_ok=True) & Q(score__isnull=False))
                | (Q(parse_ok=False) & Q(score__isnull=True)),
                name="judge_estimate_score_iff_parsed",
            ),
        ]
        indexes = [models.Index(fields=["triple", "run"])]

    def __str__(self) -> str:
        return f"judge estimate {self.run_id}/{self.triple_id}"


class PairwiseJudgeEstimate(models.Model):
    """A judge's label of one side-by-side triple under one prompt template, in one run.

    `shown_label` is what the judge wrote (placement of the run: swapped or not); `label` is
    that label in the pair's own orientation (protocol.pairwise.unplace), the one compared with
    experts. A failed parse keeps the raw text and no label, never a guessed one. The final
    label of a triple is the majority over its templates (judging.pairwise.final_labels).
    """

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="pairwise_estimates")
    triple = models.ForeignKey(
        Triple, on_delete=models.CASCADE, related_name="pairwise_judge_estimates"
    )
    config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="+")
    template = models.CharField(max_length=32)
    shown_label = models.CharField(max_length=10, blank=True)
    label = models.CharField(max_length=10, blank=True)
    parse_ok = models.BooleanField()
    error = models.TextField(blank=True)
    raw_text = models.TextField(blank=True)
    justification = models.TextField(blank=True)
    # Triple ids of the k-shot examples the prompt showed (the gold items used).
    examples = models.JSONField(default=list, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    generated_tokens = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("side-by-side judge estimate")
        verbose_name_plural = _("side-by-side judge estimates")
        constraints = [
            models.UniqueConstraint(
                fields=["run", "triple", "template"], name="pairwise_judge_estimate_unique"
            ),
            models.CheckConstraint(
                condition=(Q(parse_ok=True) & ~Q(label="")) | (Q(parse_ok=False) & Q(label="")),
                name="pairwise_judge_label_iff_parsed",
            ),
        ]
        indexes = [models.Index(fields=["triple", "run"])]

    def __str__(self) -> str:
        return f"side-by-side judge estimate {self.run_id}/{self.triple_id}/{self.template}"


class JudgeReport(models.Model):
    """The judge-vs-experts report of a run, computed once (judging.report) and read by the run
    page. `fingerprint` names its inputs (judging.report.report_fingerprint): when the current
    one differs, the report is stale and a recompute is queued. `job` is the latest computation,
    a Job of kind "judge_report": one at a time per run (set by compare-and-set while it is
    active); `requested_at` records a request made while it ran, so that another follows."""

    run = models.OneToOneField(JudgeRun, on_delete=models.CASCADE, related_name="report")
    data = models.JSONField(null=True, blank=True)
    fingerprint = models.JSONField(default=dict, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(default=0)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    requested_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        verbose_name = _("judge report")
        verbose_name_plural = _("judge reports")

    def __str__(self) -> str:
        return f"report of judge run {self.run_id}"
