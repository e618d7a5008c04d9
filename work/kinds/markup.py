"""The span markup kind: the markup app holds its texts, drafts and pages; the rules are the
protocol's (the page's selections read strictly, the classifier's checks)."""

from __future__ import annotations

from protocol import markup_json, markup_validation
from work import kinds


def register() -> None:
    """The kind's declaration and work's slots of it (from WorkConfig.ready())."""
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
