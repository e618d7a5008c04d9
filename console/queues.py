"""The supervisor's review queues of a panel (issue #18): what to look at first, in order.

Five queues, each an ordered list of items that open the answer review page:

- ``low_confidence``: the panel's aggregated triples, lowest aggregate confidence first;
- ``rationale``: submitted estimates whose rationale breaks the rationale rule, newest first.
  No flag is stored for it (the aggregation computes rule 1 on each run), so the queue asks
  the rule's own implementations (protocol.rationale and its column-wise form in
  dataset.aggregation, both tested on tests/data/rationale_cases.json), never a copy of it;
- ``control``: graded control deliveries where the expert's scores differ from the reference
  on at least one criterion (`n_matched < n_total`, as grading stored it), newest first;
- ``expert``: one expert's latest submitted estimates of the panel, newest first;
- ``sent``: estimates a supervisor sent to review from the data browser (console.bulk), not
  reviewed since, the longest waiting first.

A position in a queue is carried in the review page's URL (``?queue=...&pos=N``, 1-based), so
the neighbours are found again on the server and next/previous work without JavaScript. No
queue counts its rows: a page is fetched as ``limit + 1`` rows, the extra one telling whether
there is a next page, so a page costs the same on a panel of any size.

The viewer's own open answers are left out of every queue (as in the estimates list): a
supervisor who is also an expert scores blind.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
from django.db.models import Exists, F, OuterRef, QuerySet
from django.utils.translation import gettext_lazy as _

from console.models import ReviewRequest
from dataset.aggregation import rationale_ok_vectorised
from dataset.models import TripleAggregate
from panels.models import Expert, Membership, Panel
from protocol.rationale import RationaleRule, rationale_errors
from quality.control import control_settings_for
from quality.copies import scores_match
from quality.models import ControlDelivery, ReferenceScore
from taxonomy.models import Rubric, best_of
from work.models import Estimate, EstimateStatus, TripleKind
from work.selectors import blind_answer_ids

LOW_CONFIDENCE = "low_confidence"
RATIONALE = "rationale"
CONTROL = "control"
EXPERT = "expert"
SENT = "sent"

QUEUES: dict[str, Any] = {
    LOW_CONFIDENCE: _("Lowest confidence"),
    RATIONALE: _("Rationale rule failures"),
    CONTROL: _("Control item mismatches"),
    EXPERT: _("An expert's recent work"),
    SENT: _("Sent to review"),
}

PAGE_SIZE = 50
# Rationales read from the database per round trip while looking for rule failures.
_CHUNK = 2000


# What a queue row reads of its criterion: the key and what `Criterion.display_name` needs.
_CRITERION_NAMES = [
    f"triple__criterion__{f}" for f in ("key", "name_en", "name_ru", "context_en", "context_ru")
]


@dataclass
class Mismatch:
    """One criterion of a control delivery where the expert's score is not the reference's."""

    key: str
    score: str
    reference: str
    name: str = ""


@dataclass
class QueueItem:
    """One row of a queue: what it is about and the answer whose review page it opens."""

    answer_id: int
    triple_id: int | None = None
    estimate_id: int | None = None
    criterion: str = ""
    # The criterion as pages name it (`Criterion.display_name`); `criterion` is its key.
    criterion_name: str = ""
    expert: str = ""
    when: datetime | None = None
    score: str = ""
    confidence: float | None = None
    mean: float | None = None
    n_estimates: int | None = None
    excluded_reason: str = ""
    review_status: str = ""
    review_label: str = ""
    problems: list[str] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)
    matched: str = ""


@dataclass
class QueuePage:
    items: list[QueueItem]
    offset: int
    has_more: bool


def _shown(score: int | None, is_na: bool) -> str:
    return str(_("NA")) if is_na else ("" if score is None else str(score))


def panel_experts(panel: Panel) -> list[Expert]:
    """The panel's experts by pseudonym: the codes supervisors know them by in the console."""
    return [
        m.expert
        for m in Membership.objects.filter(panel=panel)
        .select_related("expert")
        .only("expert__id", "expert__pseudonym")
        .order_by("expert__pseudonym")
    ]


