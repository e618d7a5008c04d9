from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_delete
from django.utils.translation import gettext_lazy as _


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = _("Model runs")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from runs.models import RunBatch
        from runs.signals import batch_deleted

        # A deleted run (or batch) takes its batches' jobs with it. Proxies (JudgeBatch,
        # GenerationBatch) connect the same handler in their apps: a signal names its sender.
        post_delete.connect(batch_deleted, sender=RunBatch, dispatch_uid="runs.batch_job")
