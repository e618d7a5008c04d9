"""What the answer review page shows: every criterion of an answer for a panel, every expert's
score and rationale side by side under a code, the aggregation's verdict and the judges' latest
scores (through dataset.columns: the console does not import judging).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q, QuerySet

from dataset import columns
from dataset.adjudication import latest_for
from dataset.models import Adjudication, TripleAggregate
from panels.models import Panel
from taxonomy.models import CriterionGroup
from work.models import Estimate, EstimateStatus, Triple, TripleKind
from work.selectors import blind_answer_ids

# Scores of these statuses are final enough to compare (a draft is still being typed).
_SHOWN = (EstimateStatus.SUBMITTED, EstimateStatus.SKIPPED)


@dataclass
class ReviewCell:
    """One expert's estimate of one criterion, under the expert's code."""

    code: str
    estimate_id: int
    status: str
    status_label: str
    score: int | None
    is_na: bool
    rationale: str
    review_status: str
    review_label: str
    review_comment: str
    revisions: int
    # Whether the panel may return or accept it (submitted work of this panel).
    reviewable: bool


@dataclass
class ReviewRow:
    triple_id: int
    key: str
    name: str
    group: str
    group_label: str
    panel_number: int
    cells: list[ReviewCell] = field(default_factory=list)
    # More than one distinct value (a score or NA) among the submitted estimates.
    disputed: bool = False
    aggregate: TripleAggregate | None = None
    # The supervisors' latest verdict, and whether this panel may record one (its own triple).
    adjudication: Adjudication | None = None
    adjudicable: bool = False
    levels: list[int] = field(default_factory=list)
    allows_na: bool = False
    judges: list[dict[str, Any]] = field(default_factory=list)


def _value(cell: ReviewCell) -> Any:
    return "NA" if cell.is_na else cell.score


def answer_triples(panel: Panel, answer: Any) -> QuerySet[Triple]:
    """The answer's rubric triples of the panel, plus its critical gates (any panel's): what
    the panel's experts score on it."""
    return (
        Triple.objects.filter(answer=answer, kind=TripleKind.POINTWISE)
        .filter(Q(panel=panel) | Q(group=CriterionGroup.CRITICAL))
        .select_related("criterion", "rubric", "panel")
    )


def expert_codes(answer: Any) -> dict[int, str]:
    """A code per expert who holds an estimate of the answer ("E1", "E2", ...), numbered by
    their first estimate of it, so the codes stay the same from one visit to the next and never
    say who the expert is."""
    first: dict[int, int] = {}
    for expert_id, estimate_id in (
        Estimate.objects.filter(triple__answer=answer).order_by("id").values_list("expert_id", "id")
    ):
        first.setdefault(expert_id, estimate_id)
    ordered = sorted(first, key=first.__getitem__)
    return {expert_id: f"E{n}" for n, expert_id in enumerate(ordered, start=1)}


def viewer_blind_on(answer: Any, viewer: Any) -> bool:
    """The viewer holds open work on this answer as an expert: he sees no scores of it."""
    return bool(blind_answer_ids(viewer).filter(answer_id=answer.pk).exists())


def _judges(triple_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """Each judge configuration's latest score and feedback per triple (none without judging)."""
    judges = columns.provider("judge")
    if judges is None or not triple_ids:
        return {}
    names = judges.names()
    if not names:
        return {}
    values = judges.aligned(triple_ids, names)
    out: dict[int, list[dict[str, Any]]] = {}
    for name in names:
        prefix = f"judge__{name}__"
        runs = values.get(prefix + "run") or [None] * len(triple_ids)
        for i, triple_id in enumerate(triple_ids):
            if runs[i] is None:
                continue
            out.setdefault(triple_id, []).append(
                {
                    "name": name,
                    "score": values[prefix + "score"][i],
                    "parse_ok": values[prefix + "parse_ok"][i],
                    "feedback": values[prefix + "feedback"][i] or "",
                    "run": runs[i],
                }
            )
    return out


def answer_review(panel: Panel, answer: Any) -> list[ReviewRow]:
    """The review page's rows: one per criterion, critical gates first, each with the cells of
    every expert (by code) who submitted or skipped it."""
    triples = sorted(
        answer_triples(panel, answer),
        key=lambda t: (t.group != CriterionGroup.CRITICAL, t.position, t.pk),
    )
    codes = expert_codes(answer)
    group_labels = {str(v): str(label) for v, label in CriterionGroup.choices}
    status_labels = {str(v): str(label) for v, label in EstimateStatus.choices}
    ids = [t.pk for t in triples]
    estimates = (
        Estimate.objects.filter(triple_id__in=ids, status__in=_SHOWN)
        .select_related("assignment")
        .order_by("id")
    )
    by_triple: dict[int, list[ReviewCell]] = {}
    for e in estimates:
        by_triple.setdefault(e.triple_id, []).append(
            ReviewCell(
                code=codes.get(e.expert_id, "E?"),
                estimate_id=e.pk,
                status=e.status,
                status_label=status_labels.get(e.status, e.status),
                score=e.score,
                is_na=e.is_na,
                rationale=e.rationale,
                review_status=e.review_status,
                review_label=e.get_review_status_display(),
                review_comment=e.review_comment,
                revisions=e.revision,
                reviewable=e.status == EstimateStatus.SUBMITTED
                and e.assignment.panel_id == panel.pk
                and e.assignment.kind == "work"
                and not e.assignment.locked,
            )
        )
    aggregates = {a.triple_id: a for a in TripleAggregate.objects.filter(triple_id__in=ids)}
    judges = _judges(ids)
    verdicts = latest_for(ids)
    rows = []
    for t in triples:
        criterion = t.criterion
        assert criterion is not None, "pointwise triples have a criterion"
        cells = sorted(by_triple.get(t.pk, []), key=lambda c: (len(c.code), c.code))
        submitted = {_value(c) for c in cells if c.status == EstimateStatus.SUBMITTED}
        rows.append(
            ReviewRow(
                triple_id=t.pk,
                key=criterion.key,
                name=criterion.display_name,
                group=t.group,
                group_label=group_labels.get(t.group, t.group),
                panel_number=t.panel.number,
                cells=cells,
                disputed=len(submitted) > 1,
                aggregate=aggregates.get(t.pk),
                judges=judges.get(t.pk, []),
                adjudication=verdicts.get(t.pk),
                adjudicable=t.panel_id == panel.pk,
                levels=t.rubric.values if t.rubric is not None else [],
                allows_na=criterion.allows_na,
            )
        )
    return rows
