"""One configuration, run and batch model for every model-driven run, with its purpose.

A judge run (judging) and a generation run (generation) are one shape: a versioned
configuration naming a model and its backend, a run applying it to a scope, batches as jobs
(runs.batched). The rows of both live here; `purpose` says whose a row is. Each purpose reads
its rows through proxies of its own app (judging.models.JudgeConfig/JudgeRun/JudgeBatch,
generation.models.GenerationConfig/GenerationRun/GenerationBatch): a manager keeping to the
purpose, the purpose and its defaults set on a new row, its own names in the admin.

Fields of one purpose only are documented as such; the other purpose leaves them at their
default. What each purpose keeps of its own (judge estimates and reports, generated outputs)
stays in its app, with foreign keys to the proxies.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from jobs.models import Job, JobStatus
from material.models import LanguageModel
from taxonomy.models import Task

DEFAULT_MAX_NEW_TOKENS = 1024


def default_prompt_template() -> str:
    """The POLLUX judge prompt shipped with judge_worker (str.format placeholders)."""
    from judge_worker.prompt import template_text

    return template_text("test_pollux_prompt.txt")


def default_decoding() -> dict[str, Any]:
    # Greedy decoding: a judge must give the same verdict when asked twice.
    return {"do_sample": False, "max_new_tokens": DEFAULT_MAX_NEW_TOKENS}


class Purpose(models.TextChoices):
    JUDGE = "judge", _("judge")
    GENERATE = "generate", _("generation")


class Backend(models.TextChoices):
    TRANSFORMERS = "transformers", _("transformers (local weights)")
    OPENAI = "openai", _("OpenAI-compatible endpoint")


env_var_name = RegexValidator(
    r"^[A-Z_][A-Z0-9_]*$",
    _("The name of an environment variable (e.g. JUDGE_API_KEY), never the key itself."),
)


class PurposeModel(models.Model):
    """A row of one purpose (its `purpose` field): a proxy names its purpose and the defaults
    its new rows take where they differ from the shared field's (a proxy cannot change a
    field)."""

    purpose_value: ClassVar[str] = ""
    purpose_defaults: ClassVar[dict[str, Any]] = {}

    class Meta:
        abstract = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Rows read from the database come positionally (Model.from_db): only new rows take
        # the defaults.
        if not args:
            if self.purpose_value:
                kwargs.setdefault("purpose", self.purpose_value)
            for name, value in self.purpose_defaults.items():
                if name not in kwargs:
                    kwargs[name] = value() if callable(value) else value
        super().__init__(*args, **kwargs)

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.purpose_value:
            self.purpose = self.purpose_value
        super().save(*args, **kwargs)


M = TypeVar("M", bound=models.Model)


class PurposeManager(models.Manager[M], Generic[M]):
    """A proxy's manager: the rows of its purpose only (`lookup` is the purpose's path)."""

    def __init__(self, purpose: str, lookup: str = "purpose") -> None:
        super().__init__()
        self.purpose = purpose
        self.lookup = lookup

    def deconstruct(self) -> Any:
        # Migrations record the manager with its arguments.
        return (
            False,
            f"{PurposeManager.__module__}.{PurposeManager.__qualname__}",
            None,
            (self.purpose, self.lookup),
            {},
        )

    def get_queryset(self) -> models.QuerySet[M]:
        return super().get_queryset().filter(**{self.lookup: self.purpose})


class RunConfig(PurposeModel):
    """One version of a configuration. Rows are never edited: a change is a new version, so
    every result keeps pointing at the exact settings it was made with."""

    purpose = models.CharField(max_length=10, choices=Purpose.choices)
    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    backend = models.CharField(max_length=16, choices=Backend.choices, default=Backend.TRANSFORMERS)
    model_path = models.CharField(
        max_length=500, blank=True, help_text=_("Local path or hub id of the weights.")
    )
    endpoint = models.URLField(
        max_length=500, blank=True, help_text=_("Base URL of an OpenAI-compatible API.")
    )
    endpoint_model = models.CharField(
        max_length=200, blank=True, help_text=_("Model name sent to the endpoint.")
    )
    # A judge's is checked against env_var_name (clean_fields); a generation's is as typed.
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text=_("Name of the environment variable holding the API key (never the key)."),
    )
    # An endpoint a participant gave (a closed benchmark version's submission): every call goes
    # through the address guard (judge_worker.backends.guard), its key is an EndpointKey, and
    # its backend is built afresh for each batch, never kept loaded with the key in memory.
    guarded = models.BooleanField(default=False)
    batch_size = models.PositiveIntegerField(default=32)
    # A judge's: its decoding (max_new_tokens mirrored below on save).
    max_new_tokens = models.PositiveIntegerField(default=DEFAULT_MAX_NEW_TOKENS)
    # Judge only. Family of the judge's model (e.g. "qwen"): answers of models of this family
    # are checked for self-preference.
    model_family = models.CharField(max_length=100, blank=True)
    # Judge only: its prompt and decoding options.
    prompt_template = models.TextField(default=default_prompt_template, blank=True)
    decoding = models.JSONField(default=default_decoding, blank=True)
    # Generation only: the model whose answers these are (blind to experts, like every model),
    # its prompt and sampling, and which task groups (top-level tasks) it answers (none = all).
    model = models.ForeignKey(
        LanguageModel, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    system_prompt = models.TextField(blank=True)
    temperature = models.FloatField(default=0.0)
    top_p = models.FloatField(default=1.0)
    top_k = models.PositiveIntegerField(default=0)
    seed = models.BigIntegerField(null=True, blank=True)
    task_groups = models.ManyToManyField(Task, blank=True, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-version"]
        verbose_name = _("run configuration")
        verbose_name_plural = _("run configurations")
        constraints = [
            models.UniqueConstraint(
                fields=["purpose", "name", "version"], name="run_config_version_unique"
            ),
            models.CheckConstraint(
                condition=Q(temperature__gte=0) & Q(temperature__lte=5),
                name="run_config_temperature_range",
            ),
            models.CheckConstraint(
                condition=Q(top_p__gt=0) & Q(top_p__lte=1), name="run_config_top_p_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if (self.purpose_value or self.purpose) == Purpose.JUDGE:
            # A judge's token limit is its decoding's; the column mirrors it for both purposes.
            self.max_new_tokens = int(
                (self.decoding or {}).get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS)
            )
        super().save(*args, **kwargs)

    def clean_fields(self, exclude: Any = None) -> None:
        errors: dict[str, Any] = {}
        try:
            super().clean_fields(exclude)
        except ValidationError as exc:
            errors = exc.update_error_dict(errors)
        judge = (self.purpose_value or self.purpose) == Purpose.JUDGE
        if judge and self.api_key_env and "api_key_env" not in (exclude or ()):
            try:
                env_var_name(self.api_key_env)
            except ValidationError as exc:
                errors.setdefault("api_key_env", []).extend(exc.error_list)
        if judge and not self.prompt_template.strip() and "prompt_template" not in (exclude or ()):
            errors.setdefault("prompt_template", []).append(
                ValidationError(_("This field cannot be blank."), code="blank")
            )
        if errors:
            raise ValidationError(errors)

    def parameters(self) -> dict[str, object]:
        """A generation's sampling parameters, which every answer records."""
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "max_new_tokens": self.max_new_tokens,
            "seed": self.seed,
            "system_prompt": bool(self.system_prompt),
        }


