"""Snapshots the supervisors' console reads instead of scanning estimates per page."""

from __future__ import annotations

from django.db import models
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
