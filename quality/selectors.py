"""Reads of quality: per-expert agreement, exams for supervisors and candidates, exam positions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count
from django.urls import reverse

from lib.sql import fetch_all
from panels.models import Expert, Membership, Panel
from quality.exams import exam_refusal
from quality.models import Exam, ExamAttempt, ExamAttemptItem
from work.models import Assignment, AssignmentStatus, Estimate, Triple, TripleKind

_AGREEMENT_SQL = """
WITH e AS (
    SELECT es.id, es.triple_id, es.expert_id, t."group" AS grp, es.is_na,
           CASE WHEN es.is_na THEN NULL ELSE es.score END AS score
    FROM {estimate} es JOIN {triple} t ON t.id = es.triple_id
    -- scores only: a pairwise triple's label has its own agreement (quality.pairwise)
    WHERE t.panel_id = %s AND t.kind = '{pointwise}' AND es.status = 'submitted' {expert_filter}
), v AS (
    SELECT es.triple_id, es.is_na, CASE WHEN es.is_na THEN NULL ELSE es.score END AS score,
           COUNT(*) AS n
    FROM {estimate} es
    WHERE es.status = 'submitted' AND es.triple_id IN (SELECT triple_id FROM e)
    GROUP BY 1, 2, 3
), o AS (
    -- every value given to the triple, counted without the expert's own vote
    SELECT e.id, e.expert_id, e.grp, e.is_na AS own_na, e.score AS own_score,
           v.is_na, v.score,
           v.n - CASE WHEN v.is_na = e.is_na AND v.score IS NOT DISTINCT FROM e.score
                      THEN 1 ELSE 0 END AS others
    FROM e JOIN v ON v.triple_id = e.triple_id
), m AS (
    SELECT o.*, MAX(others) OVER (PARTITION BY id) AS top FROM o
), per_estimate AS (
    SELECT id, expert_id, grp,
           MAX(CASE WHEN is_na = own_na AND score IS NOT DISTINCT FROM own_score
                    THEN 1 ELSE 0 END) AS agrees,
           MIN(ABS(own_score - score)) AS distance
    FROM m WHERE top > 0 AND others = top
    GROUP BY id, expert_id, grp
)
SELECT expert_id, grp, COUNT(*), SUM(agrees), AVG(distance)
FROM per_estimate GROUP BY expert_id, grp
"""


@dataclass
class Agreement:
    n: int
    agree: int
    distance: float | None

    @property
    def rate(self) -> float | None:
        return self.agree / self.n if self.n else None


def expert_agreement(
    panel: Panel, expert_ids: list[int] | None = None
) -> dict[int, dict[str, Agreement]]:
    """Per expert and criterion group (plus "all"): how often the expert's score equals the
    modal score of the other experts on the same triples, and the mean absolute distance from it.

    The pointwise kind's measure, over rubric triples only: a side-by-side estimate has a label
    and no score, so every two of them would "agree" on the missing score.

    NA is a value for equality and left out of distances; with tied modes, equal to any of them
    counts as agreement and the distance is to the nearest. Triples nobody else scored are left
    out (exam and control copies have one vote, so they drop out by themselves).
    """
    expert_filter = ""
    params: list[Any] = [panel.pk]
    if expert_ids is not None:
        if not expert_ids:
            return {}
        # Portable IN list (the demo runs on SQLite): one placeholder per id.
        expert_filter = "AND es.expert_id IN (" + ", ".join(["%s"] * len(expert_ids)) + ")"
        params.extend(int(pk) for pk in expert_ids)
    # Table names from the models: renaming one (Meta.db_table) cannot break the query.
    sql = _AGREEMENT_SQL.format(
        estimate=Estimate._meta.db_table,
        triple=Triple._meta.db_table,
        pointwise=TripleKind.POINTWISE.value,
        expert_filter=expert_filter,
    )
    rows = fetch_all(sql, params)
    result: dict[int, dict[str, Agreement]] = {}
    totals: dict[int, list[float]] = {}
    for expert_id, group, n, agree, distance in rows:
        result.setdefault(expert_id, {})[group] = Agreement(
            n=n, agree=int(agree), distance=float(distance) if distance is not None else None
        )
        t = totals.setdefault(expert_id, [0, 0, 0.0, 0])
        t[0] += n
        t[1] += int(agree)
        if distance is not None:
            # Weighted by the number of estimates of the group: the overall mean distance.
            t[2] += float(distance) * n
            t[3] += n
    for expert_id, (n, agree, dist_sum, dist_n) in totals.items():
        result[expert_id]["all"] = Agreement(
            n=int(n), agree=int(agree), distance=dist_sum / dist_n if dist_n else None
        )
    return result


def exams_for_panel(panel: Panel) -> list[Exam]:
    """The latest version of each exam of the panel, with attempt counts over all versions."""
    exams = list(Exam.objects.filter(panel=panel).order_by("lineage", "-version"))
    latest: dict[Any, Exam] = {}
    for exam in exams:
        latest.setdefault(exam.lineage, exam)
    counts = dict(
        ExamAttempt.objects.filter(exam__panel=panel)
        .values_list("exam__lineage")
        .annotate(n=Count("id"))
        .values_list("exam__lineage", "n")
    )
    for exam in latest.values():
        exam.n_attempts = counts.get(exam.lineage, 0)  # type: ignore[attr-defined]
    return sorted(latest.values(), key=lambda e: e.created_at)


def exams_for_candidate(expert: Expert) -> list[dict[str, Any]]:
    """Open exams of the candidate's panels with their own attempts (never the reference):
    practice rounds first (training before the exam), then the qualifying exams."""

    panel_ids = list(Membership.objects.filter(expert=expert).values_list("panel_id", flat=True))
    exams = [
        e
        for e in Exam.objects.filter(panel_id__in=panel_ids).select_related("panel")
        if e.is_active
    ]
    attempts: dict[Any, list[ExamAttempt]] = {}
    for attempt in ExamAttempt.objects.filter(expert=expert).select_related("exam"):
        attempts.setdefault(attempt.exam.lineage, []).append(attempt)
    rows = []
    for exam in exams:
        mine = sorted(attempts.get(exam.lineage, []), key=lambda a: a.number)
        open_attempt = next((a for a in mine if a.submitted_at is None), None)
        rows.append(
            {
                "exam": exam,
                "attempts": mine,
                "open_attempt": open_attempt,
                "refusal": exam_refusal(exam, expert),
            }
        )

    def order(row: dict[str, Any]) -> tuple[bool, Any]:
        exam: Exam = row["exam"]
        return (not exam.is_practice, exam.created_at)

    rows.sort(key=order)
    return rows


@dataclass(frozen=True)
class ExamPosition:
    """Where an exam assignment stands in its attempt, for the scoring page's header and "next".

    `next_assignment_id` is the next unanswered item of the same attempt (after this one in the
    exam's order, then any earlier one left open), None when this was the last one left.
    `practice`: a practice round, whose every submitted item is followed by its feedback.
    """

    attempt_id: int
    exam_id: int
    title: str
    number: int
    total: int
    next_assignment_id: int | None
    practice: bool = False

    def continue_url(self, after: int) -> str:
        """The attempt's continue page: the next unanswered item, or the result after the last.

        In practice, the item's feedback (its reference and comments) comes first; the feedback
        page links on to the continue page.
        """
        if self.practice:
            return reverse("exam_practice_feedback", args=[self.attempt_id, after])
        return reverse("exam_attempt_continue", args=[self.attempt_id]) + f"?after={after}"


def exam_position(assignment_id: int) -> ExamPosition | None:
    """The exam position of an assignment, None for an assignment that is not an exam item."""

    link = (
        ExamAttemptItem.objects.filter(assignment_id=assignment_id)
        .select_related("attempt__exam")
        .only("attempt_id", "attempt__mode", "attempt__exam__id", "attempt__exam__title")
        .first()
    )
    if link is None:
        return None
    # Items in the order the attempt was built (exam position); assignments were created so.
    rows = list(
        ExamAttemptItem.objects.filter(attempt_id=link.attempt_id)
        .order_by("assignment_id")
        .values_list("assignment_id", "assignment__status")
    )
    ids = [pk for pk, _status in rows]
    here = ids.index(assignment_id)
    open_ids = [pk for pk, status in rows if status != AssignmentStatus.SUBMITTED]
    later = [pk for pk in open_ids if ids.index(pk) > here]
    earlier = [pk for pk in open_ids if ids.index(pk) < here]
    following = (later or earlier)[0] if (later or earlier) else None
    return ExamPosition(
        attempt_id=link.attempt_id,
        exam_id=link.attempt.exam.pk,
        title=link.attempt.exam.title,
        number=here + 1,
        total=len(ids),
        next_assignment_id=following,
        practice=link.attempt.is_practice,
    )


def attempt_first_open_assignment(attempt: ExamAttempt) -> int | None:
    return (
        Assignment.objects.filter(exam_item__attempt=attempt)
        .exclude(status="submitted")
        .order_by("pk")
        .values_list("pk", flat=True)
        .first()
    )
