from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class GenerationConfigApp(AppConfig):
    name = "generation"
    verbose_name = _("Answer generation")

    def ready(self) -> None:
        from generation import (
            rules,  # noqa: F401  (registers the permissions)
            tasks,  # noqa: F401  (registers the generation job kind)
        )