def panel_expert(panel: Panel, pseudonym: str) -> Expert | None:
    """The panel's expert with that pseudonym (None for anyone else: another panel's expert
    does not exist here)."""
    if not pseudonym:
        return None
    return (
        Expert.objects.filter(pseudonym=pseudonym, memberships__panel=panel)
        .only("id", "pseudonym")
        .first()
    )


def _work_estimates(panel: Panel, viewer: Any) -> QuerySet[Estimate]:
    """Submitted rubric work of the panel, less the viewer's own open answers."""
    qs = Estimate.objects.filter(
        triple__panel=panel,
        triple__kind=TripleKind.POINTWISE,
        assignment__kind="work",
        status=EstimateStatus.SUBMITTED,
    )
    if viewer is not None and hasattr(viewer, "expert"):
        qs = qs.exclude(triple__answer_id__in=blind_answer_ids(viewer))
    return qs


def _estimate_item(e: Estimate) -> QueueItem:
    return QueueItem(
        answer_id=e.triple.answer_id,
        triple_id=e.triple_id,
        estimate_id=e.pk,
        criterion=e.triple.criterion.key if e.triple.criterion else "",
        criterion_name=e.triple.criterion.display_name if e.triple.criterion else "",
        expert=e.expert.pseudonym,
        when=e.submitted_at,
        score=_shown(e.score, e.is_na),
        review_status=e.review_status,
        review_label=e.get_review_status_display() if e.review_status else "",
    )


def _estimate_rows(qs: QuerySet[Estimate]) -> QuerySet[Estimate]:
    return qs.select_related("expert", "triple__criterion").only(
        "id",
        "score",
        "is_na",
        "submitted_at",
        "review_status",
        "triple_id",
        "triple__answer_id",
        *_CRITERION_NAMES,
        "expert__pseudonym",
    )


def _low_confidence(panel: Panel, viewer: Any, offset: int, limit: int) -> list[QueueItem]:
    qs = TripleAggregate.objects.filter(
        triple__panel=panel, triple__kind=TripleKind.POINTWISE, confidence__isnull=False
    )
    if viewer is not None and hasattr(viewer, "expert"):
        qs = qs.exclude(triple__answer_id__in=blind_answer_ids(viewer))
    rows = (
        qs.select_related("triple__criterion")
        .only(
            "confidence",
            "mean",
            "n_estimates",
            "excluded_reason",
            "triple_id",
            "triple__answer_id",
            *_CRITERION_NAMES,
        )
        .order_by("confidence", "triple_id")[offset : offset + limit]
    )
    return [
        QueueItem(
            answer_id=a.triple.answer_id,
            triple_id=a.triple_id,
            criterion=a.triple.criterion.key if a.triple.criterion else "",
            criterion_name=a.triple.criterion.display_name if a.triple.criterion else "",
            confidence=a.confidence,
            mean=a.mean,
            n_estimates=a.n_estimates,
            excluded_reason=a.excluded_reason,
        )
        for a in rows
    ]


