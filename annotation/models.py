"""Material under evaluation, the work routed to experts, their estimates and long jobs."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from panels.models import Expert, Panel
from taxonomy.models import Complexity, Criterion, CriterionGroup, FunctionalStyle, Rubric, Task


class Instruction(models.Model):
    external_id = models.CharField(max_length=128, unique=True, null=True, blank=True)
    text = models.TextField()
    reference_answer = models.TextField(blank=True)
    task = models.ForeignKey(
        Task,
        on_delete=models.PROTECT,
        related_name="instructions",
        limit_choices_to={"is_leaf": True},
    )
    style = models.ForeignKey(
        FunctionalStyle,
        on_delete=models.PROTECT,
        related_name="instructions",
        null=True,
        blank=True,
    )
    complexity = models.CharField(max_length=8, choices=Complexity.choices, blank=True)
    ethics_flag = models.BooleanField(default=False)
    author = models.CharField(max_length=200, blank=True)
    source = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("instruction")
        verbose_name_plural = _("instructions")

    def __str__(self) -> str:
        return self.external_id or f"instruction {self.pk}"


class LanguageModel(models.Model):
    """The model that wrote an answer. Hidden from experts: scoring is blind."""

    name = models.CharField(max_length=200)
    version = models.CharField(max_length=100, blank=True, default="")
    provider = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name = _("model")
        verbose_name_plural = _("models")
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="language_model_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.version}".strip()


class Answer(models.Model):
    external_id = models.CharField(max_length=128, unique=True, null=True, blank=True)
    instruction = models.ForeignKey(Instruction, on_delete=models.CASCADE, related_name="answers")
    model = models.ForeignKey(LanguageModel, on_delete=models.PROTECT, related_name="answers")
    text = models.TextField()
    generation_meta = models.JSONField(default=dict, blank=True)
    # Text fingerprint: re-importing the same answer under no id finds it instead of duplicating.
    text_hash = models.CharField(max_length=64, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("answer")
        verbose_name_plural = _("answers")
        constraints = [
            models.UniqueConstraint(
                fields=["instruction", "model", "text_hash"], name="answer_natural_unique"
            )
        ]

    def __str__(self) -> str:
        return self.external_id or f"answer {self.pk}"


class Triple(models.Model):
    """(instruction, answer, criterion): the unit that gets estimates, routed to one panel."""

    # No index of its own: the unique (answer, criterion) index leads with answer_id, and every
    # index less is less work for the builder's COPY of ~170,000 triples.
    answer = models.ForeignKey(
        Answer, on_delete=models.CASCADE, related_name="triples", db_index=False
    )
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="triples")
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="triples")
    group = models.CharField(max_length=16, choices=CriterionGroup.choices)
    # Critical triples may be scored by experts of any panel working on the answer (POLLUX puts
    # the critical gates in front of every expert); others only by this panel.
    # Indexed by the (panel, answer) index below.
    panel = models.ForeignKey(
        Panel, on_delete=models.PROTECT, related_name="triples", db_index=False
    )
    required_overlap = models.PositiveSmallIntegerField()
    position = models.PositiveSmallIntegerField(default=0)
    # Reopened for rescoring by a supervisor (the note says why).
    reopened_note = models.TextField(blank=True)

    class Meta:
        verbose_name = _("triple")
        verbose_name_plural = pgettext_lazy("model name", "triples")
        constraints = [
            models.UniqueConstraint(fields=["answer", "criterion"], name="triple_unique"),
            models.CheckConstraint(
                condition=Q(required_overlap__gte=1) & Q(required_overlap__lte=10),
                name="triple_overlap_range",
            ),
        ]
        indexes = [models.Index(fields=["panel", "answer"])]

    def __str__(self) -> str:
        return f"{self.answer_id}/{self.criterion_id}"


class AssignmentKind(models.TextChoices):
    WORK = "work", _("work")
    CONTROL = "control", _("control item")
    EXAM = "exam", _("exam")


class AssignmentStatus(models.TextChoices):
    ASSIGNED = "assigned", _("assigned")
    IN_PROGRESS = "in_progress", _("in progress")
    SUBMITTED = "submitted", _("submitted")
    RELEASED = "released", _("released")


class Assignment(models.Model):
    """One expert's work on one whole answer for one panel: all its estimates together."""

    expert = models.ForeignKey(Expert, on_delete=models.CASCADE, related_name="assignments")
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="assignments")
    panel = models.ForeignKey(Panel, on_delete=models.PROTECT, related_name="assignments")
    kind = models.CharField(
        max_length=8, choices=AssignmentKind.choices, default=AssignmentKind.WORK
    )
    status = models.CharField(
        max_length=12, choices=AssignmentStatus.choices, default=AssignmentStatus.ASSIGNED
    )
    reserved_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    time_spent_ms = models.PositiveBigIntegerField(default=0)
    # Set when the expert marked a critical violation: the rest was skipped, as in POLLUX.
    critical_stop = models.BooleanField(default=False)
    locked = models.BooleanField(default=False)
    # Drafts of a reservation that expired while the expert was typing: kept, shown on return.
    drafts_backup = models.JSONField(default=dict, blank=True)
    # Client-generated id of the last accepted submission: a retried request is recognised.
    submission_key = models.CharField(max_length=64, blank=True)

    class Meta:
        verbose_name = _("assignment")
        verbose_name_plural = _("assignments")
        constraints = [
            models.UniqueConstraint(
                fields=["expert", "answer", "panel", "kind"], name="assignment_unique"
            )
        ]
        indexes = [
            models.Index(fields=["expert", "status"]),
            models.Index(fields=["status", "reserved_until"]),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk}"


class EstimateStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    DRAFT = "draft", _("draft")
    SUBMITTED = "submitted", _("submitted")
    SKIPPED = "skipped", _("skipped after a critical violation")


class Estimate(models.Model):
    """An expert's score of one triple: a reserved slot until submitted.

    Overlap is enforced by the database: one estimate per (triple, expert), and at most
    `required_overlap` slots per triple (slot numbers are unique per triple and the builder
    never hands out a slot above the triple's overlap).
    """

    # No index of its own: the unique (triple, expert) constraint's index starts with triple.
    # Every index costs time when the builder writes ~490,000 slots at once.
    triple = models.ForeignKey(
        Triple, on_delete=models.CASCADE, related_name="estimates", db_index=False
    )
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="estimates")
    # A copy of assignment.expert_id, so that the unique (triple, expert) constraint below can
    # enforce the overlap in the database. Every writer sets it from the assignment's expert and
    # nothing changes either afterwards: the builder (both write paths, revived assignments
    # included: the key it revives by is (expert, answer, panel)), exam and control material
    # (panels.services._scoring_material_create), and release (which deletes estimates); drafts
    # and submissions never write it (tests/test_assignments.py checks the equality after a
    # build, a release, a reassignment, a submission and an exam; the admin shows it, and the
    # assignment's expert, read-only). So the expert exists as long as the assignment
    # (whose foreign keys are checked) does, and the database-level foreign key is off: it was a
    # third deferred check on every estimate, ~1.25 s of a first build at POLLUX scale (476,000
    # rows; docs/bench_assignments.md). The Django ForeignKey stays: joins, and PROTECT still
    # refuses deleting an expert through the ORM while estimates name them.
    expert = models.ForeignKey(
        Expert, on_delete=models.PROTECT, related_name="estimates", db_constraint=False
    )
    slot = models.PositiveSmallIntegerField()
    status = models.CharField(
        max_length=10, choices=EstimateStatus.choices, default=EstimateStatus.PENDING
    )
    score = models.SmallIntegerField(null=True, blank=True)
    is_na = models.BooleanField(default=False)
    rationale = models.TextField(blank=True)
    # The rubric version the score was given under: NULL until submitted, then the triple's
    # rubric at that moment (annotation.services). It is a record meant to outlive a change of
    # the triple's rubric (the admin can edit one), so unlike `expert` it is not a pure copy and
    # its database-level foreign key stays; it costs little anyway: the builder writes NULL,
    # whose check PostgreSQL skips (~0.1 s for 476,000 rows, docs/bench_assignments.md).
    # Not indexed: only a (rare) rubric deletion looks estimates up by rubric.
    rubric = models.ForeignKey(
        Rubric, on_delete=models.PROTECT, null=True, blank=True, db_index=False
    )
    time_spent_ms = models.PositiveBigIntegerField(default=0)
    revision = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("estimate")
        verbose_name_plural = _("estimates")
        constraints = [
            models.UniqueConstraint(fields=["triple", "expert"], name="estimate_triple_expert"),
            models.UniqueConstraint(fields=["triple", "slot"], name="estimate_triple_slot"),
            models.CheckConstraint(
                condition=Q(slot__gte=1) & Q(slot__lte=10), name="estimate_slot_range"
            ),
            models.CheckConstraint(
                condition=~Q(status="submitted") | Q(is_na=True) | Q(score__isnull=False),
                name="estimate_submitted_has_score",
            ),
        ]

    def __str__(self) -> str:
        return f"estimate {self.pk}"


