"""Span markups of texts by the ПРО//ЧТЕНИЕ regulations (docs/spans.md): a text and the markups
of it by experts and algorithms. Fragments are stored in the contest JSON's "selections" shape
(protocol.markup_json), so a stored markup reads back into a protocol document unchanged."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils.translation import gettext_lazy as _

from panels.models import Expert


class MarkupText(models.Model):
    """A text to mark up. Its text is immutable once a markup exists: fragments are offsets
    into it, and an edited text would silently shift every stored fragment."""

    external_id = models.CharField(max_length=200, unique=True)
    text = models.TextField()
    subject = models.CharField(max_length=32)
    # The contest JSON's meta (theme, class, year, …) as read from the first markup imported.
    meta = models.JSONField(default=dict, blank=True)
    classifier_name = models.CharField(max_length=32, default="prochtenie")
    classifier_version = models.CharField(max_length=16, default="2020")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("markup text")
        verbose_name_plural = _("markup texts")
        ordering = ["external_id"]

    def __str__(self) -> str:
        return self.external_id

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and self.markups.exists():
            stored = MarkupText.objects.filter(pk=self.pk).values_list("text", flat=True).first()
            if stored is not None and stored != self.text:
                raise ValueError(f"text {self.external_id}: marked up, its text cannot change")
        super().save(*args, **kwargs)


class MarkupSource(models.TextChoices):
    EXPERT = "expert", _("expert")
    ALGORITHM = "algorithm", _("algorithm")


class MarkupStatus(models.TextChoices):
    DRAFT = "draft", _("draft")
    SUBMITTED = "submitted", _("submitted")


class Markup(models.Model):
    """One markup of a text: an expert's (`expert` when he has a profile here) or an
    algorithm's; `author` is the label shown (the expert's pseudonym or name in the file, the
    system's name)."""

    text = models.ForeignKey(MarkupText, on_delete=models.CASCADE, related_name="markups")
    source = models.CharField(max_length=16, choices=MarkupSource.choices)
    expert = models.ForeignKey(
        Expert, on_delete=models.SET_NULL, null=True, blank=True, related_name="markups"
    )
    author = models.CharField(max_length=120)
    # The contest JSON's "selections" list (protocol.markup_json.to_json).
    selections = models.JSONField(default=list, blank=True)
    criteria = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=16, choices=MarkupStatus.choices, default=MarkupStatus.SUBMITTED
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("markup")
        verbose_name_plural = _("markups")
        ordering = ["text", "pk"]

    def __str__(self) -> str:
        return f"{self.text.external_id}: {self.author} ({self.source})"
