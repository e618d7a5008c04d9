"""The side-by-side (REPA pairwise) kind's quality rules: gold matching, agreement, gold pool.

- `labels_match`: a candidate's label equals the gold one. Both are in the
  pair's own orientation (work.comparisons stores them so, undoing the page's A/B swap), so
  equality is the whole rule: no tolerance, and "both good" is not "both bad".
- `comparison_agreement`: per comparison criterion, the panel's
  majority-vote rate, Fleiss' kappa and Krippendorff's alpha (nominal), by
  `protocol.agreement.agreement_by_criterion` over the submitted labels.
- `pairwise_gold_pool`: the unanimous items (REPA §3.2, "consistent"; issue #13: the gold pool
  for exams, control items and judge calibration).

Frozen copies (answers listed in ReservedAnswer: exam and control material) are never work, so
their triples are left out of both the agreement and the gold pool.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from panels.models import Panel
from protocol.agreement import Agreement, agreement_by_criterion
from protocol.pairwise import Label, unanimous
from work.models import Estimate, EstimateStatus, Triple, TripleKind


def labels_match(*, ref_label: Label | str, label: Label | str) -> bool:
    """Whether a candidate's label equals the gold label (both in the pair's orientation).

    An empty or unknown label (nothing submitted, a corrupted row) matches nothing.
    """
    valid = {value.value for value in Label}
    return ref_label in valid and label in valid and Label(ref_label) is Label(label)


@dataclass(frozen=True)
class LabelledTriple:
    """One pairwise triple with its submitted labels (in slot order)."""

    triple_id: int
    criterion_key: str
    required_overlap: int
    labels: list[str]


def submitted_labels(panel_id: int | None = None) -> list[LabelledTriple]:
    """The pairwise work triples (of one panel, or all) that have a submitted label, in
    (criterion position, key, triple) order."""
    estimates = Estimate.objects.filter(
        status=EstimateStatus.SUBMITTED,
        triple__kind=TripleKind.PAIRWISE,
        triple__answer__reserved__isnull=True,
    ).exclude(label="")
    if panel_id is not None:
        estimates = estimates.filter(triple__panel_id=panel_id)
    rows = estimates.order_by(
        "triple__comparison_criterion__position",
        "triple__comparison_criterion__key",
        "triple_id",
        "slot",
    ).values_list(
        "triple_id", "triple__comparison_criterion__key", "triple__required_overlap", "label"
    )
    by_triple: dict[int, LabelledTriple] = {}
    for triple_id, key, overlap, label in rows:
        item = by_triple.get(triple_id)
        if item is None:
            item = by_triple[triple_id] = LabelledTriple(triple_id, key, overlap, [])
        item.labels.append(label)
    return list(by_triple.values())


def comparison_agreement(panel: Panel, *, complete_only: bool = True) -> dict[str, Agreement]:
    """Per criterion key, the panel's agreement on its submitted labels (criterion order).

    By default only complete items count (as many labels as the triple's overlap: REPA's
    three): a triple still in work would count as "no majority" in the majority-vote rate, and
    Fleiss' kappa needs the same number of labels per item. `complete_only=False` takes every
    item with a label (kappa is then None when the sizes differ; alpha handles missing labels).
    """
    items: dict[str, list[list[str]]] = defaultdict(list)
    for triple in submitted_labels(panel.pk):
        if complete_only and len(triple.labels) < triple.required_overlap:
            continue
        items[triple.criterion_key].append(triple.labels)
    return agreement_by_criterion(items)


@dataclass(frozen=True)
class GoldItem:
    triple: Triple
    label: Label


def pairwise_gold_pool(panel_id: int | None = None) -> list[GoldItem]:
    """The unanimous pairwise triples (every one of the triple's `required_overlap` labels the
    same: REPA's 3 of 3) with their label, of one panel or of all.

    A triple with fewer labels than its overlap is not gold yet (a later label may differ), and
    an overlap below 2 never makes gold: one label is no agreement.
    """
    gold = {
        triple.triple_id: label
        for triple in submitted_labels(panel_id)
        if (label := unanimous(triple.labels, max(triple.required_overlap, 2))) is not None
    }
    triples = Triple.objects.filter(pk__in=list(gold)).select_related(
        "pair", "comparison_criterion"
    )
    return [GoldItem(t, gold[t.pk]) for t in sorted(triples, key=lambda t: t.pk)]
