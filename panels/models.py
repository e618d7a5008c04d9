"""Panels of experts, their responsibilities, experts' profiles and membership."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from taxonomy.models import BilingualMixin, CriterionGroup, FunctionalStyle, Task


class Panel(BilingualMixin, models.Model):
    """A panel of experts and what it is responsible for (editable by admins).

    Routing (see annotation.routing): Task-specific criteria go to the panel owning the task,
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
        ordering = ["number"]
        verbose_name = _("panel")

    def __str__(self) -> str:
        return f"{self.number} {self.name_en}"

    def takes_group(self, group: str) -> bool:
        return group in (self.criterion_groups or [])


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
    is_paused = models.BooleanField(default=False)
    paused_reason = models.CharField(max_length=300, blank=True)
    panels: models.ManyToManyField[Panel, Membership] = models.ManyToManyField(
        Panel, through="Membership", related_name="experts"
    )

    class Meta:
        ordering = ["pseudonym"]
        verbose_name = _("expert")

    def __str__(self) -> str:
        return self.pseudonym


class Membership(models.Model):
    expert = models.ForeignKey(Expert, on_delete=models.CASCADE, related_name="memberships")
    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="memberships")
    # Until exams grant it, membership qualifies (the admin may clear this flag).
    qualified = models.BooleanField(default=True)
    # Empty means every group the panel scores; otherwise only these criterion groups.
    qualified_groups = models.JSONField(default=list, blank=True)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["expert", "panel"], name="membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.expert} in {self.panel}"

    def may_score(self, group: str) -> bool:
        if not self.qualified:
            return False
        return not self.qualified_groups or group in self.qualified_groups


CRITERION_GROUP_VALUES = [value for value, _label in CriterionGroup.choices]
