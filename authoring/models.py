"""Instruction writing (POLLUX §3.2): campaigns with a versioned writing plan, the authors' slots
and what happens to each instruction on its way to the material — revisions, reviews, the
editorial step and the supervisor's originality check.

The rules (quotas, the state machine, the form's checks) are protocol.authoring's; this module
only stores.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from jobs.models import Job
from material.models import Instruction
from panels.models import Expert, Panel
from protocol import authoring as rules
from taxonomy.models import Complexity, FunctionalStyle, Task


class Campaign(models.Model):
    """One writing effort (POLLUX wrote one: 2,100 instructions by 35 task groups)."""

    name = models.CharField(max_length=200, unique=True)
    # Share of review rounds given to two reviewers, to measure their agreement (POLLUX: 0.81).
    double_review_share = models.FloatField(default=0.1)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("writing campaign")
        verbose_name_plural = _("writing campaigns")
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(double_review_share__gte=0) & Q(double_review_share__lte=1),
                name="campaign_double_review_share_range",
            )
        ]

    def __str__(self) -> str:
        return self.name


class PlanVersion(models.Model):
    """One version of a campaign's writing plan. Never edited: a change is a new version with
    all its quotas, so the dashboard of any day can be read against the plan of that day."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="plans")
    number = models.PositiveIntegerField()
    note = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("writing plan version")
        verbose_name_plural = _("writing plan versions")
        ordering = ["campaign", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "number"], name="plan_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.campaign} v{self.number}"


