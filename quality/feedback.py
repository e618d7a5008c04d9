"""What a candidate is shown of his exam and practice answers against the references: the
practice feedback after each item, and the pair comparisons as he saw each pair (issue #18).
The comparisons themselves are computed in quality.exams and quality.kind_pairwise."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.utils.translation import gettext as _

from protocol.pairwise import unplace
from quality import kinds as gold_kinds
from quality.exams import Comparison, ExamError
from quality.models import LABEL_CHOICES, ExamAttempt, ExamAttemptItem
from taxonomy.models import ComparisonCriterion
from work.models import AssignmentStatus

if TYPE_CHECKING:
    from quality.kind_pairwise import PairComparison


@dataclass
class ShownPairRow:
    """A pair comparison as its expert saw the pair: "A" is the answer shown on the left.

    The stored labels are in the pair's own orientation; the expert's page may have shown it
    swapped, and "A is better" must mean the answer they read as A.
    """

    position: int
    criterion: ComparisonCriterion
    label: str
    ref_label: str
    ref_comment: str
    status: str
    match: bool


def _label_name(code: str) -> str:
    return str(dict(LABEL_CHOICES).get(code, "")) if code else ""


def shown_pair_rows(attempt: ExamAttempt, rows: Sequence[PairComparison]) -> list[ShownPairRow]:
    swapped = dict(
        ExamAttemptItem.objects.filter(attempt=attempt, item__pair__isnull=False).values_list(
            "item_id", "assignment__swapped"
        )
    )
    shown = []
    for r in rows:
        flip = bool(swapped.get(r.item_id))
        shown.append(
            ShownPairRow(
                position=r.position,
                criterion=r.criterion,
                label=_label_name(unplace(r.label, swapped=flip).value) if r.label else "",
                ref_label=_label_name(unplace(r.ref_label, swapped=flip).value),
                ref_comment=r.ref_comment,
                status=r.status,
                match=r.match,
            )
        )
    return shown


@dataclass
class ItemFeedback:
    """One practice item after its submission: the expert's values next to the references and
    their comments (the explanation), per criterion."""

    link: ExamAttemptItem
    rows: list[Comparison]
    pair_rows: list[ShownPairRow]

    @property
    def n_total(self) -> int:
        return len(self.rows) + len(self.pair_rows)

    @property
    def n_matched(self) -> int:
        return sum(r.match for r in self.rows) + sum(r.match for r in self.pair_rows)


def practice_link(attempt: ExamAttempt, assignment_id: int) -> ExamAttemptItem | None:
    """The attempt's item scored through `assignment_id` (None: not an item of this attempt)."""
    return (
        ExamAttemptItem.objects.filter(attempt=attempt, assignment_id=assignment_id)
        .select_related("assignment", "item")
        .first()
    )


def practice_feedback(attempt: ExamAttempt, link: ExamAttemptItem) -> ItemFeedback:
    """The feedback on one item of a practice round, once the expert's answer is in.

    Only practice shows references item by item: a qualifying exam shows them after grading
    (the candidate's result page). The caller checks the assignment is submitted: a reference
    shown before would be an answer key.
    """
    if not attempt.is_practice:
        raise ExamError(_("References are shown item by item in practice only."))
    if link.assignment.status != AssignmentStatus.SUBMITTED:
        raise ExamError(_("Answer the item first."))
    rows, pair_rows = gold_kinds.of(link.item).practice_rows(attempt, link)
    return ItemFeedback(link=link, rows=rows, pair_rows=pair_rows)
