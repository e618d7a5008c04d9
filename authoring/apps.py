from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AuthoringConfig(AppConfig):
    name = "authoring"
    verbose_name = _("Instruction writing")

    def ready(self) -> None:
        from authoring import (
            baseline,
            rules,  # noqa: F401  (registers the permissions)
            selectors,
            tasks,  # noqa: F401  (registers the originality job kind)
        )
        from work import hooks

        # The author of a human-baseline answer never scores it.
        hooks.excluded_experts.register(baseline.authored_answers)
        hooks.queue_sections.register(selectors.queue_section)
