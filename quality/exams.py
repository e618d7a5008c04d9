"""Qualification exams: versions, items, references, attempts, grading and qualification.

Exams are scored through the ordinary scoring flow (work.services) on frozen copies of their
answers (quality.copies); a graded attempt keeps its material, references and rules.
"""

from __future__ import annotations

import itertools
import random
import secrets
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from material.models import Answer
from panels.models import Expert, Membership, Panel
from panels.services import actor_or_none, audit
from quality import kinds as gold_kinds
from quality.copies import (
    ScoringSpec,
    answers_copy,
    scores_match,
    scoring_material_create,
)
from quality.models import (
    Exam,
    ExamAttempt,
    ExamAttemptItem,
    ExamItem,
    ExamMode,
    ReferenceLabel,
    ReferenceScore,
)
from taxonomy.models import Criterion, CriterionGroup
from work.models import (
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    Estimate,
    ReservedAnswer,
)

EXAM_SETTINGS_FIELDS = (
    "title",
    "mode",
    "pass_threshold",
    "tolerance",
    "max_attempts",
    "retake_wait_hours",
    "criterion_groups",
    "is_active",
)


class ExamError(Exception):
    """An exam action that is not allowed now; the message is shown to the user."""


@transaction.atomic
def exam_create(*, panel: Panel, title: str, user: Any = None, **options: Any) -> Exam:
    exam = Exam(
        panel=panel, title=title, lineage=uuid.uuid4(), version=1, created_by=actor_or_none(user)
    )
    for name, value in options.items():
        if name in EXAM_SETTINGS_FIELDS:
            setattr(exam, name, value)
    exam.full_clean()
    exam.save()
    audit(action="exam_create", actor=user, panel=panel, data={"exam": exam.pk})
    return exam


def exam_latest(exam: Exam) -> Exam:
    return Exam.objects.filter(lineage=exam.lineage).order_by("-version").first() or exam


def exam_writable(exam: Exam, user: Any) -> Exam:
    """The version to write to: the exam itself until someone took it, else a new version.

    Called inside a transaction. The lineage's latest row is locked so two editors cannot both
    fork version N into two versions N+1.
    """
    latest = (
        Exam.objects.select_for_update().filter(lineage=exam.lineage).order_by("-version").first()
    )
    if latest is None or latest.pk != exam.pk:
        raise ExamError(_("This is not the latest version of the exam: edit the latest one."))
    if not ExamAttempt.objects.filter(exam=latest).exists():
        return latest
    fresh = Exam.objects.create(
        panel_id=latest.panel_id,
        lineage=latest.lineage,
        version=latest.version + 1,
        title=latest.title,
        mode=latest.mode,
        pass_threshold=latest.pass_threshold,
        tolerance=latest.tolerance,
        max_attempts=latest.max_attempts,
        retake_wait_hours=latest.retake_wait_hours,
        criterion_groups=list(latest.criterion_groups or []),
        is_active=latest.is_active,
        created_by=actor_or_none(user),
    )
    Exam.objects.filter(pk=latest.pk).update(is_active=False)
    old_items = list(latest.items.order_by("position", "pk"))
    # The frozen answer copies are shared: their text never changes.
    new_items = ExamItem.objects.bulk_create(
        [
            ExamItem(exam=fresh, answer_id=i.answer_id, pair_id=i.pair_id, position=i.position)
            for i in old_items
        ]
    )
    item_map = {old.pk: new.pk for old, new in zip(old_items, new_items, strict=True)}
    ReferenceScore.objects.bulk_create(
        [
            ReferenceScore(
                item_id=item_map[r.exam_item_id],
                criterion_id=r.criterion_id,
                rubric_id=r.rubric_id,
                score=r.score,
                is_na=r.is_na,
                comment=r.comment,
            )
            for r in ReferenceScore.objects.filter(item__exam=latest)
        ]
    )
    ReferenceLabel.objects.bulk_create(
        [
            ReferenceLabel(
                item_id=item_map[r.exam_item_id],
                comparison_criterion_id=r.comparison_criterion_id,
                label=r.label,
                comment=r.comment,
                author_id=r.author_id,
            )
            for r in ReferenceLabel.objects.filter(item__exam=latest)
        ]
    )
    audit(
        action="exam_version",
        actor=user,
        panel=latest.panel,
        data={"from": latest.pk, "to": fresh.pk, "version": fresh.version},
    )
    return fresh


