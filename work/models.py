"""The work routed to experts: triples, assignments, estimates and reserved answers."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from material.models import Answer, AnswerPair
from panels.models import Expert, Panel
from protocol.overlap import MAX_OVERLAP, MIN_OVERLAP
from taxonomy.models import ComparisonCriterion, Criterion, CriterionGroup, Rubric
from work import kinds


class TripleKind(models.TextChoices):
    """The kind of work a triple is (work.kinds names the functions each kind supplies)."""

    POINTWISE = "pointwise", _("rubric scoring")
    PAIRWISE = "pairwise", _("side-by-side comparison")


class Triple(models.Model):
    """The unit that gets estimates, routed to one panel.

    Pointwise: (instruction, answer, criterion) scored on the criterion's rubric. Pairwise:
    (instruction, pair of answers, comparison criterion) labelled with one of four options;
    `answer` is then the pair's answer A, so every answer-keyed path (reservations, blindness,
    deletion) keeps working. The check constraint below holds each kind to its fields.
    """

    # db_default as well: the bulk writers (COPY) that name only the pointwise columns still
    # write a valid row.
    kind = models.CharField(
        max_length=10,
        choices=TripleKind.choices,
        default=TripleKind.POINTWISE,
        db_default=TripleKind.POINTWISE,
    )

    # No index of its own: the unique (answer, criterion) index leads with answer_id, and every
    # index less is less work for the builder's COPY of ~170,000 triples.
    answer = models.ForeignKey(
        Answer, on_delete=models.CASCADE, related_name="triples", db_index=False
    )
    criterion = models.ForeignKey(
        Criterion, on_delete=models.PROTECT, related_name="triples", null=True, blank=True
    )
    rubric = models.ForeignKey(
        Rubric, on_delete=models.PROTECT, related_name="triples", null=True, blank=True
    )
    group = models.CharField(max_length=16, choices=CriterionGroup.choices, blank=True)
    pair = models.ForeignKey(
        AnswerPair, on_delete=models.CASCADE, related_name="triples", null=True, blank=True
    )
    comparison_criterion = models.ForeignKey(
        ComparisonCriterion,
        on_delete=models.PROTECT,
        related_name="triples",
        null=True,
        blank=True,
    )
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
            models.UniqueConstraint(
                fields=["pair", "comparison_criterion"], name="triple_pair_criterion_unique"
            ),
            models.CheckConstraint(
                condition=(
                    Q(kind="pointwise")
                    & Q(criterion__isnull=False)
                    & Q(rubric__isnull=False)
                    & Q(pair__isnull=True)
                    & Q(comparison_criterion__isnull=True)
                )
                | (
                    Q(kind="pairwise")
                    & Q(criterion__isnull=True)
                    & Q(rubric__isnull=True)
                    & Q(pair__isnull=False)
                    & Q(comparison_criterion__isnull=False)
                ),
                name="triple_fields_of_kind",
            ),
            models.CheckConstraint(
                condition=Q(required_overlap__gte=MIN_OVERLAP)
                & Q(required_overlap__lte=MAX_OVERLAP),
                name="triple_overlap_range",
            ),
        ]
        indexes = [models.Index(fields=["panel", "answer"])]

    def __str__(self) -> str:
        if self.kind == TripleKind.PAIRWISE:
            return f"pair {self.pair_id}/{self.comparison_criterion_id}"
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
    # Side-by-side work: the pair compared (its answer A is `answer`), whether this expert sees
    # it swapped (B on the left; drawn per assignment by the builder and kept, so the side is
    # never the same for every annotator and labels can be put back), and the free comment on
    # errors outside the criteria list.
    pair = models.ForeignKey(
        AnswerPair, on_delete=models.CASCADE, related_name="assignments", null=True, blank=True
    )
    swapped = models.BooleanField(default=False, db_default=False)
    comment = models.TextField(blank=True, default="", db_default="")

    class Meta:
        verbose_name = _("assignment")
        verbose_name_plural = _("assignments")
        constraints = [
            models.UniqueConstraint(
                fields=["expert", "answer", "panel", "kind"],
                condition=Q(pair__isnull=True),
                name="assignment_unique",
            ),
            # One answer may be in several pairs (the all-pairs scheme): a pair is the key.
            models.UniqueConstraint(
                fields=["expert", "pair", "panel", "kind"],
                condition=Q(pair__isnull=False),
                name="assignment_pair_unique",
            ),
        ]
        indexes = [
            models.Index(fields=["expert", "status"]),
            models.Index(fields=["status", "reserved_until"]),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk}"

    @property
    def task_kind(self) -> str:
        """The kind of its work (work.kinds): the kind whose item it holds."""
        return kinds.kind_of(self)


class EstimateStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    DRAFT = "draft", _("draft")
    SUBMITTED = "submitted", _("submitted")
    SKIPPED = "skipped", _("skipped after a critical violation")


class ReviewStatus(models.TextChoices):
    """A supervisor's review of a submitted estimate (work.review)."""

    NONE = "", _("not reviewed")
    RETURNED = "returned", _("returned to the expert")
    ACCEPTED = "accepted", _("accepted")


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
    # (panels.services.scoring_material_create), and release (which deletes estimates); drafts
    # and submissions never write it (tests/work/test_assignments.py checks the equality after a
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
    # Side-by-side: the label in the pair's own orientation (protocol.pairwise: "a", "b",
    # "both_good", "both_bad"), put back from the side shown at submit; never the side shown.
    label = models.CharField(max_length=10, blank=True, default="", db_default="")
    # The rubric version the score was given under: NULL until submitted, then the triple's
    # rubric at that moment (work.services). It is a record meant to outlive a change of
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
    # The supervisor's review (work.review): returned with a comment (the assignment reopens
    # for the expert; the resubmission clears it) or accepted. db_default: the bulk COPY
    # writers of the builder name only their own columns.
    review_status = models.CharField(
        max_length=8,
        choices=ReviewStatus.choices,
        blank=True,
        default=ReviewStatus.NONE,
        db_default=ReviewStatus.NONE,
    )
    review_comment = models.TextField(blank=True, default="", db_default="")
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        db_index=False,
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)

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
                condition=~Q(status="submitted")
                | Q(is_na=True)
                | Q(score__isnull=False)
                | ~Q(label=""),
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
    label = models.CharField(max_length=10, blank=True, default="", db_default="")
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


