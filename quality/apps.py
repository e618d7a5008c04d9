from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class QualityConfig(AppConfig):
    name = "quality"
    verbose_name = _("Quality")

    def ready(self) -> None:
        # Quality sits above work and panels: it plugs its grading, gold and standing rules
        # into their registries instead of them importing quality (docs/architecture.md).
        from panels import hooks as panel_hooks
        from quality import (
            checks,  # noqa: F401  (importing it registers the start-up check)
            control,
            exams,
            kind_pairwise,
            kind_pointwise,
            selectors,
        )
        from work import hooks as work_hooks
        from work.models import AssignmentKind

        # The kinds' gold items (quality.kinds), one line each.
        for kind in (kind_pointwise, kind_pairwise):
            kind.register()
        work_hooks.on_submitted.register(
            exams.exam_on_assignment_submitted, key=AssignmentKind.EXAM
        )
        work_hooks.on_submitted.register(
            control.control_on_assignment_submitted, key=AssignmentKind.CONTROL
        )
        work_hooks.position.register(selectors.exam_position, key=AssignmentKind.EXAM)
        work_hooks.excluded_pairs.register(control.gold_pairs)
        panel_hooks.on_resumed.register(control.standing_restart)
