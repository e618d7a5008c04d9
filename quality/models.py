"""Quality of experts' work: exams, control (gold) items, reference scores, standings."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from material.models import Answer
from panels.models import Expert, Panel
from protocol.pairwise import Label
from taxonomy.models import ComparisonCriterion, Criterion, Rubric
from work import kinds


class ExamMode(models.TextChoices):
    # A qualifying exam grants the panel's qualification on a pass; a practice exam never does:
    # its references and comments are shown after each item (training before the exam).
    QUALIFYING = "qualifying", _("qualifying exam")
    PRACTICE = "practice", _("practice")


class Exam(models.Model):
    """One version of a panel's qualification exam (or of its practice exam: `mode`).

    Versions of the same exam share `lineage`. A version that has attempts is never edited:
    the edit services clone it into the next version, so a graded attempt keeps its material,
    references and rules.
    """

    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="exams")
    lineage = models.UUIDField(db_index=True)
    version = models.PositiveIntegerField(default=1)
    title = models.CharField(max_length=200)
    mode = models.CharField(max_length=12, choices=ExamMode.choices, default=ExamMode.QUALIFYING)
    pass_threshold = models.FloatField(default=0.7)
    # ±tolerance counts as a match on 0..4 scales only; binary and 0/1/2 scales stay exact.
    tolerance = models.PositiveSmallIntegerField(default=0, choices=[(0, "0"), (1, "±1")])
    max_attempts = models.PositiveSmallIntegerField(default=3)
    retake_wait_hours = models.PositiveIntegerField(default=24)
    # Criterion groups a pass qualifies for; empty means every group of the panel.
    criterion_groups = models.JSONField(default=list, blank=True)
    is_active = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("exam")
        verbose_name_plural = _("exams")
        ordering = ["panel", "lineage", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["lineage", "version"], name="exam_version_unique"),
            models.CheckConstraint(
                condition=models.Q(pass_threshold__gte=0) & models.Q(pass_threshold__lte=1),
                name="exam_threshold_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.title} v{self.version}"

    @property
    def is_practice(self) -> bool:
        return self.mode == ExamMode.PRACTICE


class ExamItem(models.Model):
    """One question of an exam: an answer scored on its rubric criteria (pointwise), or a pair
    of answers compared side by side (pairwise). Either is a frozen copy of its source, shared
    by the exam's versions (its text never changes)."""

    exam = models.ForeignKey(Exam, on_delete=models.CASCADE, related_name="items")
    answer = models.ForeignKey(
        "material.Answer", on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    # A frozen copy of a gold pair (both answers copied and listed as exam material).
    pair = models.ForeignKey(
        "material.AnswerPair", on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        verbose_name = _("exam item")
        verbose_name_plural = _("exam items")
        ordering = ["exam", "position", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["exam", "answer"], name="exam_item_unique"),
            models.UniqueConstraint(
                fields=["exam", "pair"],
                condition=models.Q(pair__isnull=False),
                name="exam_item_pair_unique",
            ),
            # Exactly one question: an answer or a pair.
            models.CheckConstraint(
                condition=models.Q(answer__isnull=False, pair__isnull=True)
                | models.Q(answer__isnull=True, pair__isnull=False),
                name="exam_item_answer_or_pair",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.exam_id}:{self.task_kind} {self.pair_id or self.answer_id}"

    @property
    def task_kind(self) -> str:
        """The kind of the item's work (work.kinds): the kind whose item it holds."""
        return kinds.kind_of(self)

    # A pointwise item always has its answer (`exam_item_answer_or_pair`): a typed accessor.
    @property
    def scored_answer_id(self) -> int:
        assert self.answer_id is not None, "a side-by-side item has no single answer"
        return self.answer_id


class ReferenceScore(models.Model):
    """A reference score with a comment on one criterion: the one model of both kinds of gold.

    Either of an exam item (`item`, with the rubric version the reference was written against:
    the candidate scores on it too), or a panel's reference on an answer (`answer` and `panel`):
    what its control items check. Panel references belong to a panel: critical criteria are
    scored by every panel, and one panel's gold must never be read or overwritten by another's
    supervisor.
    """

    item = models.ForeignKey(
        ExamItem, on_delete=models.CASCADE, related_name="references", null=True, blank=True
    )
    answer = models.ForeignKey(
        Answer, on_delete=models.CASCADE, related_name="references", null=True, blank=True
    )
    panel = models.ForeignKey(
        Panel, on_delete=models.CASCADE, related_name="references", null=True, blank=True
    )
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="+")
    rubric = models.ForeignKey(
        Rubric, on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    score = models.SmallIntegerField(null=True, blank=True)
    is_na = models.BooleanField(default=False)
    comment = models.TextField(blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )

    class Meta:
        verbose_name = _("reference score")
        verbose_name_plural = _("reference scores")
        constraints = [
            models.UniqueConstraint(
                fields=["item", "criterion"],
                condition=models.Q(item__isnull=False),
                name="exam_reference_unique",
            ),
            models.UniqueConstraint(
                fields=["answer", "criterion", "panel"],
                condition=models.Q(item__isnull=True),
                name="reference_unique_per_panel",
            ),
            # Exactly one owner: an exam item (with its rubric), or an answer of a panel.
            models.CheckConstraint(
                condition=(
                    models.Q(item__isnull=False, rubric__isnull=False)
                    & models.Q(answer__isnull=True, panel__isnull=True)
                )
                | models.Q(item__isnull=True, answer__isnull=False, panel__isnull=False),
                name="reference_one_owner",
            ),
            models.CheckConstraint(
                condition=models.Q(item__isnull=True)
                | models.Q(is_na=True)
                | models.Q(score__isnull=False),
                name="exam_reference_has_value",
            ),
        ]

    def __str__(self) -> str:
        owner = f"item {self.item_id}" if self.item_id else f"answer {self.answer_id}"
        return f"reference {owner}/{self.criterion_id}"

    # An exam reference always has its item and rubric (`reference_one_owner`): typed accessors.
    @property
    def exam_item_id(self) -> int:
        assert self.item_id is not None, "not an exam reference"
        return self.item_id

    @property
    def exam_item(self) -> ExamItem:
        assert self.item is not None, "not an exam reference"
        return self.item

    @property
    def exam_rubric(self) -> Rubric:
        assert self.rubric is not None, "not an exam reference"
        return self.rubric


# In the pair's orientation: "A" is the pair's answer A, whatever side a candidate was shown.
LABEL_CHOICES = [
    (Label.A.value, _("A is better")),
    (Label.B.value, _("B is better")),
    (Label.BOTH_GOOD.value, _("Both are good")),
    (Label.BOTH_BAD.value, _("Both are bad")),
]


class ReferenceLabel(models.Model):
    """The reference label of a side-by-side gold pair on one comparison criterion: the one model
    of both kinds of pairwise gold.

    Either of an exam item (`item`), or of a panel's control pair (`control_item`): the same
    split as ReferenceScore's. In the pair's own orientation (like `work.Estimate.label`), so
    the candidate's placement never matters. A model of its own rather than more nullable
    columns on ReferenceScore: ReferenceScore's criterion, rubric and score stay required for
    every row it holds.
    """

    item = models.ForeignKey(
        ExamItem,
        on_delete=models.CASCADE,
        related_name="reference_labels",
        null=True,
        blank=True,
    )
    control_item = models.ForeignKey(
        "ControlItem",
        on_delete=models.CASCADE,
        related_name="reference_labels",
        null=True,
        blank=True,
    )
    comparison_criterion = models.ForeignKey(
        ComparisonCriterion, on_delete=models.PROTECT, related_name="+"
    )
    label = models.CharField(max_length=10, choices=LABEL_CHOICES)
    comment = models.TextField(blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )

    class Meta:
        verbose_name = _("reference label")
        verbose_name_plural = _("reference labels")
        constraints = [
            models.UniqueConstraint(
                fields=["item", "comparison_criterion"], name="exam_reference_label_unique"
            ),
            models.UniqueConstraint(
                fields=["control_item", "comparison_criterion"],
                name="control_reference_label_unique",
            ),
            models.CheckConstraint(
                condition=models.Q(label__in=[v.value for v in Label]),
                name="exam_reference_label_valid",
            ),
            # Exactly one owner: an exam item or a control item.
            models.CheckConstraint(
                condition=models.Q(item__isnull=False, control_item__isnull=True)
                | models.Q(item__isnull=True, control_item__isnull=False),
                name="reference_label_one_owner",
            ),
        ]

    def __str__(self) -> str:
        owner = f"item {self.item_id}" if self.item_id else f"control {self.control_item_id}"
        return f"reference label {owner}/{self.comparison_criterion_id}"

    # An exam reference label always has its item (`reference_label_one_owner`): typed accessors.
    @property
    def exam_item_id(self) -> int:
        assert self.item_id is not None, "not an exam reference label"
        return self.item_id

    @property
    def exam_item(self) -> ExamItem:
        assert self.item is not None, "not an exam reference label"
        return self.item


class ExamAttempt(models.Model):
    """One expert's round of one exam version.

    `mode` is the exam's mode when the round started, fixed for good: a practice round stays
    practice (no verdict, never counted against the exam's attempts or retake wait) and a
    qualifying one keeps its verdict and the qualification it gave, whatever mode the exam is
    switched to later. Every rule about an attempt reads its own mode, never its exam's.
    """

    exam = models.ForeignKey(Exam, on_delete=models.PROTECT, related_name="attempts")
    expert = models.ForeignKey(Expert, on_delete=models.CASCADE, related_name="exam_attempts")
    mode = models.CharField(max_length=12, choices=ExamMode.choices)
    # 1, 2, ... across every version of the exam (retakes are counted per lineage).
    number = models.PositiveSmallIntegerField()
    started_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    n_total = models.PositiveIntegerField(default=0)
    n_matched = models.PositiveIntegerField(default=0)
    coefficient = models.FloatField(null=True, blank=True)
    passed = models.BooleanField(null=True)
    override_passed = models.BooleanField(null=True)
    override_reason = models.TextField(blank=True)
    override_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    override_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("exam attempt")
        verbose_name_plural = _("exam attempts")
        ordering = ["-started_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["exam", "expert", "number"], name="exam_attempt_number_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(mode__in=ExamMode.values), name="exam_attempt_mode_valid"
            ),
        ]
        indexes = [models.Index(fields=["expert", "exam"])]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.expert} on {self.exam}"

    @property
    def is_practice(self) -> bool:
        return self.mode == ExamMode.PRACTICE

    @property
    def graded(self) -> bool:
        return self.coefficient is not None

    @property
    def verdict(self) -> bool | None:
        """The effective verdict: the supervisor's override wins over the automatic grade."""
        return self.override_passed if self.override_passed is not None else self.passed


