from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class MarkupConfig(AppConfig):
    name = "markup"
    verbose_name = _("Span markup")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The expert's queue (work) lists his markup texts beside his assignments.
        from markup.work import queue_section
        from work import hooks

        hooks.queue_sections.register(queue_section)
