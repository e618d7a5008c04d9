"""The pointwise rubric kind: an expert scores one answer on its panel's criteria."""

from __future__ import annotations

from dataclasses import dataclass

from work import kinds


@dataclass(frozen=True)
class Pointwise:
    """The rubric's work: an answer's criteria, grouped across panels into one entry."""

    key: str = kinds.POINTWISE
    item_field: str = ""
    in_entry: bool = True

    def flag_refusal(self) -> str:
        return ""

    def rubric_refusal(self, assignment_id: int) -> str:
        return ""


def register() -> None:
    """The kind's declaration and its assignments' plug-in (from WorkConfig.ready())."""
    kinds.register(kinds.TaskKind(key=kinds.POINTWISE, label="pointwise rubric"))
    kinds.items.register(Pointwise(), key=kinds.POINTWISE)
