"""What quality asks of a kind of work for its gold items (exam items, control items).

An exam or control item scores an answer (pointwise) or compares a pair (pairwise); its
`task_kind` picks the kind here (`of`), and the kind's module does what differs: how a control
item is delivered and graded, how an exam item gets its fresh copies and whether it has a
reference, which rows its practice feedback shows. Each kind registers itself in
QualityConfig.ready() (quality.kind_pointwise, quality.kind_pairwise).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from lib.registry import Registry
from work.kinds import HasTaskKind

if TYPE_CHECKING:
    from panels.models import Panel
    from quality.exams import Comparison
    from quality.feedback import ShownPairRow
    from quality.models import (
        ControlDelivery,
        ControlItem,
        ControlSettings,
        ExamAttempt,
        ExamAttemptItem,
        ExamItem,
        ReferenceLabel,
        ReferenceScore,
    )


@dataclass(frozen=True)
class ExamReferences:
    """An exam's references by exam item: the scores of answer items, the labels of pairs."""

    scores: dict[int, list[ReferenceScore]]
    labels: dict[int, list[ReferenceLabel]]


class GoldKind(Protocol):
    @property
    def key(self) -> str: ...

    def control_deliver(
        self,
        panel: Panel,
        conf: ControlSettings,
        items: Sequence[ControlItem],
        experts: Sequence[int],
    ) -> int:
        """Deliver the panel's active control items of this kind; how many were delivered."""
        ...

    def control_grade(self, delivery: ControlDelivery, conf: ControlSettings) -> tuple[int, int]:
        """(criteria graded, matched) of a submitted control item."""
        ...

    def exam_referenced(self, item: ExamItem, references: ExamReferences) -> bool:
        """Whether the exam item has references to be graded on (else it is not asked)."""
        ...

    def exam_items_create(
        self,
        attempt: ExamAttempt,
        items: list[ExamItem],
        references: ExamReferences,
        rng: random.Random,
    ) -> None:
        """The attempt's fresh copies and exam assignments of a run of items of this kind."""
        ...

    def exam_matches(self, attempt: ExamAttempt) -> list[bool]:
        """Per graded question of the attempt's items of this kind: whether it matched."""
        ...

    def practice_rows(
        self, attempt: ExamAttempt, link: ExamAttemptItem
    ) -> tuple[list[Comparison], list[ShownPairRow]]:
        """The reference rows shown for one answered item of a practice attempt."""
        ...


kinds: Registry[GoldKind] = Registry("quality.kinds")


def of(item: HasTaskKind) -> GoldKind:
    """The kind of an exam or control item, by its kind value."""
    return kinds[item.task_kind]