@transaction.atomic
def exam_update(*, exam: Exam, user: Any = None, **values: Any) -> Exam:
    """Change an exam's rules; a version somebody already took is forked, never edited."""
    target = exam_writable(exam, user)
    for name, value in values.items():
        if name not in EXAM_SETTINGS_FIELDS:
            raise ValueError(name)
        setattr(target, name, value)
    target.full_clean()
    target.save()
    return target


@transaction.atomic
def exam_item_add(*, exam: Exam, answer: Any, user: Any = None) -> tuple[Exam, ExamItem]:
    """Add an answer to the exam (as a frozen copy); returns the version written to."""
    target = exam_writable(exam, user)
    if target.items.filter(answer__reserved__source_id=answer.pk).exists():
        raise ExamError(_("This answer is already in the exam."))
    (copy,) = answers_copy(sources=[answer], purpose=ReservedAnswer.Purpose.EXAM)
    position = target.items.count()
    item = ExamItem.objects.create(exam=target, answer=copy, position=position)
    return target, item


@transaction.atomic
def exam_item_remove(*, exam: Exam, answer_id: int, user: Any = None) -> Exam:
    """Remove an item, addressed by its frozen answer copy (stable across versions)."""
    target = exam_writable(exam, user)
    target.items.filter(answer_id=answer_id).delete()
    return target


MAX_GOLD_PAIRS = 200


@dataclass
class ReferenceInput:
    answer_id: int  # the exam item's frozen copy
    criterion_id: int
    score: int | None
    is_na: bool = False
    comment: str = ""


def reference_errors(criterion: Criterion, score: int | None, is_na: bool) -> list[str]:
    if criterion.rubric is None:
        return [_("Criterion %(key)s has no rubric.") % {"key": criterion.key}]
    if is_na:
        if not criterion.allows_na:
            return [_("Criterion %(key)s cannot be NA.") % {"key": criterion.key}]
        return []
    if score is None:
        return [_("A score or NA is required.")]
    if score not in criterion.rubric.values:
        return [
            _("Score %(score)s is not on the scale %(values)s of %(key)s.")
            % {
                "score": score,
                "values": ", ".join(map(str, criterion.rubric.values)),
                "key": criterion.key,
            }
        ]
    return []


def references_check(
    criteria: dict[int, Criterion], rows: Sequence[ReferenceInput], *, unknown: str
) -> None:
    """Refuse the whole set at its first bad row: a criterion outside `criteria` (`unknown` says
    why) or a score off its rubric. Exam and panel references share the rule."""
    for row in rows:
        criterion = criteria.get(row.criterion_id)
        if criterion is None:
            raise ExamError(unknown)
        problems = reference_errors(criterion, row.score, row.is_na)
        if problems:
            raise ExamError(problems[0])


@transaction.atomic
def exam_references_set(*, exam: Exam, rows: Sequence[ReferenceInput], user: Any = None) -> Exam:
    """Write reference scores and comments (replacing those of the same item and criterion)."""
    criteria = {
        c.pk: c
        for c in Criterion.objects.select_related("rubric").filter(
            pk__in={r.criterion_id for r in rows}
        )
    }
    references_check(criteria, rows, unknown=_("Unknown criterion."))
    target = exam_writable(exam, user)
    items = {i.answer_id: i for i in target.items.all()}
    for row in rows:
        item = items.get(row.answer_id)
        if item is None:
            raise ExamError(_("The answer is not in this exam."))
        criterion = criteria[row.criterion_id]
        assert criterion.rubric is not None
        ReferenceScore.objects.update_or_create(
            item=item,
            criterion=criterion,
            defaults={
                "rubric": criterion.rubric,
                "score": None if row.is_na else row.score,
                "is_na": row.is_na,
                "comment": row.comment.strip(),
            },
        )
    return target


