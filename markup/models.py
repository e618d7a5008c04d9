"""Span markups of texts by the ПРО//ЧТЕНИЕ regulations (docs/spans.md): a text and the markups
of it by experts and algorithms. Fragments are stored in the contest JSON's "selections" shape
(protocol.markup_json), so a stored markup reads back into a protocol document unchanged."""

from __future__ import annotations

import uuid as uuid_module
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from panels.models import Expert, Panel


def new_text_uuid() -> str:
    return str(uuid_module.uuid4())


def default_markup_test() -> str:
    """The contest JSON's «Тест» of a text that comes without one (settings, docs/spans.md)."""
    return str(settings.POLLUX["MARKUP_TEST"])


def current_year() -> int:
    return timezone.now().year


class MarkupText(models.Model):
    """A text to mark up. Its text is immutable once a markup exists: fragments are offsets
    into it, and an edited text would silently shift every stored fragment.

    `uuid`, `test` and `year` are the contest JSON's meta fields the regulations do not allow
    empty: the imported file's values, else a generated uuid, the platform's test name
    (POLLUX_MARKUP_TEST) and the year the text was stored."""

    external_id = models.CharField(max_length=200, unique=True)
    uuid = models.CharField(max_length=200, unique=True, default=new_text_uuid)
    test = models.CharField(max_length=200, default=default_markup_test)
    year = models.PositiveSmallIntegerField(default=current_year)
    text = models.TextField()
    subject = models.CharField(max_length=32)
    # The rest of the contest JSON's meta (theme, class, …) as read from the first markup
    # imported.
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


class MarkupRole(models.TextChoices):
    """Why an expert marks a text: one of the independent markups every text gets, or the
    third markup asked for when the independent ones diverge (markup.work)."""

    INDEPENDENT = "independent", _("independent")
    THIRD = "third", _("third (divergence)")


class Markup(models.Model):
    """One markup of a text: an expert's (`expert` when he has a profile here) or an
    algorithm's; `author` is the label shown (the expert's pseudonym or name in the file, the
    system's name).

    Expert work: markup.work assigns a text to an expert of a panel as a DRAFT markup with that
    `panel` and a `role`; the expert's page saves drafts into it and submits it once. Imported
    markups have no panel and no role."""

    text = models.ForeignKey(MarkupText, on_delete=models.CASCADE, related_name="markups")
    source = models.CharField(max_length=16, choices=MarkupSource.choices)
    expert = models.ForeignKey(
        Expert, on_delete=models.SET_NULL, null=True, blank=True, related_name="markups"
    )
    author = models.CharField(max_length=120)
    # The contest JSON's "selections" list (protocol.markup_json.to_json).
    selections = models.JSONField(default=list, blank=True)
    criteria = models.JSONField(default=dict, blank=True)
    # The expert's rationale of each criterion score (criterion → text; markup.work requires one
    # for every criterion of the essay type on submission).
    rationales = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=16, choices=MarkupStatus.choices, default=MarkupStatus.SUBMITTED
    )
    panel = models.ForeignKey(
        Panel, on_delete=models.PROTECT, null=True, blank=True, related_name="markups"
    )
    role = models.CharField(max_length=12, choices=MarkupRole.choices, blank=True, default="")
    time_spent_ms = models.PositiveBigIntegerField(default=0)
    submitted_at = models.DateTimeField(null=True, blank=True)
    # Client-generated id of the accepted submission: a retried request is recognised.
    submission_key = models.CharField(max_length=64, blank=True, default="")
    # Why this markup was asked for (a third markup: the divergence found), shown to staff.
    note = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("markup")
        verbose_name_plural = _("markups")
        ordering = ["text", "pk"]
        constraints = [
            # An expert marks a text once, whichever panel asked (two markups of one text by
            # one person would count as agreement with himself).
            models.UniqueConstraint(
                fields=["text", "expert"],
                condition=models.Q(expert__isnull=False),
                name="markup_one_per_expert",
            )
        ]
        indexes = [models.Index(fields=["expert", "status"])]

    def __str__(self) -> str:
        return f"{self.text.external_id}: {self.author} ({self.source})"


