"""The side-by-side kind's gold items: a pair labelled against reference labels.

Gold pairs are the panel's pairs unanimous on every comparison criterion (quality.pairwise's
pool); this module makes them exam items (fresh copies, one exam assignment each) and control
items (delivered at the rate of each expert's side-by-side work), grades them label by label,
and plugs all of it into quality.kinds as `PairwiseGold`.
"""

from __future__ import annotations

import random
import secrets
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.utils.translation import gettext as _

from material.models import AnswerPair
from panels.models import Expert, Panel, SupervisorAction
from panels.services import actor_or_none, audit
from quality import feedback, kinds
from quality.control import seen_items
from quality.copies import comparison_material_create, pairs_copy
from quality.exams import MAX_GOLD_PAIRS, Comparison, ExamError, exam_writable
from quality.feedback import ShownPairRow
from quality.models import (
    ControlDelivery,
    ControlItem,
    ControlSettings,
    Exam,
    ExamAttempt,
    ExamAttemptItem,
    ExamItem,
    ReferenceLabel,
)
from quality.pairwise import GoldItem, labels_match, pairwise_gold_pool
from taxonomy.models import ComparisonCriterion
from work.kinds import PAIRWISE
from work.models import (
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    Estimate,
    EstimateStatus,
    ReservedAnswer,
    Triple,
    TripleKind,
)

GOLD_COMMENT = "unanimous 3/3"


def _item_pair_copies(
    items: Sequence[ExamItem] | Sequence[ControlItem], purpose: str
) -> list[AnswerPair]:
    """Fresh copies of the items' pairs (both answers), in the items' order, for an exam or a
    control delivery."""
    sources = {
        p.pk: p
        for p in AnswerPair.objects.filter(pk__in=[i.pair_id for i in items]).select_related(
            "answer_a", "answer_b"
        )
    }
    return pairs_copy(
        sources=[sources[i.pair_id] for i in items if i.pair_id is not None],
        purpose=purpose,
    )


def gold_reference_labels(gold: Sequence[GoldItem], **owner: Any) -> list[ReferenceLabel]:
    """The reference labels of one gold pair (its unanimous labels) for an exam item
    (`item=`) or a control item (`control_item=`)."""
    labels = []
    for g in gold:
        assert g.triple.comparison_criterion_id is not None, "gold is pairwise"
        labels.append(
            ReferenceLabel(
                comparison_criterion_id=g.triple.comparison_criterion_id,
                label=g.label.value,
                comment=GOLD_COMMENT,
                **owner,
            )
        )
    return labels


def gold_pairs(panel_id: int) -> dict[int, list[GoldItem]]:
    """The panel's pairs whose every comparison criterion is unanimous, with their gold items.

    A pair with one criterion in dispute is left out whole: an exam pair asks every criterion,
    and a criterion without a reference would be a question nobody can be graded on.
    """
    by_pair: dict[int, list[GoldItem]] = defaultdict(list)
    for gold in pairwise_gold_pool(panel_id):
        if gold.triple.pair_id is not None:
            by_pair[gold.triple.pair_id].append(gold)
    n_triples = dict(
        Triple.objects.filter(kind=TripleKind.PAIRWISE, pair_id__in=list(by_pair))
        .values("pair_id")
        .annotate(n=Count("id"))
        .values_list("pair_id", "n")
    )
    return {pk: items for pk, items in by_pair.items() if len(items) == n_triples.get(pk)}