class EndpointKey(models.Model):
    """The API key of a guarded configuration's endpoint, encrypted (runs.secrets): read only
    by the worker that calls the endpoint, never shown, deleted when the run ends."""

    config = models.OneToOneField(
        RunConfig, on_delete=models.CASCADE, primary_key=True, related_name="endpoint_key"
    )
    token = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("endpoint key")
        verbose_name_plural = _("endpoint keys")

    def __str__(self) -> str:
        return f"key of {self.config_id}"  # never the key


class RunStatus(models.TextChoices):
    # A generation run starts running; a judge run may be created pending.
    PENDING = "pending", _("pending")
    RUNNING = "running", _("running")
    DONE = "done", _("done")
    CANCELLED = "cancelled", _("cancelled")
    FAILED = "failed", _("failed")


class RunKind(models.TextChoices):
    """A judge run's kind (judging.kinds holds what each does); generation leaves the default."""

    # POLLUX: a score per (answer, criterion) triple, JudgeEstimate.
    POINTWISE = "pointwise", _("pointwise (POLLUX scores)")
    # REPA: a label per (pair, criterion) triple and prompt template, PairwiseJudgeEstimate.
    PAIRWISE = "pairwise", _("side by side (REPA labels)")


class Run(PurposeModel):
    """A configuration applied to a scope: of triples (a judge: a model, a task, a panel, all)
    or of instructions (generation: a task group, a source, all).

    A pairwise judge run asks each of its `templates` once per side-by-side triple (k-shot
    with `shots` gold examples); `swapped` runs show the pair's B as "A" (position bias), and
    `swap_of` names the run it mirrors."""

    purpose = models.CharField(max_length=10, choices=Purpose.choices)
    config = models.ForeignKey(RunConfig, on_delete=models.PROTECT, related_name="runs")
    # Judge only: the kind and the pairwise settings.
    kind = models.CharField(max_length=10, choices=RunKind.choices, default=RunKind.POINTWISE)
    templates = models.JSONField(default=list, blank=True)
    shots = models.PositiveSmallIntegerField(default=0)
    swapped = models.BooleanField(default=False)
    swap_of = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="swap_runs"
    )
    # The backend actually used: the config's, unless overridden when a judge run started.
    backend = models.CharField(max_length=16, choices=Backend.choices)
    # The purpose's scope (judging.services.clean_scope, generation.services.clean_scope).
    scope = models.JSONField(default=dict)
    status = models.CharField(max_length=12, choices=RunStatus.choices, default=RunStatus.PENDING)
    cancelled = models.BooleanField(default=False)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    # Judge only: outputs that could not be read.
    parse_failures = models.PositiveIntegerField(default=0)
    # Generation only: failed and truncated outputs, the batches' seconds.
    failed = models.PositiveIntegerField(default=0)
    truncated = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    generated_tokens = models.PositiveBigIntegerField(default=0)
    # Judge only: throughput is measured from the last (re)start, done_at_start is `done` then.
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
        verbose_name = _("run")
        verbose_name_plural = _("runs")

    def __str__(self) -> str:
        what = "judge run" if self.purpose == Purpose.JUDGE else "generation run"
        return f"{what} {self.pk} ({self.config})"

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
    def tokens_per_second(self) -> float | None:
        return self.generated_tokens / self.seconds if self.seconds else None

    @property
    def is_active(self) -> bool:
        return self.status in (RunStatus.PENDING, RunStatus.RUNNING)

    @property
    def is_pairwise(self) -> bool:
        return self.kind == RunKind.PAIRWISE


