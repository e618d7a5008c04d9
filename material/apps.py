from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class MaterialConfig(AppConfig):
    name = "material"
    verbose_name = _("Material")

    def ready(self) -> None:
        # The task module registers its job kind with jobs.services (enqueue, the sweeper) in
        # every process, the web one included.
        import material.tasks  # noqa: F401
