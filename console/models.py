"""Snapshots the supervisors' console reads instead of scanning estimates per page."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from panels.models import Panel


class PanelStats(models.Model):
    """A snapshot of a panel's heavy aggregates (progress, times, plots, agreement).

    Scanning 500,000 estimates takes seconds, so the console reads this snapshot and a Celery
    task refreshes it (on demand, and when the console finds it older than a few minutes).
    """

    panel = models.OneToOneField(Panel, on_delete=models.CASCADE, related_name="stats")
    data = models.JSONField(default=dict)
    computed_at = models.DateTimeField()
    seconds = models.FloatField(default=0)

    class Meta:
        verbose_name = _("panel statistics")
        verbose_name_plural = _("panel statistics")

    def __str__(self) -> str:
        return f"stats of {self.panel_id} at {self.computed_at:%Y-%m-%d %H:%M}"


class ReviewRequest(models.Model):
    """A supervisor sent a submitted estimate to the panel's review queue (the data browser's
    bulk "send to review"). It stays in the queue until the estimate is reviewed after the
    request (returned or accepted: work.review sets `reviewed_at`); sending it again renews it.
    """

    estimate = models.OneToOneField(
        "work.Estimate", on_delete=models.CASCADE, related_name="review_request"
    )
    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="+")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    requested_at = models.DateTimeField()

    class Meta:
        verbose_name = _("review request")
        verbose_name_plural = _("review requests")
        indexes = [models.Index(fields=["panel", "requested_at"])]

    def __str__(self) -> str:
        return f"review of {self.estimate_id} asked at {self.requested_at:%Y-%m-%d %H:%M}"

    @staticmethod
    def pending() -> Q:
        """Requests whose estimate was not reviewed since they were made."""
        return Q(estimate__reviewed_at__isnull=True) | Q(
            estimate__reviewed_at__lt=F("requested_at")
        )
