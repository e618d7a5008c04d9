"""Scoring guidelines of a panel: panel-wide and per criterion, written by its supervisors.

Every save makes a new `GuidelineVersion` (never an edit of an old one), so what an expert read
when he scored stays readable; `Guideline.current` points at the newest. A version carries its
text, the mini-instructions for hard cases and its examples (clearly good, clearly bad, hard),
as POLLUX's panels wrote them.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from panels.models import Panel
from taxonomy.models import Criterion


class Guideline(models.Model):
    """The guideline of one panel for one criterion, or the panel-wide one (no criterion)."""

    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="guidelines")
    criterion = models.ForeignKey(
        Criterion, on_delete=models.PROTECT, null=True, blank=True, related_name="guidelines"
    )
    # The newest version: read with the guideline, so a page of them costs one query.
    current = models.ForeignKey(
        "GuidelineVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("guideline")
        verbose_name_plural = pgettext_lazy("panel guidelines", "guidelines")
        constraints = [
            models.UniqueConstraint(
                fields=["panel", "criterion"],
                condition=Q(criterion__isnull=False),
                name="guideline_panel_criterion_unique",
            ),
            # NULLs are distinct in a unique index: the panel-wide one needs its own.
            models.UniqueConstraint(
                fields=["panel"],
                condition=Q(criterion__isnull=True),
                name="guideline_panel_wide_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.panel_id}/{self.criterion_id or '*'}"


class GuidelineVersion(models.Model):
    """One immutable edition of a guideline."""

    guideline = models.ForeignKey(Guideline, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    body = models.TextField(blank=True)
    # Mini-instructions for the hard cases (markdown).
    hard_cases = models.TextField(blank=True)
    change_note = models.CharField(max_length=300, blank=True)
    # Shown to supervisors and admins only: experts see the number and the date.
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("guideline version")
        verbose_name_plural = _("guideline versions")
        ordering = ["guideline", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["guideline", "number"], name="guideline_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.guideline} v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # A version an expert may have scored by is history: a change is a new version.
        if not self._state.adding:
            raise ValueError("A guideline version is immutable: save a new version instead.")
        super().save(*args, **kwargs)


class ExampleKind(models.TextChoices):
    GOOD = "good", _("clearly good")
    BAD = "bad", _("clearly bad")
    HARD = "hard", _("hard case")


class GuidelineExample(models.Model):
    """An example of a version: a text, why it is good, bad or hard, and its score if any."""

    version = models.ForeignKey(GuidelineVersion, on_delete=models.CASCADE, related_name="examples")
    position = models.PositiveSmallIntegerField(default=0)
    kind = models.CharField(max_length=8, choices=ExampleKind.choices)
    text = models.TextField()
    explanation = models.TextField(blank=True)
    score = models.SmallIntegerField(null=True, blank=True)

    class Meta:
        verbose_name = _("guideline example")
        verbose_name_plural = _("guideline examples")
        ordering = ["version", "position"]

    def __str__(self) -> str:
        return f"{self.version} #{self.position} {self.kind}"
