"""The dataset's per-triple verdicts, recomputed by the aggregation job."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from jobs.models import Job
from work.models import Triple

# Why a triple is out of the dataset (TripleAggregate.excluded_reason; "" when it is in).
EXCLUDED_CRITICAL = "critical_violation"  # pointwise rule 2
EXCLUDED_FEW = "too_few_estimates"  # pointwise rule 3; pairwise: fewer labels than needed
EXCLUDED_NO_SCORE = "no_numeric_score"  # pointwise rule 4
EXCLUDED_NO_CONSENSUS = "no_consensus"  # pairwise: no label has a majority (REPA §2.3)
# How a page says why (the keys stay in exports and filters' URLs).
EXCLUDED_LABELS = {
    EXCLUDED_CRITICAL: _("critical violation"),
    EXCLUDED_FEW: _("too few estimates"),
    EXCLUDED_NO_SCORE: _("no numeric score"),
    EXCLUDED_NO_CONSENSUS: _("no consensus"),
}


def excluded_label(reason: str) -> str:
    """An exclusion reason as a page shows it; an unknown one as it is."""
    return str(EXCLUDED_LABELS.get(reason, reason))


class TripleAggregate(models.Model):
    """Aggregated expert verdict of one triple, recomputed by the aggregation job."""

    triple = models.OneToOneField(Triple, on_delete=models.CASCADE, related_name="aggregate")
    n_estimates = models.PositiveSmallIntegerField()
    mean = models.FloatField(null=True)
    mode = models.SmallIntegerField(null=True)
    confidence = models.FloatField(null=True)
    all_na = models.BooleanField(default=False)
    # Side-by-side triples: the majority label in the pair's own orientation ("" otherwise,
    # and "" with excluded_reason "no_consensus" when no label has a majority).
    label = models.CharField(max_length=10, blank=True, default="", db_default="")
    # Why the triple is out of the dataset ("" when it is in).
    excluded_reason = models.CharField(max_length=32, blank=True)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True)

    class Meta:
        verbose_name = _("triple aggregate")
        verbose_name_plural = _("triple aggregates")

    def __str__(self) -> str:
        return f"aggregate of {self.triple_id}"


class Adjudication(models.Model):
    """A supervisor's verdict on a disputed triple, kept apart from the experts' estimates.

    Every verdict is kept; the latest of a triple is the one the dataset shows (its own export
    columns). The aggregation uses it in place of the experts' verdict only when
    `POLLUX["ADJUDICATION_OVERRIDES"]` is on (dataset.adjudication.with_overrides).
    """

    triple = models.ForeignKey(Triple, on_delete=models.CASCADE, related_name="adjudications")
    # None with is_na: "not applicable"; a value of the triple's rubric otherwise.
    score = models.SmallIntegerField(null=True, blank=True)
    is_na = models.BooleanField(default=False)
    reason = models.TextField()
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("adjudication")
        verbose_name_plural = _("adjudications")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(is_na=True, score__isnull=True)
                | models.Q(is_na=False, score__isnull=False),
                name="adjudication_score_or_na",
            )
        ]

    def __str__(self) -> str:
        return f"adjudication of {self.triple_id}"
