"""Participants' submissions (the MERA way): a model's answers to a benchmark's public inputs,
scored automatically by the benchmark's designated judge against references nobody outside
sees, private until the participant asks to publish and an admin approves.

State machine (services.py is its one home): uploaded → scoring → scored → publication
requested → published / rejected; scoring can end failed (an admin scores it again). A closed
test's submission gives the model's endpoint instead of a file (endpoints.py): it starts at
generating (the platform answers the version's inputs through the endpoint), then goes on as
an upload would, or ends failed saying which items got no answer and why.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from generation.models import GenerationRun
from judging.models import JudgeConfig, JudgeRun
from leaderboards.models import BoardVersion, Leaderboard
from material.models import LanguageModel
from participants.models import Participant


class State(models.TextChoices):
    GENERATING = "generating", _("generating answers")
    UPLOADED = "uploaded", _("uploaded")
    SCORING = "scoring", _("scoring")
    SCORED = "scored", _("scored")
    REQUESTED = "requested", _("publication requested")
    PUBLISHED = "published", _("published")
    REJECTED = "rejected", _("rejected")
    FAILED = "failed", _("scoring failed")


class Submission(models.Model):
    # PROTECT: a participant with submissions is revoked, not deleted (a deleted submission
    # would un-withhold its model's answers, which may have gone to the panels).
    participant = models.ForeignKey(
        Participant, on_delete=models.PROTECT, related_name="submissions"
    )
    leaderboard = models.ForeignKey(
        Leaderboard, on_delete=models.PROTECT, related_name="submissions"
    )
    # The version of the benchmark the answers answer: checked against its items, scored by
    # its judge under its rules, ranked on its board only.
    version = models.ForeignKey(
        BoardVersion, on_delete=models.PROTECT, null=True, blank=True, related_name="submissions"
    )
    # The submitted model, with the answers (reserved: never expert work unless sent).
    model = models.OneToOneField(
        LanguageModel,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="submission",
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.UPLOADED)
    # The metadata every submission carries.
    model_name = models.CharField(_("model name"), max_length=150)
    model_version = models.CharField(_("model version"), max_length=60)
    parameters = models.CharField(_("parameters"), max_length=100)
    inference_settings = models.JSONField(_("inference settings"), default=dict)
    gpus = models.CharField(_("GPUs used"), max_length=200)
    logs = models.TextField(_("generation logs (a link or the text)"))
    # A closed test's: the endpoint the answers were generated through (its key is kept
    # encrypted on the generation configuration until the run ends: runs.secrets), and the run.
    endpoint = models.URLField(_("endpoint"), max_length=500, blank=True)
    endpoint_model = models.CharField(_("model name at the endpoint"), max_length=200, blank=True)
    generation_run = models.ForeignKey(
        GenerationRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The file.
    file_name = models.CharField(max_length=255)
    file_bytes = models.PositiveBigIntegerField(default=0)
    # Fingerprint of the answers (instruction id and text, in instruction order): the same
    # answers twice are refused whatever the file's format.
    content_sha256 = models.CharField(max_length=64)
    answers = models.PositiveIntegerField(default=0)
    # Settings that differ from the benchmark's fixed ones: [{setting, expected, given}].
    settings_mismatch = models.JSONField(default=list, blank=True)
    judge_config = models.ForeignKey(
        JudgeConfig, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    judge_run = models.ForeignKey(
        JudgeRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The private result (services.result_of): shown to the participant and the admins only.
    result = models.JSONField(default=dict, blank=True)
    # Why scoring failed, or why publication was rejected.
    message = models.TextField(blank=True)
    sent_to_panels_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("submission")
        verbose_name_plural = _("submissions")
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["participant", "leaderboard", "created_at"]),
            models.Index(fields=["participant", "leaderboard", "content_sha256"]),
        ]

    def __str__(self) -> str:
        return f"{self.model_name} {self.model_version} #{self.pk}"

    @property
    def flagged(self) -> bool:
        return bool(self.settings_mismatch)


class SubmissionEvent(models.Model):
    """The audit of a submission's states: who moved it, from what, to what, and why."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    old = models.CharField(max_length=10, choices=State.choices, blank=True)
    new = models.CharField(max_length=10, choices=State.choices)
    note = models.CharField(max_length=1000, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "pk"]

    def __str__(self) -> str:
        return f"{self.submission_id}: {self.old} → {self.new}"