class ReservedAnswer(models.Model):
    """An answer that is exam or control material, or a participant's submission: never real
    work (a submission's answers become work when an admin sends them to the panels).

    Exam and control answers are frozen copies (Answer rows of their own), so their triples and
    estimates never take slots from real work. The assignment builder skips every answer listed
    here. A control item's source answer is not listed: it stays real work of the other panels.
    """

    class Purpose(models.TextChoices):
        EXAM = "exam", _("exam")
        CONTROL = "control", _("control item")
        # A participant's submission: judged at once, expert work only when an admin sends it.
        SUBMISSION = "submission", _("submission")

    answer = models.OneToOneField(
        "material.Answer", on_delete=models.CASCADE, primary_key=True, related_name="reserved"
    )
    purpose = models.CharField(max_length=16, choices=Purpose.choices)
    source = models.ForeignKey(
        "material.Answer",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="reserved_copies",
    )

    class Meta:
        verbose_name = _("reserved answer")
        verbose_name_plural = _("reserved answers")

    def __str__(self) -> str:
        return f"{self.purpose} copy {self.answer_id}"


class FlagKind(models.TextChoices):
    SKIP = "skip", _("skipped")
    BROKEN = "broken", _("flagged as broken")


class FlagReason(models.TextChoices):
    GARBLED = "garbled", _("garbled answer")
    WRONG_TASK = "wrong_task", _("wrong task")
    OFFENSIVE = "offensive", _("offensive content beyond the task")
    OTHER = "other", _("other")


class FlagResolution(models.TextChoices):
    FIXED = "fixed", _("fixed")
    IGNORED = "ignored", _("ignored")


class Flag(models.Model):
    """An expert skipped an answer or flagged it as broken: a supervisor's queue item.

    Either kind released the expert's assignment (work.flags.assignment_flag); the builder never
    gives that (answer, panel) back to the same expert (work.assignments._fill_slots).
    """

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="flags")
    # A copy of assignment.expert_id, for the per-expert counts of the console.
    expert = models.ForeignKey(Expert, on_delete=models.CASCADE, related_name="flags")
    kind = models.CharField(max_length=8, choices=FlagKind.choices)
    reason = models.CharField(max_length=16, choices=FlagReason.choices)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(max_length=8, choices=FlagResolution.choices, blank=True)
    resolution_note = models.TextField(blank=True)

    class Meta:
        verbose_name = _("flag")
        verbose_name_plural = _("flags")
        indexes = [models.Index(fields=["resolved_at", "created_at"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.assignment_id}"
