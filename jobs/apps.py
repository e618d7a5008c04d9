from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = _("Jobs")

    def ready(self) -> None:
        # Defines the sweeper task (jobs.requeue_stale) in every process.
        import jobs.services  # noqa: F401
