"""Stored model rankings from side-by-side (REPA) comparisons, computed by a job."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from jobs.models import Job

SOURCE_HUMAN = "human"
# A judge's labels: "judge:<pairwise JudgeRun id>" (a dataset.label_sources key; judging
# registers the "judge" source).
JUDGE_SOURCE_PREFIX = "judge:"
# The criterion field's value for "every criterion, each ranked on its own".
ALL_CRITERIA = "all"


class Ranking(models.Model):
    """One computation of the rankings, stored whole like the judge report.

    `params` are the inputs as used (every default filled in, so a stored ranking says exactly
    how it was made); `result` is comparison.services.rankings_compute's dict: per criterion
    the models with Elo, Bradley–Terry and Glicko-2 (mean and 95 % interval), Borda points,
    ranks and battles, and the aggregates left out.
    """

    created_at = models.DateTimeField(auto_now_add=True)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    source = models.CharField(max_length=64, default=SOURCE_HUMAN)
    criterion = models.CharField(max_length=64, default=ALL_CRITERIA)
    params = models.JSONField(default=dict)
    result = models.JSONField(default=dict)
    seconds = models.FloatField(default=0)

    class Meta:
        verbose_name = _("model ranking")
        verbose_name_plural = _("model rankings")
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"ranking {self.pk} ({self.source}, {self.criterion})"