class ExamAttemptItem(models.Model):
    """The candidate's own frozen copy of one exam item, scored through a kind="exam" assignment.

    Each attempt gets fresh copies so estimates of different attempts (and retakes by the same
    expert) never collide on the (triple, expert) and (triple, slot) constraints.
    """

    attempt = models.ForeignKey(ExamAttempt, on_delete=models.CASCADE, related_name="items")
    item = models.ForeignKey(ExamItem, on_delete=models.PROTECT, related_name="+")
    answer = models.OneToOneField("material.Answer", on_delete=models.CASCADE, related_name="+")
    assignment = models.OneToOneField(
        "work.Assignment", on_delete=models.CASCADE, related_name="exam_item"
    )

    class Meta:
        verbose_name = _("exam attempt item")
        verbose_name_plural = _("exam attempt items")

    def __str__(self) -> str:
        return f"{self.attempt_id}:{self.item_id}"


class ControlSettings(models.Model):
    """How control (gold) items are mixed into a panel's queues and when experts are paused."""

    panel = models.OneToOneField(Panel, on_delete=models.CASCADE, related_name="control_settings")
    enabled = models.BooleanField(default=True)
    # Control assignments per work assignment (0.05 = one in twenty).
    rate = models.FloatField(default=0.05)
    accuracy_threshold = models.FloatField(default=0.7)
    min_items = models.PositiveSmallIntegerField(default=5)
    tolerance = models.PositiveSmallIntegerField(default=0, choices=[(0, "0"), (1, "±1")])

    class Meta:
        verbose_name = _("control settings")
        verbose_name_plural = _("control settings")

    def __str__(self) -> str:
        return f"control settings of {self.panel_id}"