@transaction.atomic
def exam_pairs_add_from_gold(
    *, exam: Exam, n: int, seed: int | None = None, user: Any = None
) -> tuple[Exam, list[ExamItem]]:
    """Add up to `n` side-by-side pairs of the exam's panel, drawn (with `seed`) from its gold
    pool, as frozen copies with their unanimous labels as the references.

    Pairs already in the exam are not drawn again; fewer than `n` left means all of them.
    Returns the version written to and the new items.
    """
    if not 1 <= n <= MAX_GOLD_PAIRS:
        raise ExamError(
            _("n: the number of pairs must be between 1 and %(max)d.") % {"max": MAX_GOLD_PAIRS}
        )
    gold = gold_pairs(exam.panel_id)
    pairs = {
        p.pk: p
        for p in AnswerPair.objects.filter(pk__in=list(gold)).select_related("answer_a", "answer_b")
    }
    taken = set(
        exam.items.filter(pair__isnull=False).values_list(
            "pair__answer_a__reserved__source_id", "pair__answer_b__reserved__source_id"
        )
    )
    fresh = sorted(pk for pk, p in pairs.items() if (p.answer_a_id, p.answer_b_id) not in taken)
    if not fresh:
        raise ExamError(_("The panel's gold pool has no unanimous pairs left to add."))
    seed = secrets.randbits(63) if seed is None else seed
    # Reproducible from the seed, like the work builder's draws.
    chosen = sorted(random.Random(seed).sample(fresh, min(n, len(fresh))))  # noqa: S311
    target = exam_writable(exam, user)
    copies = pairs_copy(sources=[pairs[pk] for pk in chosen], purpose=ReservedAnswer.Purpose.EXAM)
    start = target.items.count()
    items = ExamItem.objects.bulk_create(
        [ExamItem(exam=target, pair=copy, position=start + k) for k, copy in enumerate(copies)]
    )
    ReferenceLabel.objects.bulk_create(
        label
        for item, pk in zip(items, chosen, strict=True)
        for label in gold_reference_labels(gold[pk], item=item)
    )
    return target, items


def attempt_pairs_create(
    attempt: ExamAttempt,
    items: list[ExamItem],
    labels: dict[int, list[ReferenceLabel]],
    rng: random.Random,
) -> None:
    """Pair items: fresh copies of the pair (both answers), one pairwise triple of overlap 1
    per referenced comparison criterion, one exam assignment with its own placement."""
    copies = _item_pair_copies(items, ReservedAnswer.Purpose.EXAM)
    criteria = [
        [
            r.comparison_criterion
            for r in sorted(labels[i.pk], key=lambda r: (r.comparison_criterion.position, r.pk))
        ]
        for i in items
    ]
    assignments = comparison_material_create(
        expert=attempt.expert,
        panel=attempt.exam.panel,
        kind=AssignmentKind.EXAM,
        pairs=copies,
        criteria=criteria,
        rng=rng,
    )
    # The attempt item's answer is the copy's answer A, as a pairwise triple's answer is.
    ExamAttemptItem.objects.bulk_create(
        [
            ExamAttemptItem(attempt=attempt, item=i, answer_id=c.answer_a_id, assignment=a)
            for i, c, a in zip(items, copies, assignments, strict=True)
        ]
    )


@dataclass
class PairComparison:
    """One comparison criterion of one exam pair: the candidate's label next to the reference,
    both in the pair's own orientation (never the side the candidate was shown)."""

    item_id: int
    position: int
    pair_id: int
    criterion: ComparisonCriterion
    ref_label: str
    ref_comment: str
    label: str
    comment: str
    status: str
    match: bool


