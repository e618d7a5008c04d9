from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SubmissionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "submissions"
    verbose_name = _("Submissions")

    def ready(self) -> None:
        from generation import hooks as generation_hooks
        from judging import hooks as judging_hooks
        from leaderboards import hooks as leaderboard_hooks
        from submissions import endpoints, rules, selectors, services, tasks  # noqa: F401

        # Which submitted models a board may show (only published ones), the end of the judge
        # run scoring a submission, and the instructions as its version froze them.
        leaderboard_hooks.submitted_models.register(selectors.submitted_models)
        judging_hooks.run_finished.register(services.submission_finish)
        judging_hooks.frozen_instructions.register(selectors.frozen_instructions)
        # A closed test's answers: generated from the version's frozen texts; scored (or the
        # submission failed) when the generation run ends.
        generation_hooks.frozen_texts.register(selectors.frozen_texts)
        generation_hooks.run_finished.register(endpoints.generation_finished)