class EstimateRevision(models.Model):
    """History of a submitted estimate: every change after the first submission is kept."""

    estimate = models.ForeignKey(Estimate, on_delete=models.CASCADE, related_name="revisions")
    revision = models.PositiveIntegerField()
    score = models.SmallIntegerField(null=True, blank=True)
    is_na = models.BooleanField(default=False)
    rationale = models.TextField(blank=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("estimate revision")
        verbose_name_plural = _("estimate revisions")
        constraints = [
            models.UniqueConstraint(
                fields=["estimate", "revision"], name="estimate_revision_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.estimate_id} r{self.revision}"


class ReferenceEstimate(models.Model):
    """A panel's reference score with a comment on an answer: what its control items check.

    References belong to a panel: critical criteria are scored by every panel, and one panel's
    gold must never be read or overwritten by another's supervisor.
    """

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="references")
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT)
    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="references")
    score = models.SmallIntegerField(null=True, blank=True)
    is_na = models.BooleanField(default=False)
    comment = models.TextField(blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )

    class Meta:
        verbose_name = _("reference estimate")
        verbose_name_plural = _("reference estimates")
        constraints = [
            models.UniqueConstraint(
                fields=["answer", "criterion", "panel"], name="reference_unique_per_panel"
            )
        ]

    def __str__(self) -> str:
        return f"reference {self.answer_id}/{self.criterion_id}"


class JobKind(models.TextChoices):
    IMPORT = "import", _("import")
    ASSIGNMENTS = "assignments", _("build assignments")
    AGGREGATE = "aggregate", _("aggregation")
    EXPORT = "export", _("export")
    JUDGE_BATCH = "judge_batch", _("judge batch")
    JUDGE_REPORT = "judge_report", _("judge report")


class JobStatus(models.TextChoices):
    QUEUED = "queued", _("queued")
    RUNNING = "running", _("running")
    DONE = "done", _("done")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")


class Job(models.Model):
    """A long Celery job with progress, visible in the UI; tasks receive its id.

    annotation.jobs owns its life: `enqueue` creates it, one compare-and-set claim gives it to
    one attempt (`attempts` counts them and names the owner), the owner refreshes
    `heartbeat_at`, and the sweeper re-sends a running job whose heartbeat went stale.
    """

    kind = models.CharField(max_length=16, choices=JobKind.choices)
    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.QUEUED)
    params = models.JSONField(default=dict, blank=True)
    progress_done = models.PositiveBigIntegerField(default=0)
    progress_total = models.PositiveBigIntegerField(default=0)
    message = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    # Relative to PRIVATE_STORAGE_ROOT; set only once the file is complete.
    file_path = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # Refreshed by the owning attempt while it works; an old one means its worker died.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # host:pid of the worker that claimed the job last (for an admin reading a stuck job).
    claimed_by = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name = _("job")
        verbose_name_plural = _("jobs")
        ordering = ["-created_at"]
        # The sweeper's scan: running jobs by heartbeat.
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="job_status_heartbeat")]

    def __str__(self) -> str:
        return f"{self.kind} job {self.pk}"

    @property
    def percent(self) -> int:
        if not self.progress_total:
            return 100 if self.status == JobStatus.DONE else 0
        return min(100, int(100 * self.progress_done / self.progress_total))


class TripleAggregate(models.Model):
    """Aggregated expert verdict of one triple, recomputed by the aggregation job."""

    triple = models.OneToOneField(Triple, on_delete=models.CASCADE, related_name="aggregate")
    n_estimates = models.PositiveSmallIntegerField()
    mean = models.FloatField(null=True)
    mode = models.SmallIntegerField(null=True)
    confidence = models.FloatField(null=True)
    all_na = models.BooleanField(default=False)
    # Why the triple is out of the dataset ("" when it is in).
    excluded_reason = models.CharField(max_length=32, blank=True)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True)

    class Meta:
        verbose_name = _("triple aggregate")
        verbose_name_plural = _("triple aggregates")

    def __str__(self) -> str:
        return f"aggregate of {self.triple_id}"