def _rationale_failures(panel: Panel, viewer: Any, offset: int, limit: int) -> list[QueueItem]:
    """Newest first, the estimates whose rationale breaks the rule.

    The texts are read in chunks (one query, a server-side cursor on PostgreSQL) until enough
    failures are found; each chunk is checked by the aggregation's column-wise form of the rule
    (`rationale_ok_vectorised`, ~10 times faster than the per-text function, tested on the same
    case list), and the failures get the rule's own messages from `rationale_errors`. The
    page's rows are then loaded in one query.
    """
    rule = RationaleRule.current()
    best = {r.pk: best_of(r.values, r.best_end) for r in Rubric.objects.only("levels", "best_end")}
    wanted = offset + limit
    failing: list[tuple[int, list[str]]] = []
    scan = (
        _work_estimates(panel, viewer)
        .order_by("-submitted_at", "-id")
        .values_list("id", "rationale", "score", "is_na", "rubric_id", "triple__rubric_id")
    )
    chunk: list[tuple[Any, ...]] = []

    def check(rows: list[tuple[Any, ...]]) -> None:
        bests = [best.get(r[4] or r[5], -1) for r in rows]
        ok = rationale_ok_vectorised(
            pa.array([r[1] for r in rows], type=pa.string()),
            np.array([np.nan if r[2] is None else r[2] for r in rows], dtype=float),
            np.array([bool(r[3]) for r in rows], dtype=bool),
            np.array(bests, dtype=float),
            script=rule.script,
            min_words=rule.min_words,
            script_share=rule.script_share,
        )
        for i in np.flatnonzero(~ok):
            pk, text, score, is_na = rows[i][:4]
            errors = rationale_errors(
                text, score=score, is_na=is_na, best_score=bests[i], rule=rule
            )
            if errors and len(failing) < wanted:
                failing.append((pk, errors))

    for row in scan.iterator(chunk_size=_CHUNK):
        chunk.append(row)
        if len(chunk) == _CHUNK:
            check(chunk)
            chunk = []
            if len(failing) >= wanted:
                break
    if chunk and len(failing) < wanted:
        check(chunk)
    chosen = failing[offset:wanted]
    loaded = {
        e.pk: e for e in _estimate_rows(Estimate.objects.filter(pk__in=[p for p, _ in chosen]))
    }
    items = []
    for pk, errors in chosen:
        if pk in loaded:
            item = _estimate_item(loaded[pk])
            item.problems = [str(e) for e in errors]
            items.append(item)
    return items


def _control_mismatches(panel: Panel, viewer: Any, offset: int, limit: int) -> list[QueueItem]:
    """Graded control deliveries of gold answers with at least one criterion off the reference.

    A row opens the gold answer's review page (the delivery itself is a frozen copy that no
    review page shows); the criteria that differ are listed on the row, compared by the same
    rule grading used (quality.copies.scores_match, with the panel's tolerance).
    """
    qs = ControlDelivery.objects.filter(
        item__panel=panel,
        item__answer__isnull=False,
        graded_at__isnull=False,
        n_matched__lt=F("n_total"),
    )
    if viewer is not None and hasattr(viewer, "expert"):
        qs = qs.exclude(item__answer_id__in=blind_answer_ids(viewer))
    deliveries = list(
        qs.select_related("expert", "item")
        .only(
            "id",
            "n_total",
            "n_matched",
            "graded_at",
            "assignment_id",
            "expert__pseudonym",
            "item__answer_id",
        )
        .order_by("-graded_at", "-id")[offset : offset + limit]
    )
    if not deliveries:
        return []
    estimates: dict[int, dict[int, Estimate]] = {}
    for e in Estimate.objects.filter(
        assignment_id__in=[d.assignment_id for d in deliveries]
    ).select_related("triple__criterion", "triple__rubric"):
        if e.triple.criterion_id is not None:
            estimates.setdefault(e.assignment_id, {})[e.triple.criterion_id] = e
    references: dict[int, list[ReferenceScore]] = {}
    for ref in ReferenceScore.objects.filter(
        panel=panel, answer_id__in=[d.item.answer_id for d in deliveries]
    ).order_by("criterion_id"):
        if ref.answer_id is not None:
            references.setdefault(ref.answer_id, []).append(ref)
    tolerance = control_settings_for(panel).tolerance
    items = []
    for d in deliveries:
        assert d.item.answer_id is not None, "filtered to gold answers above"
        mismatches = []
        own = estimates.get(d.assignment_id, {})
        for ref in references.get(d.item.answer_id, []):
            est = own.get(ref.criterion_id)
            if est is None or est.triple.rubric is None:
                continue
            submitted = est.status == EstimateStatus.SUBMITTED
            score = est.score if submitted else None
            is_na = est.is_na if submitted else False
            if not scores_match(
                ref_score=ref.score,
                ref_na=ref.is_na,
                score=score,
                is_na=is_na,
                scale=est.triple.rubric.values,
                tolerance=tolerance,
            ):
                criterion = est.triple.criterion
                mismatches.append(
                    Mismatch(
                        key=criterion.key if criterion else "",
                        score=_shown(score, is_na),
                        reference=_shown(ref.score, ref.is_na),
                        name=criterion.display_name if criterion else "",
                    )
                )
        items.append(
            QueueItem(
                answer_id=d.item.answer_id,
                expert=d.expert.pseudonym,
                when=d.graded_at,
                matched=f"{d.n_matched} / {d.n_total}",
                mismatches=mismatches,
            )
        )
    return items