def exam_refusal(exam: Exam, expert: Expert, *, now: Any = None) -> str:
    """Why the expert may not start this exam now ("" when they may)."""
    now = now or timezone.now()
    if not exam.is_active or exam_latest(exam).pk != exam.pk:
        return _("This exam is not open.")
    if not Membership.objects.filter(expert=expert, panel_id=exam.panel_id).exists():
        return _("You are not a candidate of this panel.")
    if not (
        ReferenceScore.objects.filter(item__exam=exam).exists()
        or ReferenceLabel.objects.filter(item__exam=exam).exists()
    ):
        return _("This exam has no questions yet.")
    attempts = list(
        ExamAttempt.objects.filter(expert=expert, exam__lineage=exam.lineage).order_by("-number")
    )
    # One open round at a time, of either mode: a practice round shows references item by item,
    # so one left open beside a qualifying round (of the same items) would be an answer key.
    if any(a.submitted_at is None for a in attempts):
        return _("Finish your current attempt first.")
    if exam.is_practice:
        # Practice grants nothing: as many rounds as the expert likes, no waiting.
        return ""
    # Only qualifying rounds count: a practice one, even of this lineage before the exam was
    # switched to qualifying, is neither an attempt used nor a reason to wait.
    attempts = [a for a in attempts if not a.is_practice]
    if any(a.verdict for a in attempts):
        return _("You have already passed this exam.")
    if len(attempts) >= exam.max_attempts:
        return _("No attempts left.")
    if attempts and attempts[0].submitted_at:
        ready = attempts[0].submitted_at + timedelta(hours=exam.retake_wait_hours)
        if ready > now:
            return _("You may retake the exam after %(when)s.") % {
                "when": timezone.localtime(ready).strftime("%Y-%m-%d %H:%M")
            }
    return ""


@transaction.atomic
def exam_attempt_start(*, exam: Exam, expert: Expert, seed: int | None = None) -> ExamAttempt:
    """Start an attempt: fresh copies of every exam answer and pair, assigned to the candidate.

    A pair item's placement (which answer is shown on the left) is drawn per attempt, from
    `seed` when given (tests), else from the system's randomness: the candidate cannot learn
    it from one attempt for the next.
    """

    # The expert row lock serialises double clicks: two attempts cannot start at once.
    Expert.objects.select_for_update().get(pk=expert.pk)
    refusal = exam_refusal(exam, expert)
    if refusal:
        raise ExamError(refusal)
    number = ExamAttempt.objects.filter(expert=expert, exam__lineage=exam.lineage).count() + 1
    attempt = ExamAttempt.objects.create(exam=exam, expert=expert, number=number, mode=exam.mode)
    references: dict[int, list[ReferenceScore]] = defaultdict(list)
    for ref in ReferenceScore.objects.filter(item__exam=exam).select_related("criterion", "rubric"):
        references[ref.exam_item_id].append(ref)
    labels: dict[int, list[ReferenceLabel]] = defaultdict(list)
    for label in ReferenceLabel.objects.filter(item__exam=exam).select_related(
        "comparison_criterion"
    ):
        labels[label.exam_item_id].append(label)
    refs = gold_kinds.ExamReferences(scores=references, labels=labels)
    items = [
        i
        for i in exam.items.order_by("position", "pk")
        if gold_kinds.of(i).exam_referenced(i, refs)
    ]
    # Placement is not a secret to guard cryptographically, only unknowable to the candidate.
    rng = random.Random(seed) if seed is not None else secrets.SystemRandom()  # noqa: S311
    # A run of one kind at a time, in the exam's order: the attempt's sequence (the page's
    # "next", quality.selectors.exam_position) follows the assignments' ids.
    for key, run in itertools.groupby(items, key=lambda i: i.task_kind):
        gold_kinds.kinds[key].exam_items_create(attempt, list(run), refs, rng)
    return attempt


