"""The side-by-side kind (REPA): an expert labels a pair of answers on comparison criteria.

Its assignment holds the pair (`pair`; its `answer` is the pair's answer A, so every answer-keyed
path works unchanged); it is labelled on its own page (work.views_compare) through its own
service (work.comparisons).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext as _

from work import kinds


@dataclass(frozen=True)
class Pairwise:
    """A pair is an entry of one: its comparison is no part of the pointwise work on its first
    text. It is refused on its own page, never skipped or flagged."""

    key: str = kinds.PAIRWISE
    item_field: str = "pair"
    in_entry: bool = False

    def flag_refusal(self) -> str:
        return _("A side-by-side comparison is refused on its own page.")

    def rubric_refusal(self, assignment_id: int) -> str:
        return _(
            "Assignment %(id)s is a side-by-side comparison: it is labelled on its own page, "
            "not scored on a rubric."
        ) % {"id": assignment_id}


def register() -> None:
    """The kind's declaration and its assignments' plug-in (from WorkConfig.ready())."""
    kinds.register(kinds.TaskKind(kinds.PAIRWISE, "side-by-side comparison"))
    kinds.items.register(Pairwise(), key=kinds.PAIRWISE)
