"""Judge configurations (versioned), judge runs, their batches and the judges' estimates."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from jobs.models import Job, JobStatus
from work.models import Triple

DEFAULT_MAX_NEW_TOKENS = 1024


def default_prompt_template() -> str:
    """The POLLUX judge prompt shipped with judge_worker (str.format placeholders)."""
    from judge_worker.prompt import template_text

    return template_text("test_pollux_prompt.txt")


def default_decoding() -> dict[str, Any]:
    # Greedy decoding: a judge must give the same verdict when asked twice.
    return {"do_sample": False, "max_new_tokens": DEFAULT_MAX_NEW_TOKENS}


class JudgeBackendKind(models.TextChoices):
    TRANSFORMERS = "transformers", _("transformers (local weights)")
    OPENAI = "openai", _("OpenAI-compatible endpoint")


env_var_name = RegexValidator(
    r"^[A-Z_][A-Z0-9_]*$",
    _("The name of an environment variable (e.g. JUDGE_API_KEY), never the key itself."),
)


class JudgeConfig(models.Model):
    """One version of a judge configuration. Rows are never edited: a change is a new version,
    so every estimate keeps pointing at the exact settings it was made with."""

    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    backend = models.CharField(
        max_length=16, choices=JudgeBackendKind.choices, default=JudgeBackendKind.TRANSFORMERS
    )
    model_path = models.CharField(
        max_length=500, blank=True, help_text=_("Local path or hub id of the weights.")
    )
    endpoint = models.URLField(
        max_length=500, blank=True, help_text=_("Base URL of an OpenAI-compatible API.")
    )
    endpoint_model = models.CharField(
        max_length=200, blank=True, help_text=_("Model name sent to the endpoint.")
    )
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        validators=[env_var_name],
        help_text=_("Name of the environment variable holding the API key (never the key)."),
    )
    # Family of the judge's model (e.g. "qwen"): answers of models of this family are checked for
    # self-preference.
    model_family = models.CharField(max_length=100, blank=True)
    prompt_template = models.TextField(default=default_prompt_template)
    decoding = models.JSONField(default=default_decoding, blank=True)
    batch_size = models.PositiveIntegerField(default=32)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-version"]
        verbose_name = _("judge configuration")
        verbose_name_plural = _("judge configurations")
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="judge_config_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def max_new_tokens(self) -> int:
        return int((self.decoding or {}).get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS))


class RunStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    RUNNING = "running", _("running")
    DONE = "done", _("done")
    CANCELLED = "cancelled", _("cancelled")
    FAILED = "failed", _("failed")


class RunKind(models.TextChoices):
    # POLLUX: a score per (answer, criterion) triple, JudgeEstimate.
    POINTWISE = "pointwise", _("pointwise (POLLUX scores)")
    # REPA: a label per (pair, criterion) triple and prompt template, PairwiseJudgeEstimate.
    PAIRWISE = "pairwise", _("side by side (REPA labels)")


class JudgeRun(models.Model):
    """A judge configuration applied to a scope of triples (a model, a task, a panel, all).

    A pairwise run asks each of its `templates` once per side-by-side triple (k-shot with
    `shots` gold examples); `swapped` runs show the pair's B as "A" (position bias), and
    `swap_of` names the run it mirrors."""

    config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="runs")
    kind = models.CharField(max_length=10, choices=RunKind.choices, default=RunKind.POINTWISE)
    templates = models.JSONField(default=list, blank=True)
    shots = models.PositiveSmallIntegerField(default=0)
    swapped = models.BooleanField(default=False)
    swap_of = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="swap_runs"
    )
    # The backend actually used: the config's, unless overridden when the run was started.
    backend = models.CharField(max_length=16, choices=JudgeBackendKind.choices)
    # {"model": id, "task": id, "panel": id, "limit": n} (ANDed) or {"all": true}.
    scope = models.JSONField(default=dict)
    status = models.CharField(max_length=12, choices=RunStatus.choices, default=RunStatus.PENDING)
    cancelled = models.BooleanField(default=False)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    parse_failures = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    generated_tokens = models.PositiveBigIntegerField(default=0)
    # Throughput is measured from the last (re)start: done_at_start is `done` at that moment.
    done_at_start = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("judge run")
        verbose_name_plural = _("judge runs")

    def __str__(self) -> str:
        return f"judge run {self.pk} ({self.config})"

    @property
    def percent(self) -> int:
        if not self.total:
            return 100 if self.status == RunStatus.DONE else 0
        return min(100, int(100 * self.done / self.total))

    @property
    def parse_failure_rate(self) -> float | None:
        """Share of the judged triples whose output could not be read (None before any)."""
        return self.parse_failures / self.done if self.done else None

    @property
    def is_active(self) -> bool:
        return self.status in (RunStatus.PENDING, RunStatus.RUNNING)

    @property
    def is_pairwise(self) -> bool:
        return self.kind == RunKind.PAIRWISE


# A batch's status is its job's (jobs.services owns claim, heartbeat, retries and the sweep).
BatchStatus = JobStatus


class JudgeBatch(models.Model):
    """A slice of a run: which triples one job of kind "judge_batch" judges.

    The batch keeps what is about judging (its run, its triples, the seconds the backend took);
    its Job keeps the life of the work: status, attempts, the claim's heartbeat, the error.
    """

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="batches")
    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="judge_batch")
    number = models.PositiveIntegerField()
    # A JSON list, not an ArrayField: the embedded SQLite default must work too.
    triple_ids = models.JSONField()
    seconds = models.FloatField(default=0)

    class Meta:
        ordering = ["run", "number"]
        verbose_name = _("judge batch")
        verbose_name_plural = _("judge batches")
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="judge_batch_number_unique")
        ]

    def __str__(self) -> str:
        return f"batch {self.number} of run {self.run_id}"

    # Read-only views of the job, for pages, the admin and tests.
    @property
    def status(self) -> str:
        return str(self.job.status)

    @property
    def attempts(self) -> int:
        return int(self.job.attempts)

    @property
    def error(self) -> str:
        return str(self.job.message) if self.job.status == JobStatus.FAILED else ""


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