def attempt_answers_create(
    attempt: ExamAttempt, items: list[ExamItem], references: dict[int, list[ReferenceScore]]
) -> None:
    sources = {a.pk: a for a in Answer.objects.filter(pk__in=[i.answer_id for i in items])}
    copies = answers_copy(
        sources=[sources[i.answer_id] for i in items if i.answer_id is not None],
        purpose=ReservedAnswer.Purpose.EXAM,
    )
    order = {g: n for n, g in enumerate(c.value for c in CriterionGroup)}
    specs = [
        ScoringSpec(
            criteria=[
                (r.criterion, r.exam_rubric)
                for r in sorted(references[i.pk], key=lambda r: (order[r.criterion.group], r.pk))
            ]
        )
        for i in items
    ]
    assignments = scoring_material_create(
        expert=attempt.expert,
        panel=attempt.exam.panel,
        kind=AssignmentKind.EXAM,
        copies=copies,
        specs=specs,
    )
    ExamAttemptItem.objects.bulk_create(
        [
            ExamAttemptItem(attempt=attempt, item=i, answer=c, assignment=a)
            for i, c, a in zip(items, copies, assignments, strict=True)
        ]
    )


def exam_on_assignment_submitted(assignment_id: int) -> None:
    """Hook after a successful submission: grade the attempt once all its answers are in.

    A practice item is locked at once: its reference is shown right after the submission, and
    an answer changed after seeing it would grade nothing. A no-op for any assignment that is
    not part of an exam. Safe to call twice.
    """

    row = (
        ExamAttemptItem.objects.filter(assignment_id=assignment_id)
        .values_list("attempt_id", "attempt__mode")
        .first()
    )
    if row is None:
        return
    link, mode = row
    if mode == ExamMode.PRACTICE:
        Assignment.objects.filter(pk=assignment_id).update(locked=True)
    open_left = (
        ExamAttemptItem.objects.filter(attempt_id=link)
        .exclude(assignment__status=AssignmentStatus.SUBMITTED)
        .exists()
    )
    if not open_left:
        exam_attempt_grade(attempt_id=link)


@dataclass
class Comparison:
    """One criterion of one exam answer: the candidate's value next to the reference."""

    item_id: int
    position: int
    answer_id: int
    criterion: Criterion
    scale: list[int]
    ref_score: int | None
    ref_na: bool
    ref_comment: str
    score: int | None
    is_na: bool
    rationale: str
    status: str
    match: bool


def attempt_comparisons(attempt: ExamAttempt, *, tolerance: int | None = None) -> list[Comparison]:
    """Every reference of the attempt's exam version next to the candidate's estimate."""

    tol = attempt.exam.tolerance if tolerance is None else tolerance
    links = {
        link.item_id: link.answer_id
        for link in ExamAttemptItem.objects.filter(attempt=attempt).only("item_id", "answer_id")
    }
    estimates = {
        (e.triple.answer_id, e.triple.criterion_id): e
        for e in Estimate.objects.filter(
            triple__answer_id__in=list(links.values()), expert_id=attempt.expert_id
        ).select_related("triple")
    }
    rows = []
    for ref in (
        ReferenceScore.objects.filter(item__exam_id=attempt.exam_id)
        .select_related("criterion", "rubric", "item")
        .order_by("item__position", "item_id", "pk")
    ):
        answer_id = links.get(ref.exam_item_id)
        est = estimates.get((answer_id, ref.criterion_id)) if answer_id else None
        submitted = est is not None and est.status == "submitted"
        score = est.score if submitted and est is not None else None
        is_na = bool(est.is_na) if submitted and est is not None else False
        scale = ref.exam_rubric.values
        rows.append(
            Comparison(
                item_id=ref.exam_item_id,
                position=ref.exam_item.position,
                answer_id=ref.exam_item.scored_answer_id,
                criterion=ref.criterion,
                scale=scale,
                ref_score=ref.score,
                ref_na=ref.is_na,
                ref_comment=ref.comment,
                score=score,
                is_na=is_na,
                rationale=est.rationale if est is not None else "",
                status=est.status if est is not None else "missing",
                match=scores_match(
                    ref_score=ref.score,
                    ref_na=ref.is_na,
                    score=score,
                    is_na=is_na,
                    scale=scale,
                    tolerance=tol,
                ),
            )
        )
    return rows