class Quota(models.Model):
    """How many instructions of one leaf task (a subtype) and level a panel writes under one
    plan version. Entered per task group and level, spread uniformly down the task tree."""

    plan = models.ForeignKey(PlanVersion, on_delete=models.CASCADE, related_name="quotas")
    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="+")
    # The task group (a top-level task, one of the 35) the count was entered for.
    group = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="+")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="+")
    complexity = models.CharField(max_length=8, choices=Complexity.choices)
    count = models.PositiveIntegerField()

    class Meta:
        verbose_name = _("quota")
        verbose_name_plural = _("quotas")
        constraints = [
            models.UniqueConstraint(
                fields=["plan", "panel", "task", "complexity"], name="quota_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.task_id}/{self.complexity}: {self.count}"


class SlotState(models.TextChoices):
    DRAFT = rules.DRAFT, _("draft")
    SUBMITTED = rules.SUBMITTED, _("in review")
    RETURNED = rules.RETURNED, _("returned")
    EDITING = rules.EDITING, _("editorial step")
    ORIGINALITY = rules.ORIGINALITY, _("originality check")
    ACCEPTED = rules.ACCEPTED, _("accepted")


class Slot(models.Model):
    """An author's slot — task, subtype and level fixed by the plan — and the instruction being
    written in it, up to its acceptance as material."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="slots")
    panel = models.ForeignKey(Panel, on_delete=models.PROTECT, related_name="+")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="+")
    complexity = models.CharField(max_length=8, choices=Complexity.choices)
    author = models.ForeignKey(Expert, on_delete=models.PROTECT, related_name="authoring_slots")
    state = models.CharField(
        max_length=12, choices=SlotState.choices, default=SlotState.DRAFT, db_index=True
    )
    text = models.TextField(blank=True)
    style = models.ForeignKey(
        FunctionalStyle, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    ethics_flag = models.BooleanField(default=False)
    # {device key: count} (protocol.authoring.STYLISTIC_DEVICES).
    devices = models.JSONField(default=dict, blank=True)
    reference_answer = models.TextField(blank=True)
    # Seconds the author spent writing, summed over autosaves (each bounded by the wall time
    # since the previous save, so a forged figure cannot inflate it).
    seconds_spent = models.PositiveIntegerField(default=0)
    # The review round in progress (1 for the first submission; +1 after each return).
    round = models.PositiveSmallIntegerField(default=0)
    double_review = models.BooleanField(default=False)
    instruction = models.OneToOneField(
        Instruction, on_delete=models.SET_NULL, null=True, blank=True, related_name="slot"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    saved_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("author slot")
        verbose_name_plural = _("author slots")
        ordering = ["-saved_at"]
        indexes = [models.Index(fields=["campaign", "panel", "task", "complexity"])]

    def __str__(self) -> str:
        return f"slot {self.pk} ({self.task.path}, {self.complexity})"

    @property
    def editable_by_author(self) -> bool:
        return self.state in rules.AUTHOR_EDITABLE


class Revision(models.Model):
    """A stored version of an instruction's text: each submission and each editorial edit."""

    class Kind(models.TextChoices):
        SUBMISSION = "submission", _("submitted by the author")
        EDIT = "edit", _("editorial edit")

    slot = models.ForeignKey(Slot, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    kind = models.CharField(max_length=12, choices=Kind.choices)
    text = models.TextField()
    reference_answer = models.TextField(blank=True)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    note = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("revision")
        verbose_name_plural = _("revisions")
        ordering = ["slot", "number"]
        constraints = [
            models.UniqueConstraint(fields=["slot", "number"], name="revision_number_unique")
        ]

    def __str__(self) -> str:
        return f"revision {self.number} of slot {self.slot_id}"


class Review(models.Model):
    """A reviewer's verdict on one round of an instruction (accept, or return with comments)."""

    class Verdict(models.TextChoices):
        ACCEPT = "accept", _("accept")
        RETURN = "return", _("return for revision")

    slot = models.ForeignKey(Slot, on_delete=models.CASCADE, related_name="reviews")
    round = models.PositiveSmallIntegerField()
    reviewer = models.ForeignKey(Expert, on_delete=models.PROTECT, related_name="+")
    verdict = models.CharField(max_length=8, choices=Verdict.choices)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = pgettext_lazy("instruction review", "review")
        verbose_name_plural = pgettext_lazy("instruction review", "reviews")
        ordering = ["slot", "round", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["slot", "round", "reviewer"], name="review_once_per_round"
            )
        ]

    def __str__(self) -> str:
        return f"review of slot {self.slot_id}, round {self.round}"


class SlotEvent(models.Model):
    """The history of a slot: every move of the state machine, by whom, with the note."""

    slot = models.ForeignKey(Slot, on_delete=models.CASCADE, related_name="events")
    action = models.CharField(max_length=16)
    state_from = models.CharField(max_length=12)
    state_to = models.CharField(max_length=12)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    note = models.TextField(blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("slot event")
        verbose_name_plural = _("slot events")
        ordering = ["slot", "at", "pk"]

    def __str__(self) -> str:
        return f"{self.action} on slot {self.slot_id}"

    @property
    def action_label(self) -> str:
        """The step in the page's language (the stored action is the state machine's key)."""
        return str(SLOT_ACTIONS.get(self.action, self.action))

    @property
    def state_to_label(self) -> str:
        return str(dict(SlotState.choices).get(self.state_to, self.state_to))


# The steps of a slot's history, as its page names them (protocol.authoring.TRANSITIONS, and
# "take" for the author taking the slot).
SLOT_ACTIONS = {
    "take": _("slot taken"),
    "submit": _("sent for review"),
    "accept": _("accepted by the reviewer"),
    "return": _("returned to the author"),
    "proofread": _("proofread"),
    "original": _("found original"),
    "not_original": _("found not original"),
}


class ReferenceCorpus(models.Model):
    """Texts an admin uploads for the originality check (e.g. a public dataset the instructions
    must not copy from)."""

    name = models.CharField(max_length=200, unique=True)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("reference corpus")
        verbose_name_plural = _("reference corpora")

    def __str__(self) -> str:
        return self.name


class ReferenceText(models.Model):
    corpus = models.ForeignKey(ReferenceCorpus, on_delete=models.CASCADE, related_name="texts")
    external_id = models.CharField(max_length=200, blank=True)
    text = models.TextField()

    class Meta:
        verbose_name = _("reference text")
        verbose_name_plural = _("reference texts")

    def __str__(self) -> str:
        return self.external_id or f"reference text {self.pk}"


class OriginalityCheck(models.Model):
    """The near-duplicate search for one round of one instruction and the supervisor's verdict.

    `matches`: [{"source": "instruction"|"slot"|"reference", "id": .., "label": ..,
    "similarity": exact Jaccard of word 5-shingles, "excerpt": ..}], closest first."""

    class Verdict(models.TextChoices):
        PENDING = "", _("no verdict yet")
        ORIGINAL = "original", _("original")
        NOT_ORIGINAL = "not_original", _("not original")

    slot = models.ForeignKey(Slot, on_delete=models.CASCADE, related_name="checks")
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    compared = models.PositiveIntegerField(default=0)
    matches = models.JSONField(default=list, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    verdict = models.CharField(max_length=12, choices=Verdict.choices, blank=True, default="")
    verdict_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    verdict_at = models.DateTimeField(null=True, blank=True)
    comment = models.TextField(blank=True)

    class Meta:
        verbose_name = _("originality check")
        verbose_name_plural = _("originality checks")
        ordering = ["slot", "-pk"]

    def __str__(self) -> str:
        return f"originality check {self.pk} of slot {self.slot_id}"

    @property
    def closest(self) -> float:
        return float(self.matches[0]["similarity"]) if self.matches else 0.0


class BaselineAnswer(models.Model):
    """A human-baseline answer (POLLUX: 140 instruction–answer pairs written by panel experts):
    an expert of the panel answers a sampled instruction; submitted, it enters the pool as the
    "human" model's answer, and its author never scores it (work.hooks.excluded_experts)."""

    class State(models.TextChoices):
        DRAFT = "draft", _("draft")
        SUBMITTED = "submitted", _("submitted")

    panel = models.ForeignKey(Panel, on_delete=models.PROTECT, related_name="+")
    instruction = models.ForeignKey(Instruction, on_delete=models.CASCADE, related_name="+")
    expert = models.ForeignKey(Expert, on_delete=models.PROTECT, related_name="baseline_answers")
    text = models.TextField(blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.DRAFT)
    seconds_spent = models.PositiveIntegerField(default=0)
    answer = models.OneToOneField(
        "material.Answer", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    saved_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("human-baseline answer")
        verbose_name_plural = _("human-baseline answers")
        constraints = [
            models.UniqueConstraint(fields=["instruction"], name="baseline_one_per_instruction")
        ]

    def __str__(self) -> str:
        return f"human-baseline answer to instruction {self.instruction_id}"
