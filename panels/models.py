"""Panels of experts, their responsibilities, experts' profiles, membership and audit."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from taxonomy.models import BilingualMixin, FunctionalStyle, Task


class Panel(BilingualMixin, models.Model):
    """A panel of experts and what it is responsible for (editable by admins).

    Routing (see work.routing): Task-specific criteria go to the panel owning the task,
    Domain-specific ones to the panel of the instruction's functional style, and General,
    Subjective and Critical ones to the panels listing those groups in `criterion_groups`.
    """

    number = models.PositiveSmallIntegerField(unique=True)
    key = models.SlugField(max_length=64, unique=True)
    name_en = models.CharField(max_length=200)
    name_ru = models.CharField(max_length=200)
    tasks = models.ManyToManyField(Task, blank=True, related_name="panels")
    styles = models.ManyToManyField(FunctionalStyle, blank=True, related_name="panels")
    # General / Subjective / Critical groups this panel scores for every answer.
    criterion_groups = models.JSONField(default=list, blank=True)
    supervisors = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="supervised_panels"
    )

    class Meta:
        verbose_name = _("panel")
        verbose_name_plural = _("panels")
        ordering = ["number"]

    def __str__(self) -> str:
        return f"{self.number} {self.name_en}"


def _pseudonym() -> str:
    return "E-" + secrets.token_hex(4).upper()


class Expert(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="expert"
    )
    # Shown in exports and to other roles instead of the name: scores are pseudonymous.
    pseudonym = models.CharField(max_length=16, unique=True, default=_pseudonym)
    education = models.CharField(max_length=200, blank=True)
    field_of_expertise = models.CharField(max_length=200, blank=True)
    profession = models.CharField(max_length=200, blank=True)
    llm_experience_years = models.PositiveSmallIntegerField(default=0)
    region = models.CharField(max_length=120, blank=True)
    languages = models.CharField(max_length=200, blank=True)
    panels: models.ManyToManyField[Panel, Membership] = models.ManyToManyField(
        Panel, through="Membership", related_name="experts"
    )

    class Meta:
        verbose_name = _("expert")
        verbose_name_plural = _("experts")
        ordering = ["pseudonym"]

    def __str__(self) -> str:
        return self.pseudonym


class Membership(models.Model):
    expert = models.ForeignKey(Expert, on_delete=models.CASCADE, related_name="memberships")
    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="memberships")
    # Until exams grant it, membership qualifies (the admin may clear this flag).
    qualified = models.BooleanField(default=True)
    # Empty means every group the panel scores; otherwise only these criterion groups.
    qualified_groups = models.JSONField(default=list, blank=True)
    # A pause is per panel: a paused membership gets no new work from its panel and cannot open
    # that panel's work; the expert's other panels go on. The reason is the panel's own note.
    is_paused = models.BooleanField(default=False)
    paused_reason = models.CharField(max_length=300, blank=True)
    # Roles in writing the benchmark (authoring): who writes instructions to the panel's plan,
    # who reviews them, who proofreads them (the editorial panel's members hold this role in
    # the panels they proofread). Scoring needs none of them.
    can_author = models.BooleanField(_("writes instructions"), default=False)
    can_review = models.BooleanField(_("reviews instructions"), default=False)
    can_edit = models.BooleanField(_("proofreads instructions"), default=False)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        constraints = [
            models.UniqueConstraint(fields=["expert", "panel"], name="membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.expert} in {self.panel}"


class SupervisorAction(models.Model):
    """Audit log of supervisors' actions (and automatic ones, with no actor)."""

    panel = models.ForeignKey(
        Panel, on_delete=models.CASCADE, null=True, blank=True, related_name="actions"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    expert = models.ForeignKey(
        Expert, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Kind(models.TextChoices):
        ADJUDICATE = "adjudicate", _("triple adjudicated")
        AUTO_PAUSE = "auto_pause", _("automatic pause")
        BUILD = "build", _("assignments built")
        CONTROL_ITEM_ADD = "control_item_add", _("control item added")
        CONTROL_REFERENCES = "control_references", _("reference scores written")
        CONTROL_SETTINGS = "control_settings", _("control settings changed")
        EXAM_CREATE = "exam_create", _("exam created")
        EXAM_IMPORT = "exam_import", _("exam imported")
        EXAM_OVERRIDE = "exam_override", _("exam verdict overridden")
        EXAM_VERSION = "exam_version", _("new exam version")
        ESTIMATE_ACCEPT = "estimate_accept", _("estimate accepted")
        ESTIMATE_RETURN = "estimate_return", _("estimate returned to the expert")
        LOCK_BATCH = "lock_batch", _("batch locked")
        PAUSE = "pause", _("expert paused")
        REASSIGN = "reassign", _("work reassigned")
        REOPEN_TRIPLE = "reopen_triple", _("triple reopened")
        RESUME = "resume", _("expert resumed")

    action = models.CharField(max_length=32, db_index=True, choices=Kind.choices)
    note = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = _("supervisor action")
        verbose_name_plural = _("supervisor actions")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor_id} at {self.created_at:%Y-%m-%d %H:%M}"


class SupervisorNotice(models.Model):
    """Something a panel's supervisors must see (an automatic pause); read when acknowledged."""

    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="notices")
    expert = models.ForeignKey(
        Expert, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    message = models.CharField(max_length=500)
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("supervisor notice")
        verbose_name_plural = _("supervisor notices")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.message
