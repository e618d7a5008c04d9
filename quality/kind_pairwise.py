"""The side-by-side kind's gold items: a pair labelled against reference labels."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from panels.models import Panel
from quality import control, exams, feedback, kinds
from quality.exams import Comparison
from quality.feedback import ShownPairRow
from quality.models import (
    ControlDelivery,
    ControlItem,
    ControlSettings,
    ExamAttempt,
    ExamAttemptItem,
    ExamItem,
)
from work.kinds import PAIRWISE


@dataclass(frozen=True)
class PairwiseGold:
    key: str = PAIRWISE

    def control_deliver(
        self,
        panel: Panel,
        conf: ControlSettings,
        items: Sequence[ControlItem],
        experts: Sequence[int],
    ) -> int:
        return control.pairs_deliver(panel, conf, items, experts)

    def control_grade(self, delivery: ControlDelivery, conf: ControlSettings) -> tuple[int, int]:
        return control.pair_grade(delivery)

    def exam_referenced(self, item: ExamItem, references: kinds.ExamReferences) -> bool:
        return bool(references.labels[item.pk])

    def exam_items_create(
        self,
        attempt: ExamAttempt,
        items: list[ExamItem],
        references: kinds.ExamReferences,
        rng: random.Random,
    ) -> None:
        exams.attempt_pairs_create(attempt, items, references.labels, rng)

    def practice_rows(
        self, attempt: ExamAttempt, link: ExamAttemptItem
    ) -> tuple[list[Comparison], list[ShownPairRow]]:
        mine = [r for r in exams.attempt_pair_comparisons(attempt) if r.item_id == link.item_id]
        return [], feedback.shown_pair_rows(attempt, mine)


def register() -> None:
    kinds.kinds.register(PairwiseGold(), key=PAIRWISE)
