from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LeaderboardsConfig(AppConfig):
    name = "leaderboards"
    verbose_name = _("Leaderboards")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the "leaderboard" job kind with jobs.services in every process.
        import leaderboards.tasks  # noqa: F401