def attempt_pair_comparisons(attempt: ExamAttempt) -> list[PairComparison]:
    """Every reference label of the attempt's exam version next to the candidate's label."""

    links = dict(
        ExamAttemptItem.objects.filter(attempt=attempt, item__pair__isnull=False).values_list(
            "item_id", "assignment_id"
        )
    )
    estimates = {
        (e.assignment_id, e.triple.comparison_criterion_id): e
        for e in Estimate.objects.filter(
            assignment_id__in=list(links.values()), triple__kind=TripleKind.PAIRWISE
        ).select_related("triple", "assignment")
    }
    rows = []
    for ref in (
        ReferenceLabel.objects.filter(item__exam_id=attempt.exam_id)
        .select_related("comparison_criterion", "item")
        .order_by("item__position", "item_id", "comparison_criterion__position", "pk")
    ):
        assignment_id = links.get(ref.exam_item_id)
        est = estimates.get((assignment_id, ref.comparison_criterion_id)) if assignment_id else None
        label = est.label if est is not None and est.status == "submitted" else ""
        assert ref.exam_item.pair_id is not None, "a reference label belongs to a pair item"
        rows.append(
            PairComparison(
                item_id=ref.exam_item_id,
                position=ref.exam_item.position,
                pair_id=ref.exam_item.pair_id,
                criterion=ref.comparison_criterion,
                ref_label=ref.label,
                ref_comment=ref.comment,
                label=label,
                comment=est.assignment.comment if est is not None else "",
                status=est.status if est is not None else "missing",
                match=labels_match(ref_label=ref.label, label=label),
            )
        )
    return rows


@transaction.atomic
def control_pairs_add_from_gold(
    *, panel: Panel, n: int, seed: int | None = None, user: Any = None
) -> list[ControlItem]:
    """Make up to `n` of the panel's gold pairs (unanimous on every comparison criterion),
    drawn with `seed`, its control items, with their unanimous labels as the references.

    The source pair is the item (as a source answer is); each delivery copies it. Its labelling
    is complete, so no open work is released. Pairs already control items of the panel are not
    drawn again; fewer than `n` left means all of them.
    """
    if not 1 <= n <= MAX_GOLD_PAIRS:
        raise ExamError(
            _("n: the number of pairs must be between 1 and %(max)d.") % {"max": MAX_GOLD_PAIRS}
        )
    gold = gold_pairs(panel.pk)
    taken = set(
        ControlItem.objects.filter(panel=panel, pair__isnull=False).values_list(
            "pair_id", flat=True
        )
    )
    fresh = sorted(pk for pk in gold if pk not in taken)
    if not fresh:
        raise ExamError(_("The panel's gold pool has no unanimous pairs left to add."))
    seed = secrets.randbits(63) if seed is None else seed
    # Reproducible from the seed, like the exam's and the work builder's draws.
    chosen = sorted(random.Random(seed).sample(fresh, min(n, len(fresh))))  # noqa: S311
    items = ControlItem.objects.bulk_create(
        [ControlItem(panel=panel, pair_id=pk, created_by=actor_or_none(user)) for pk in chosen]
    )
    ReferenceLabel.objects.bulk_create(
        label
        for item, pk in zip(items, chosen, strict=True)
        for label in gold_reference_labels(gold[pk], control_item=item)
    )
    audit(
        action=SupervisorAction.Kind.CONTROL_ITEM_ADD,
        actor=user,
        panel=panel,
        data={"pairs": chosen, "seed": seed},
    )
    return items


def pairs_deliver(
    panel: Panel, conf: ControlSettings, items: Sequence[ControlItem], experts: Sequence[int]
) -> int:
    """Gold pairs into the queues at the rate of each expert's side-by-side work."""
    panel_id = panel.pk
    # The copy is compared on every criterion of its reference (a gold pair is unanimous on
    # every criterion of the source, so that is the list its work showed), in the page's order.
    labels: dict[int, list[ComparisonCriterion]] = defaultdict(list)
    for ref in (
        ReferenceLabel.objects.filter(control_item__in=items)
        .select_related("comparison_criterion")
        .order_by("comparison_criterion__position", "pk")
    ):
        assert ref.control_item_id is not None, "filtered on its control item"
        labels[ref.control_item_id].append(ref.comparison_criterion)
    work = dict(
        Assignment.objects.filter(
            panel_id=panel_id, kind="work", expert_id__in=experts, pair__isnull=False
        )
        .exclude(status=AssignmentStatus.RELEASED)
        .values_list("expert_id")
        .annotate(n=Count("id"))
        .values_list("expert_id", "n")
    )
    seen = seen_items(panel_id, experts, pairs=True)
    # Who labelled (or held) the source pair would recognise it: never theirs to check.
    item_of_pair = {i.pair_id: i.pk for i in items}
    for expert_id, pair_id in Assignment.objects.filter(pair_id__in=list(item_of_pair)).values_list(
        "expert_id", "pair_id"
    ):
        seen[expert_id].add(item_of_pair[pair_id])
    rng = secrets.SystemRandom()
    delivered = 0
    for expert_id in experts:
        target = int(work.get(expert_id, 0) * conf.rate)
        missing = target - len(seen[expert_id])
        pool = [i for i in items if i.pk not in seen[expert_id] and labels.get(i.pk)]
        if missing <= 0 or not pool:
            continue
        chosen = rng.sample(pool, min(missing, len(pool)))
        delivered += _control_pairs_deliver(panel, Expert(pk=expert_id), chosen, labels, rng)
    return delivered