class SampleMode(models.TextChoices):
    PULL = "pull", _("pull: the system asks for the next text")
    PACED = "paced", _("paced: one text per interval on a schedule")


class MarkupSample(models.Model):
    """A set of texts participants' systems mark up (a contest stage) and its rules
    (ПРО//ЧТЕНИЕ Technical regulations, sections 6–7 and Appendix 2; markup.contest)."""

    name = models.CharField(max_length=200, unique=True)
    mode = models.CharField(max_length=8, choices=SampleMode.choices, default=SampleMode.PULL)
    # Paced: a text every `interval_s` from `starts_at` (the run's opening when empty).
    interval_s = models.PositiveIntegerField(default=60)
    starts_at = models.DateTimeField(null=True, blank=True)
    # A markup later than this after the text was released annuls the text for the run.
    deadline_s = models.PositiveIntegerField(default=60)
    max_submissions = models.PositiveSmallIntegerField(default=10)
    # A run whose annulled share of the sample exceeds this is void (regulations 7.7: 5 %).
    annul_limit = models.FloatField(default=0.05)
    # H of СТАР: the weight of the mean over the experts against the best of them.
    hardness = models.FloatField(default=0.5)
    is_open = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("markup sample")
        verbose_name_plural = _("markup samples")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class MarkupSampleText(models.Model):
    """A text of a sample at its position (the order texts are released in)."""

    sample = models.ForeignKey(MarkupSample, on_delete=models.CASCADE, related_name="entries")
    text = models.ForeignKey(MarkupText, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["sample", "position"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "text"], name="sample_text_unique"),
            models.UniqueConstraint(fields=["sample", "position"], name="sample_position_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.sample} #{self.position}"


class MarkupRun(models.Model):
    """One participant system's session over a sample."""

    sample = models.ForeignKey(MarkupSample, on_delete=models.PROTECT, related_name="runs")
    participant = models.ForeignKey(
        "participants.Participant", on_delete=models.CASCADE, related_name="markup_runs"
    )
    system = models.CharField(max_length=120)
    opened_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    # The closed run's per-text shares of СТАР and the version of what they were computed from
    # (markup.contest._closed_terms): a leaderboard reuses them until an expert markup changes.
    scores = models.JSONField(default=dict, blank=True)

    class Meta:
        verbose_name = _("markup run")
        verbose_name_plural = _("markup runs")
        ordering = ["-opened_at"]
        constraints = [
            # One run per participant and sample: a second would let a system learn the hidden
            # references from its first run's scores (an admin deletes a run to allow a rerun).
            models.UniqueConstraint(fields=["sample", "participant"], name="markup_run_one")
        ]

    def __str__(self) -> str:
        return f"{self.system} on {self.sample}"


class MarkupRunItem(models.Model):
    """A text released to a run: when, until when, what came back."""

    run = models.ForeignKey(MarkupRun, on_delete=models.CASCADE, related_name="items")
    text = models.ForeignKey(MarkupText, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField()
    released_at = models.DateTimeField()
    deadline_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)
    response_ms = models.PositiveBigIntegerField(null=True, blank=True)
    submissions = models.PositiveSmallIntegerField(default=0)
    # The number (1, 2, …) of the submission whose markup is stored: a slower earlier one that
    # finishes validating after a later one never replaces it ("the last counts" by arrival).
    accepted_submission = models.PositiveSmallIntegerField(default=0)
    annulled = models.BooleanField(default=False)
    # The last accepted markup (an algorithmic Markup of the text, replaced by each new one).
    markup = models.OneToOneField(
        Markup, on_delete=models.SET_NULL, null=True, blank=True, related_name="run_item"
    )

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "text"], name="run_item_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.run} #{self.position}"