def _expert_work(
    panel: Panel, viewer: Any, offset: int, limit: int, expert: Expert | None
) -> list[QueueItem]:
    if expert is None:
        return []
    rows = _estimate_rows(_work_estimates(panel, viewer).filter(expert=expert)).order_by(
        "-submitted_at", "-id"
    )[offset : offset + limit]
    return [_estimate_item(e) for e in rows]


def _sent(panel: Panel, viewer: Any, offset: int, limit: int) -> list[QueueItem]:
    waiting = ReviewRequest.objects.filter(estimate_id=OuterRef("pk")).filter(
        ReviewRequest.pending()
    )
    rows = _estimate_rows(_work_estimates(panel, viewer).filter(Exists(waiting))).order_by(
        "review_request__requested_at", "id"
    )[offset : offset + limit]
    return [_estimate_item(e) for e in rows]


def queue_page(
    panel: Panel,
    queue: str,
    *,
    viewer: Any,
    offset: int = 0,
    limit: int = PAGE_SIZE,
    expert: Expert | None = None,
) -> QueuePage:
    """Items `offset`.. of the queue (at most `limit`), and whether more follow."""
    offset = max(0, offset)
    fetch = limit + 1
    if queue == LOW_CONFIDENCE:
        items = _low_confidence(panel, viewer, offset, fetch)
    elif queue == RATIONALE:
        items = _rationale_failures(panel, viewer, offset, fetch)
    elif queue == CONTROL:
        items = _control_mismatches(panel, viewer, offset, fetch)
    elif queue == EXPERT:
        items = _expert_work(panel, viewer, offset, fetch, expert)
    elif queue == SENT:
        items = _sent(panel, viewer, offset, fetch)
    else:
        raise ValueError(f"unknown review queue {queue!r}")
    return QueuePage(items=items[:limit], offset=offset, has_more=len(items) > limit)


@dataclass
class Neighbours:
    """Where the review page stands in a queue: the item at `pos` and the ones around it."""

    queue: str
    pos: int
    current: QueueItem | None
    previous: QueueItem | None
    next: QueueItem | None

    @property
    def page(self) -> int:
        """The queue page that lists the current item."""
        return (self.pos - 1) // PAGE_SIZE + 1


def neighbours(
    panel: Panel, queue: str, pos: int, *, viewer: Any, expert: Expert | None = None
) -> Neighbours:
    """The items at `pos - 1`, `pos` and `pos + 1` (1-based) of the queue, in one page read."""
    pos = max(1, pos)
    start = max(0, pos - 2)
    found = queue_page(panel, queue, viewer=viewer, offset=start, limit=3, expert=expert).items
    by_pos = {start + 1 + i: item for i, item in enumerate(found)}
    return Neighbours(
        queue=queue,
        pos=pos,
        current=by_pos.get(pos),
        previous=by_pos.get(pos - 1),
        next=by_pos.get(pos + 1),
    )


def positions(offset: int, items: Iterable[QueueItem]) -> list[tuple[int, QueueItem]]:
    """Each item with its 1-based position in the queue."""
    return [(offset + 1 + i, item) for i, item in enumerate(items)]
