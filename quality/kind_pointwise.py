"""The pointwise rubric kind's gold items: an answer scored against reference scores."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from panels.models import Panel
from quality import control, exams, kinds
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
from work.kinds import POINTWISE


@dataclass(frozen=True)
class PointwiseGold:
    key: str = POINTWISE

    def control_deliver(
        self,
        panel: Panel,
        conf: ControlSettings,
        items: Sequence[ControlItem],
        experts: Sequence[int],
    ) -> int:
        return control.answers_deliver(panel, conf, items, experts)

    def control_grade(self, delivery: ControlDelivery, conf: ControlSettings) -> tuple[int, int]:
        return control.answer_grade(delivery, conf)

    def exam_referenced(self, item: ExamItem, references: kinds.ExamReferences) -> bool:
        return bool(references.scores[item.pk])

    def exam_items_create(
        self,
        attempt: ExamAttempt,
        items: list[ExamItem],
        references: kinds.ExamReferences,
        rng: random.Random,
    ) -> None:
        exams.attempt_answers_create(attempt, items, references.scores)

    def exam_matches(self, attempt: ExamAttempt) -> list[bool]:
        return [r.match for r in exams.attempt_comparisons(attempt)]

    def practice_rows(
        self, attempt: ExamAttempt, link: ExamAttemptItem
    ) -> tuple[list[Comparison], list[ShownPairRow]]:
        return [r for r in exams.attempt_comparisons(attempt) if r.item_id == link.item_id], []


def register() -> None:
    kinds.kinds.register(PointwiseGold(), key=POINTWISE)