# A batch's status is its job's (jobs.services owns claim, heartbeat, retries and the sweep).
BatchStatus = JobStatus


class RunBatch(models.Model):
    """A slice of a run: which items (triple ids of a judge run, instruction ids of a
    generation run) one job of its purpose's batch kind covers.

    The batch keeps what is about the run (its run, its items, the seconds the backend took);
    its Job keeps the life of the work: status, attempts, the claim's heartbeat, the error."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="batches")
    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="run_batch")
    number = models.PositiveIntegerField()
    # A JSON list, not an ArrayField: the embedded SQLite default must work too.
    item_ids = models.JSONField()
    seconds = models.FloatField(default=0)

    class Meta:
        ordering = ["run", "number"]
        verbose_name = _("run batch")
        verbose_name_plural = _("run batches")
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="run_batch_number_unique")
        ]

    def __str__(self) -> str:
        return f"batch {self.number} of run {self.run_id}"

    # The items under their purpose's names, for readable code and tests.
    @property
    def triple_ids(self) -> list[int]:
        return list(self.item_ids)

    @triple_ids.setter
    def triple_ids(self, ids: list[int]) -> None:
        self.item_ids = ids

    @property
    def instruction_ids(self) -> list[int]:
        return list(self.item_ids)

    @instruction_ids.setter
    def instruction_ids(self, ids: list[int]) -> None:
        self.item_ids = ids

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

    @property
    def failed(self) -> bool:
        return self.job.status == JobStatus.FAILED
