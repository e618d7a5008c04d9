from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ComparisonConfig(AppConfig):
    name = "comparison"
    verbose_name = _("Model rankings")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The task module registers the "rankings" job kind with jobs.services (enqueue, the
        # sweeper) in every process, the web one included.
        import comparison.tasks  # noqa: F401