class ControlItem(models.Model):
    """A gold item of a panel: an answer, or a side-by-side pair.

    An answer's reference is the panel's ReferenceScores of it. The answer stays real work for
    every other panel. In its own panel it is gold only: the builder gives the panel no new work
    on it, and making it a control item releases the panel's open (unsubmitted) work on it (see
    quality.control.control_item_add).

    A pair (a source pair of the panel, unanimous on every criterion:
    quality.kind_pairwise.control_pairs_add_from_gold) has its ReferenceLabels; its labelling is
    complete, so no work is taken from anyone. Each delivery is a frozen copy of it (like an
    answer's).
    """

    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="control_items")
    answer = models.ForeignKey(
        "material.Answer", on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    pair = models.ForeignKey(
        "material.AnswerPair", on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    is_active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("control item")
        verbose_name_plural = _("control items")
        constraints = [
            models.UniqueConstraint(fields=["panel", "answer"], name="control_item_unique"),
            models.UniqueConstraint(
                fields=["panel", "pair"],
                condition=models.Q(pair__isnull=False),
                name="control_item_pair_unique",
            ),
            # Exactly one gold item: an answer or a pair.
            models.CheckConstraint(
                condition=models.Q(answer__isnull=False, pair__isnull=True)
                | models.Q(answer__isnull=True, pair__isnull=False),
                name="control_item_answer_or_pair",
            ),
        ]

    def __str__(self) -> str:
        return f"control {self.task_kind} {self.pair_id or self.answer_id} in {self.panel_id}"

    @property
    def task_kind(self) -> str:
        """The kind of the item's work (work.kinds): the kind whose item it holds."""
        return kinds.kind_of(self)

    # A pointwise item always has its answer (`control_item_answer_or_pair`): a typed accessor.
    @property
    def gold_answer_id(self) -> int:
        assert self.answer_id is not None, "a side-by-side control item has no single answer"
        return self.answer_id


class ControlDelivery(models.Model):
    """One control item given to one expert, and its grade: on a copy of the gold answer, or of
    the gold pair (`answer` is then the copy's answer A, as a pairwise triple's answer is)."""

    item = models.ForeignKey(ControlItem, on_delete=models.CASCADE, related_name="deliveries")
    expert = models.ForeignKey(Expert, on_delete=models.CASCADE, related_name="control_deliveries")
    answer = models.OneToOneField("material.Answer", on_delete=models.CASCADE, related_name="+")
    assignment = models.OneToOneField(
        "work.Assignment", on_delete=models.CASCADE, related_name="control_delivery"
    )
    n_total = models.PositiveIntegerField(default=0)
    n_matched = models.PositiveIntegerField(default=0)
    graded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("control delivery")
        verbose_name_plural = _("control deliveries")
        constraints = [
            models.UniqueConstraint(fields=["item", "expert"], name="control_delivery_unique")
        ]
        indexes = [models.Index(fields=["expert", "graded_at"])]

    def __str__(self) -> str:
        return f"control {self.item_id} for {self.expert_id}"


class ControlStanding(models.Model):
    """An expert's running accuracy on control items of a panel, since the last resume."""

    expert = models.ForeignKey(Expert, on_delete=models.CASCADE, related_name="control_standings")
    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="control_standings")
    since = models.DateTimeField(null=True, blank=True)
    n_items = models.PositiveIntegerField(default=0)
    n_total = models.PositiveIntegerField(default=0)
    n_matched = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("control standing")
        verbose_name_plural = _("control standings")
        constraints = [
            models.UniqueConstraint(fields=["expert", "panel"], name="control_standing_unique")
        ]

    def __str__(self) -> str:
        return f"{self.expert_id} in {self.panel_id}: {self.accuracy}"

    @property
    def accuracy(self) -> float | None:
        return self.n_matched / self.n_total if self.n_total else None