@transaction.atomic
def _control_pairs_deliver(
    panel: Panel,
    expert: Expert,
    items: Sequence[ControlItem],
    labels: dict[int, list[ComparisonCriterion]],
    rng: random.Random,
) -> int:
    """Frozen pair copies with pairwise triples of overlap 1 and a control assignment each,
    its placement drawn like work's: on the compare page it is any other pair."""
    copies = _item_pair_copies(items, ReservedAnswer.Purpose.CONTROL)
    assignments = comparison_material_create(
        expert=expert,
        panel=panel,
        kind=AssignmentKind.CONTROL,
        pairs=copies,
        criteria=[labels[i.pk] for i in items],
        rng=rng,
    )
    # The delivery's answer is the copy's answer A, as a pairwise triple's answer is.
    ControlDelivery.objects.bulk_create(
        [
            ControlDelivery(item=i, expert_id=expert.pk, answer_id=c.answer_a_id, assignment=a)
            for i, c, a in zip(items, copies, assignments, strict=True)
        ]
    )
    return len(items)


def pair_grade(delivery: ControlDelivery) -> tuple[int, int]:
    """(criteria graded, matched) of a gold pair: its reference labels, both sides in the
    pair's own orientation (the submit undid the page's placement), so a swap never matters."""
    estimates = {
        e.triple.comparison_criterion_id: e
        for e in Estimate.objects.filter(
            assignment_id=delivery.assignment_id, triple__kind=TripleKind.PAIRWISE
        ).select_related("triple")
    }
    total = matched = 0
    for ref in ReferenceLabel.objects.filter(control_item_id=delivery.item_id):
        est = estimates.get(ref.comparison_criterion_id)
        if est is None:
            continue
        total += 1
        label = est.label if est.status == EstimateStatus.SUBMITTED else ""
        matched += labels_match(ref_label=ref.label, label=label)
    return total, matched


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
        return pairs_deliver(panel, conf, items, experts)

    def control_grade(self, delivery: ControlDelivery, conf: ControlSettings) -> tuple[int, int]:
        return pair_grade(delivery)

    def exam_referenced(self, item: ExamItem, references: kinds.ExamReferences) -> bool:
        return bool(references.labels[item.pk])

    def exam_items_create(
        self,
        attempt: ExamAttempt,
        items: list[ExamItem],
        references: kinds.ExamReferences,
        rng: random.Random,
    ) -> None:
        attempt_pairs_create(attempt, items, references.labels, rng)

    def exam_matches(self, attempt: ExamAttempt) -> list[bool]:
        return [r.match for r in attempt_pair_comparisons(attempt)]

    def practice_rows(
        self, attempt: ExamAttempt, link: ExamAttemptItem
    ) -> tuple[list[Comparison], list[ShownPairRow]]:
        mine = [r for r in attempt_pair_comparisons(attempt) if r.item_id == link.item_id]
        return [], feedback.shown_pair_rows(attempt, mine)


def register() -> None:
    kinds.kinds.register(PairwiseGold(), key=PAIRWISE)
