from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_delete
from django.utils.translation import gettext_lazy as _


class GenerationConfigApp(AppConfig):
    name = "generation"
    verbose_name = _("Answer generation")

    def ready(self) -> None:
        from generation.models import GenerationBatch
        from runs.signals import batch_deleted

        # A deleted batch takes its job with it (runs connects the cascade from a run).
        post_delete.connect(
            batch_deleted, sender=GenerationBatch, dispatch_uid="generation.batch_job"
        )

        from generation import (
            rules,  # noqa: F401  (registers the permissions)
            tasks,  # noqa: F401  (registers the generation job kind)
        )