@transaction.atomic
def exam_attempt_grade(*, attempt_id: int) -> ExamAttempt:
    """Grade an attempt (once): matching coefficient, verdict, qualification on a pass."""

    attempt = ExamAttempt.objects.select_for_update().select_related("exam").get(pk=attempt_id)
    if attempt.graded:
        return attempt
    matches = [m for kind in gold_kinds.kinds for m in kind.exam_matches(attempt)]
    attempt.n_total = len(matches)
    attempt.n_matched = sum(matches)
    attempt.coefficient = attempt.n_matched / attempt.n_total if attempt.n_total else 0.0
    # A tiny epsilon: 7/10 must pass a 0.7 threshold despite binary floating point.
    # Practice has no verdict at all (None): it never grants, and _qualification_recompute and
    # exam_refusal read verdicts, so a practice round can never count as a pass.
    practice = attempt.is_practice
    attempt.passed = None if practice else attempt.coefficient + 1e-9 >= attempt.exam.pass_threshold
    attempt.submitted_at = timezone.now()
    attempt.save(update_fields=["n_total", "n_matched", "coefficient", "passed", "submitted_at"])
    # The graded answers are final: the candidate cannot edit them after the verdict.
    Assignment.objects.filter(exam_item__attempt=attempt).update(locked=True)
    if attempt.passed:
        _qualification_grant(attempt.expert_id, attempt.exam)
    return attempt


def _qualification_grant(expert_id: int, exam: Exam) -> None:
    membership, _created = Membership.objects.select_for_update().get_or_create(
        expert_id=expert_id, panel_id=exam.panel_id, defaults={"qualified": False}
    )
    granted = list(exam.criterion_groups or [])
    if not membership.qualified:
        membership.qualified_groups = granted
    elif membership.qualified_groups and granted:
        membership.qualified_groups = sorted(set(membership.qualified_groups) | set(granted))
    else:
        membership.qualified_groups = []  # one of the two already means "every group"
    membership.qualified = True
    membership.save(update_fields=["qualified", "qualified_groups"])


def _qualification_recompute(expert_id: int, panel_id: int) -> None:
    """After a verdict is overridden to "failed": what the remaining passes still grant."""
    passes = [
        a
        for a in ExamAttempt.objects.filter(expert_id=expert_id, exam__panel_id=panel_id)
        .select_related("exam")
        .order_by("pk")
        if a.verdict
    ]
    membership = Membership.objects.select_for_update().filter(
        expert_id=expert_id, panel_id=panel_id
    )
    if not passes:
        membership.update(qualified=False, qualified_groups=[])
        return
    groups: set[str] = set()
    for a in passes:
        if not a.exam.criterion_groups:
            membership.update(qualified=True, qualified_groups=[])
            return
        groups |= set(a.exam.criterion_groups)
    membership.update(qualified=True, qualified_groups=sorted(groups))


@transaction.atomic
def exam_attempt_override(
    *, attempt: ExamAttempt, passed: bool, reason: str, user: Any
) -> ExamAttempt:
    """A supervisor's verdict instead of the automatic one, with the reason on record."""
    reason = (reason or "").strip()
    if not reason:
        raise ExamError(_("Give the reason for overriding the verdict."))
    attempt = ExamAttempt.objects.select_for_update().select_related("exam").get(pk=attempt.pk)
    if not attempt.graded:
        raise ExamError(_("The attempt is not graded yet."))
    if attempt.is_practice:
        raise ExamError(_("A practice round has no verdict to override."))
    before = attempt.verdict
    attempt.override_passed = passed
    attempt.override_reason = reason
    attempt.override_by = actor_or_none(user)
    attempt.override_at = timezone.now()
    attempt.save(update_fields=["override_passed", "override_reason", "override_by", "override_at"])
    if passed:
        _qualification_grant(attempt.expert_id, attempt.exam)
    else:
        _qualification_recompute(attempt.expert_id, attempt.exam.panel_id)
    audit(
        action="exam_override",
        actor=user,
        panel=attempt.exam.panel,
        expert=attempt.expert,
        note=reason,
        data={"attempt": attempt.pk, "before": before, "after": passed},
    )
    return attempt
