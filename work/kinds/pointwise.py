"""The pointwise rubric kind: an expert scores one answer on its panel's criteria."""

from __future__ import annotations

from dataclasses import dataclass

from work import forms, kinds, services


@dataclass(frozen=True)
class Pointwise:
    """The rubric's work: an answer's criteria, grouped across panels into one entry."""

    key: str = kinds.POINTWISE
    in_entry: bool = True

    def flag_refusal(self) -> str:
        return ""

    def rubric_refusal(self, assignment_id: int) -> str:
        return ""


def register() -> None:
    """The kind's declaration and work's slots of it (from WorkConfig.ready())."""
    kinds.register(kinds.TaskKind(key=kinds.POINTWISE, label="pointwise rubric"))
    kinds.contribute(
        kinds.POINTWISE,
        "work",
        parse_submission=forms.items_from_post,
        item_errors=services.item_errors,
    )
    kinds.items.register(Pointwise(), key=kinds.POINTWISE)
