from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = _("LLM judges")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The task module registers its job kinds with annotation.jobs (enqueue, the sweeper)
        # in every process, the web one included.
        import judging.tasks  # noqa: F401
