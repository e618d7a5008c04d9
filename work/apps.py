from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WorkConfig(AppConfig):
    name = "work"
    verbose_name = _("Work")

    def ready(self) -> None:
        # Models and services load once the app registry is ready.
        from work import (
            checks,  # noqa: F401  (importing it registers the start-up check)
            kinds,
            pages,
            tasks,  # noqa: F401  (registers the build job kind with jobs.services)
            views_compare,
            views_rubric,
        )
        from work.kinds import authoring, markup, pairwise, pointwise

        # The kinds of work, one line each (work.kinds; docs/architecture.md "Adding a kind").
        for kind in (pointwise, pairwise, markup, authoring):
            kind.register()
        # The page of each kind held as assignments (work.pages).
        pages.pages.register(views_rubric.PAGE, key=kinds.POINTWISE)
        pages.pages.register(views_compare.PAGE, key=kinds.PAIRWISE)
