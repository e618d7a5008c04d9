"""Leaderboards: a benchmark's models ranked by the experts' verdicts and by each judge's, as
snapshots computed by a job, with a visibility an admin sets (audited)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from jobs.models import Job
from judging.models import JudgeConfig
from material.models import Instruction
from protocol.critical import DEFAULT_GATE_RULE, GATE_ANY, GATE_MAJORITY, GATE_POLLUX
from taxonomy.models import TaskGroup


class Visibility(models.TextChoices):
    PRIVATE = "private", _("private (staff)")
    INTERNAL = "internal", _("internal (logged-in users)")
    PUBLIC = "public", _("public (anyone, read-only)")


class GateRule(models.TextChoices):
    """What a critical criterion's violation votes do to an answer (protocol.critical.gates,
    .drops; docs/leaderboards.md has a worked example of each)."""

    POLLUX = GATE_POLLUX, _("POLLUX: an answer with a violation vote leaves the means")
    ANY = GATE_ANY, _("any vote: an answer with a violation vote scores 0 on every criterion")
    MAJORITY = (
        GATE_MAJORITY,
        _(
            "majority: an answer most of whose votes on a critical criterion are violations "
            "scores 0 on every criterion"
        ),
    )


class Leaderboard(models.Model):
    """One benchmark's leaderboard: the answers to instructions of its task groups (all task
    groups when none is chosen)."""

    slug = models.SlugField(max_length=64, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    visibility = models.CharField(
        max_length=8, choices=Visibility.choices, default=Visibility.PRIVATE
    )
    task_groups = models.ManyToManyField(TaskGroup, blank=True, related_name="+")
    # The default is POLLUX's own rule, so that a board's means can be set beside the paper's
    # tables; a board made before the setting keeps the rule it was computed with ("any").
    gate_rule = models.CharField(
        _("critical gate rule"), max_length=8, choices=GateRule.choices, default=DEFAULT_GATE_RULE
    )
    # Participants' submissions (the submissions app): whether the board takes them, the judge
    # configuration that scores them against the private references, the inference settings
    # every submission is expected to use (one that differs is flagged, not refused) and how
    # many a participant may upload a day.
    accepts_submissions = models.BooleanField(_("accepts submissions"), default=False)
    judge_config = models.ForeignKey(
        JudgeConfig,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("designated judge"),
    )
    fixed_settings = models.JSONField(_("fixed inference settings"), default=dict, blank=True)
    submissions_per_day = models.PositiveSmallIntegerField(
        _("submissions per participant per day"), default=3
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("leaderboard")
        verbose_name_plural = _("leaderboards")
        ordering = ["title"]

    def __str__(self) -> str:
        return self.title


class BoardVersion(models.Model):
    """A version of a board's benchmark, frozen when an admin cuts it (leaderboards.versions):
    its items (VersionItem: each instruction with its text, reference answer, catalogue place
    and criteria as they were), the judge configuration that scores submissions (a saved
    configuration never changes: an edit is a new one), the gate and aggregation rules and the
    inference settings. Nothing that happens to the material later changes it; public inputs,
    submissions, snapshots and their scores belong to one version. The board's own settings
    are those of the next version to be cut."""

    leaderboard = models.ForeignKey(Leaderboard, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    note = models.TextField(_("note"), blank=True)
    # {"added": [ids], "removed": [ids], "changed": [{"instruction": id, "fields": [...]}],
    #  "rules": [{"setting": name, "old": value, "new": value}]}: against the version before.
    changelog = models.JSONField(default=dict, blank=True)
    judge_config = models.ForeignKey(
        JudgeConfig, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    gate_rule = models.CharField(max_length=8, choices=GateRule.choices, default=DEFAULT_GATE_RULE)
    # The aggregation's rule 3 (dataset.aggregation.AggregationSettings.min_estimates).
    min_estimates = models.PositiveSmallIntegerField(default=2)
    fixed_settings = models.JSONField(default=dict, blank=True)
    # The task types the items were chosen by (empty: every POLLUX task), for the changelog.
    task_groups = models.JSONField(default=list, blank=True)
    # A closed test: its inputs are never downloadable (but by admins); participants give their
    # model's endpoint and the platform generates the answers (submissions.endpoints).
    closed = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("benchmark version")
        verbose_name_plural = _("benchmark versions")
        ordering = ["-number"]
        constraints = [
            models.UniqueConstraint(fields=["leaderboard", "number"], name="board_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.leaderboard_id} v{self.number}"


class VersionItem(models.Model):
    """One instruction of a version, copied as it was when the version was cut: the public
    inputs are written from these copies, so a later edit of the instruction changes nothing
    of the version. PROTECT: an instruction of a version cannot be deleted (a submission to the
    version stores its answers against it)."""

    version = models.ForeignKey(BoardVersion, on_delete=models.CASCADE, related_name="items")
    instruction = models.ForeignKey(Instruction, on_delete=models.PROTECT, related_name="+")
    text = models.TextField()
    reference_answer = models.TextField(blank=True)
    task_type = models.CharField(max_length=300, blank=True)
    task_path = models.TextField(blank=True)
    complexity = models.CharField(max_length=8, blank=True)
    style = models.CharField(max_length=64, blank=True)
    # The criteria (ids, in order) the instruction's answers are scored on.
    criteria = models.JSONField(default=list)

    class Meta:
        ordering = ["instruction_id"]
        constraints = [
            models.UniqueConstraint(fields=["version", "instruction"], name="version_item_unique")
        ]

    def __str__(self) -> str:
        return f"{self.version} #{self.instruction_id}"


class LeaderboardSnapshot(models.Model):
    """The computed rows of one version of a leaderboard (leaderboards.services.snapshot_data):
    pages read the version's latest snapshot, never the verdicts."""

    leaderboard = models.ForeignKey(Leaderboard, on_delete=models.CASCADE, related_name="snapshots")
    version = models.ForeignKey(
        BoardVersion, on_delete=models.CASCADE, null=True, blank=True, related_name="snapshots"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    data = models.JSONField(default=dict)
    seconds = models.FloatField(default=0)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.leaderboard_id} @ {self.created_at:%Y-%m-%d %H:%M}"


class VisibilityChange(models.Model):
    """The audit of publishing: who changed a leaderboard's visibility, from what, and why."""

    leaderboard = models.ForeignKey(Leaderboard, on_delete=models.CASCADE, related_name="changes")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    old = models.CharField(max_length=8, choices=Visibility.choices)
    new = models.CharField(max_length=8, choices=Visibility.choices)
    reason = models.CharField(max_length=500, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-pk"]

    def __str__(self) -> str:
        return f"{self.leaderboard_id}: {self.old} → {self.new}"
