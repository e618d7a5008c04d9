from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WorkConfig(AppConfig):
    name = "work"
    verbose_name = _("Work")

    def ready(self) -> None:
        # Models and services load once the app registry is ready.
        from protocol import authoring, markup_json, markup_validation
        from work import (
            checks,  # noqa: F401  (importing it registers the start-up check)
            comparisons,
            forms,
            kinds,
            services,
            tasks,  # noqa: F401  (registers the build job kind with jobs.services)
        )

        kinds.register(kinds.TaskKind(key=kinds.POINTWISE, label="pointwise rubric"))
        kinds.contribute(
            kinds.POINTWISE,
            "work",
            parse_submission=forms.items_from_post,
            item_errors=services.item_errors,
        )
        kinds.register(kinds.TaskKind(kinds.PAIRWISE, "side-by-side comparison"))
        kinds.contribute(
            kinds.PAIRWISE,
            "work",
            parse_submission=comparisons.comparison_from_post,
            item_errors=comparisons.comparison_item_errors,
        )
        # Span markup (the markup app holds its texts, drafts and pages; the rules are the
        # protocol's): the page's selections read strictly, the classifier's checks.
        kinds.register(
            kinds.TaskKind(
                kinds.MARKUP,
                "span markup",
                not_applicable={
                    "gold_match": "no gold markups yet: markup exams are not built",
                    "aggregate": "no single verdict per text: every expert markup is a "
                    "reference (СТАР takes the mean and the best over them)",
                },
            )
        )
        kinds.contribute(
            kinds.MARKUP,
            "work",
            parse_submission=markup_json.read_selections,
            item_errors=markup_validation.validate,
        )
        # Instruction writing (the authoring app holds slots, reviews and pages): the form's
        # fields and checks are the protocol's.
        kinds.register(
            kinds.TaskKind(
                kinds.AUTHORING,
                "instruction writing",
                not_applicable={
                    "gold_match": "no gold instruction: a review accepts or returns, "
                    "there is no reference text to match",
                    "aggregate": "no verdict to aggregate: an instruction is accepted by its "
                    "review rounds and the originality verdict (protocol.authoring)",
                },
            )
        )
        kinds.contribute(
            kinds.AUTHORING,
            "work",
            parse_submission=authoring.draft_fields,
            item_errors=authoring.draft_errors,
        )
