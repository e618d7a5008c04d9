from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = _("Annotation")

    def ready(self) -> None:
        # The task module registers its job kinds with annotation.jobs (enqueue, the sweeper)
        # in every process, the web one included.
        import annotation.tasks  # noqa: F401
