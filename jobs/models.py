"""Long jobs with progress, visible in the UI; Celery tasks receive their id."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class JobKind(models.TextChoices):
    IMPORT = "import", _("import")
    ASSIGNMENTS = "assignments", _("build assignments")
    AGGREGATE = "aggregate", _("aggregation")
    EXPORT = "export", _("export")
    JUDGE_BATCH = "judge_batch", _("judge batch")
    JUDGE_REPORT = "judge_report", _("judge report")
    RANKINGS = "rankings", _("model rankings")
    PAIR_IMPORT = "pair_import", _("answer pair import")
    PAIR_MAKE = "pair_make", _("answer pairing")
    LEADERBOARD = "leaderboard", _("leaderboard")
    SUBMISSION = "submission", _("submission scoring")
    ORIGINALITY = "originality", _("originality check")
    GENERATION_BATCH = "generation", _("answer generation batch")


class JobStatus(models.TextChoices):
    QUEUED = "queued", _("queued")
    RUNNING = "running", _("running")
    DONE = "done", _("done")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")


class Job(models.Model):
    """A long Celery job with progress, visible in the UI; tasks receive its id.

    jobs.services owns its life: `enqueue` creates it, one compare-and-set claim gives it to
    one attempt (`attempts` counts them and names the owner), the owner refreshes
    `heartbeat_at`, and the sweeper re-sends a running job whose heartbeat went stale.
    """

    kind = models.CharField(max_length=16, choices=JobKind.choices)
    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.QUEUED)
    params = models.JSONField(default=dict, blank=True)
    progress_done = models.PositiveBigIntegerField(default=0)
    progress_total = models.PositiveBigIntegerField(default=0)
    message = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    # Relative to PRIVATE_STORAGE_ROOT; set only once the file is complete.
    file_path = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # Refreshed by the owning attempt while it works; an old one means its worker died.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # host:pid of the worker that claimed the job last (for an admin reading a stuck job).
    claimed_by = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name = _("job")
        verbose_name_plural = _("jobs")
        ordering = ["-created_at"]
        # The sweeper's scan: running jobs by heartbeat.
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="job_status_heartbeat")]

    def __str__(self) -> str:
        return f"{self.kind} job {self.pk}"

    @property
    def percent(self) -> int:
        if not self.progress_total:
            return 100 if self.status == JobStatus.DONE else 0
        return min(100, int(100 * self.progress_done / self.progress_total))
