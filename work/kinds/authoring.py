"""The instruction writing kind: the authoring app holds slots, reviews and pages; the form's
fields and checks are the protocol's."""

from __future__ import annotations

from protocol import authoring
from work import kinds


def register() -> None:
    """The kind's declaration and work's slots of it (from WorkConfig.ready())."""
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
