"""Writes of the panels app: qualification exams, control (gold) items, supervisor actions.

Exams and control items are scored through the ordinary scoring flow (annotation.services) on
frozen copies of their answers: every candidate attempt and every control delivery gets Answer
rows of its own (listed in ReservedAnswer), with triples of overlap 1 and the expert's estimate
in slot 1. Real work never sees these answers and they never take real slots.
"""

from __future__ import annotations

import csv
import io
import math
import secrets
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from panels.models import (
    ControlDelivery,
    ControlItem,
    ControlSettings,
    ControlStanding,
    Exam,
    ExamAttempt,
    ExamAttemptItem,
    ExamItem,
    ExamReference,
    Expert,
    Membership,
    Panel,
    ReservedAnswer,
    SupervisorAction,
    SupervisorNotice,
)
from taxonomy.models import Criterion, CriterionGroup, Rubric

EXAM_SETTINGS_FIELDS = (
    "title",
    "pass_threshold",
    "tolerance",
    "max_attempts",
    "retake_wait_hours",
    "criterion_groups",
    "is_active",
)


class ExamError(Exception):
    """An exam action that is not allowed now; the message is shown to the user."""


# --- matching -------------------------------------------------------------------------------


def scores_match(
    *,
    ref_score: int | None,
    ref_na: bool,
    score: int | None,
    is_na: bool,
    scale: Sequence[int],
    tolerance: int = 0,
) -> bool:
    """Whether a candidate's value equals the reference one.

    NA is a value of its own (NA equals only NA). A missing score (a criterion skipped after a
    critical violation) matches nothing. The tolerance applies to 0..4 scales only: on binary
    and 0/1/2 scales a one-point slip is the whole difference between verdicts.
    """
    if ref_na or is_na:
        return ref_na and is_na
    if score is None or ref_score is None:
        return False
    wide = bool(scale) and max(scale) - min(scale) >= 4
    allowed = tolerance if wide else 0
    return abs(score - ref_score) <= allowed


def audit(
    *,
    action: str,
    actor: Any = None,
    panel: Panel | None = None,
    expert: Expert | None = None,
    note: str = "",
    data: dict[str, Any] | None = None,
) -> SupervisorAction:
    return SupervisorAction.objects.create(
        action=action,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        panel=panel,
        expert=expert,
        note=note,
        data=data or {},
    )


# --- frozen copies of answers ---------------------------------------------------------------


def answers_copy(*, sources: Sequence[Any], purpose: str) -> list[Any]:
    """Frozen copies of answers (same instruction, model and text), listed as reserved."""
    from annotation.models import Answer

    copies = Answer.objects.bulk_create(
        [
            Answer(
                instruction_id=src.instruction_id,
                model_id=src.model_id,
                text=src.text,
                generation_meta=src.generation_meta,
                # Unique per copy: the natural-key constraint must not merge copies.
                text_hash=f"{purpose}-{uuid.uuid4().hex}",
            )
            for src in sources
        ]
    )
    ReservedAnswer.objects.bulk_create(
        [
            ReservedAnswer(
                answer_id=copy.pk,
                purpose=purpose,
                source_id=src.pk,
            )
            for copy, src in zip(copies, sources, strict=True)
        ]
    )
    return copies


@dataclass
class _ScoringSpec:
    """What one copy is scored on: (criterion, rubric) pairs in scoring order."""

    criteria: list[tuple[Criterion, Rubric]]


def _scoring_material_create(
    *,
    expert: Expert,
    panel: Panel,
    kind: str,
    copies: Sequence[Any],
    specs: Sequence[_ScoringSpec],
) -> list[Any]:
    """Triples (overlap 1), one assignment per copy and the expert's slot-1 estimates."""
    from annotation.models import Assignment, AssignmentKind, AssignmentStatus, Estimate, Triple

    triples: list[Triple] = []
    for copy, spec in zip(copies, specs, strict=True):
        for position, (criterion, rubric) in enumerate(spec.criteria):
            triples.append(
                Triple(
                    answer_id=copy.pk,
                    criterion_id=criterion.pk,
                    rubric_id=rubric.pk,
                    group=criterion.group,
                    panel_id=panel.pk,
                    required_overlap=1,
                    position=position,
                )
            )
    Triple.objects.bulk_create(triples)
    # Control items are reserved (and expire) like real work: a copy that never expires or
    # carries no deadline would tell itself apart.
    deadline = (
        timezone.now() + timedelta(hours=settings.POLLUX["ASSIGNMENT_RESERVATION_HOURS"])
        if kind == AssignmentKind.CONTROL
        else None
    )
    assignments = Assignment.objects.bulk_create(
        [
            Assignment(
                expert_id=expert.pk,
                answer_id=copy.pk,
                panel_id=panel.pk,
                kind=kind,
                status=AssignmentStatus.ASSIGNED,
                reserved_until=deadline,
            )
            for copy in copies
        ]
    )
    by_answer = {a.answer_id: a.pk for a in assignments}
    Estimate.objects.bulk_create(
        [
            Estimate(
                triple_id=t.pk,
                assignment_id=by_answer[t.answer_id],
                expert_id=expert.pk,
                slot=1,
            )
            for t in triples
        ]
    )
    return assignments


# --- exams: authoring and versions ----------------------------------------------------------


@transaction.atomic
def exam_create(*, panel: Panel, title: str, user: Any = None, **options: Any) -> Exam:
    exam = Exam(panel=panel, title=title, lineage=uuid.uuid4(), version=1, created_by=_user(user))
    for name, value in options.items():
        if name in EXAM_SETTINGS_FIELDS:
            setattr(exam, name, value)
    exam.full_clean()
    exam.save()
    audit(action="exam_create", actor=user, panel=panel, data={"exam": exam.pk})
    return exam


def _user(user: Any) -> Any:
    return user if getattr(user, "is_authenticated", False) else None


def exam_latest(exam: Exam) -> Exam:
    return Exam.objects.filter(lineage=exam.lineage).order_by("-version").first() or exam


def _exam_writable(exam: Exam, user: Any) -> Exam:
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
        pass_threshold=latest.pass_threshold,
        tolerance=latest.tolerance,
        max_attempts=latest.max_attempts,
        retake_wait_hours=latest.retake_wait_hours,
        criterion_groups=list(latest.criterion_groups or []),
        is_active=latest.is_active,
        created_by=_user(user),
    )
    Exam.objects.filter(pk=latest.pk).update(is_active=False)
    old_items = list(latest.items.order_by("position", "pk"))
    # The frozen answer copies are shared: their text never changes.
    new_items = ExamItem.objects.bulk_create(
        [ExamItem(exam=fresh, answer_id=i.answer_id, position=i.position) for i in old_items]
    )
    item_map = {old.pk: new.pk for old, new in zip(old_items, new_items, strict=True)}
    ExamReference.objects.bulk_create(
        [
            ExamReference(
                item_id=item_map[r.item_id],
                criterion_id=r.criterion_id,
                rubric_id=r.rubric_id,
                score=r.score,
                is_na=r.is_na,
                comment=r.comment,
            )
            for r in ExamReference.objects.filter(item__exam=latest)
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
    target = _exam_writable(exam, user)
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
    target = _exam_writable(exam, user)
    if target.items.filter(answer__reserved__source_id=answer.pk).exists():
        raise ExamError(_("This answer is already in the exam."))
    (copy,) = answers_copy(sources=[answer], purpose=ReservedAnswer.Purpose.EXAM)
    position = target.items.count()
    item = ExamItem.objects.create(exam=target, answer=copy, position=position)
    return target, item


@transaction.atomic
def exam_item_remove(*, exam: Exam, answer_id: int, user: Any = None) -> Exam:
    """Remove an item, addressed by its frozen answer copy (stable across versions)."""
    target = _exam_writable(exam, user)
    target.items.filter(answer_id=answer_id).delete()
    return target


@dataclass
class ReferenceInput:
    answer_id: int  # the exam item's frozen copy
    criterion_id: int
    score: int | None
    is_na: bool = False
    comment: str = ""


def _reference_errors(criterion: Criterion, score: int | None, is_na: bool) -> list[str]:
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


@transaction.atomic
def exam_references_set(*, exam: Exam, rows: Sequence[ReferenceInput], user: Any = None) -> Exam:
    """Write reference scores and comments (replacing those of the same item and criterion)."""
    criteria = {
        c.pk: c
        for c in Criterion.objects.select_related("rubric").filter(
            pk__in={r.criterion_id for r in rows}
        )
    }
    for row in rows:
        criterion = criteria.get(row.criterion_id)
        if criterion is None:
            raise ExamError(_("Unknown criterion."))
        problems = _reference_errors(criterion, row.score, row.is_na)
        if problems:
            raise ExamError(problems[0])
    target = _exam_writable(exam, user)
    items = {i.answer_id: i for i in target.items.all()}
    for row in rows:
        item = items.get(row.answer_id)
        if item is None:
            raise ExamError(_("The answer is not in this exam."))
        criterion = criteria[row.criterion_id]
        assert criterion.rubric is not None
        ExamReference.objects.update_or_create(
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


@dataclass
class ImportReport:
    exam: Exam | None = None
    rows: int = 0
    errors: list[str] = field(default_factory=list)


IMPORT_COLUMNS = ("answer", "criterion", "score", "comment")


def _read_table(content: bytes, filename: str) -> list[dict[str, str]]:
    if filename.lower().endswith(".xlsx"):
        from django.conf import settings
        from openpyxl import load_workbook

        from annotation.importing import xlsx_unpack_error

        problem = xlsx_unpack_error(io.BytesIO(content), settings.IMPORT_MAX_BYTES)
        if problem is not None:
            raise ValueError(problem[1])
        sheet = load_workbook(io.BytesIO(content), read_only=True, data_only=True).active
        if sheet is None:
            return []
        raw_rows = list(sheet.iter_rows(values_only=True))
        if not raw_rows:
            return []
        header = [str(h or "").strip().lower() for h in raw_rows[0]]
        return [
            {
                header[i]: "" if v is None else str(v).strip()
                for i, v in enumerate(r)
                if i < len(header)
            }
            for r in raw_rows[1:]
        ]
    text = content.decode("utf-8-sig")
    dialect = csv.Sniffer().sniff(text[:2048], delimiters=",;\t") if text.strip() else csv.excel
    reader = csv.DictReader(io.StringIO(text), dialect=dialect)
    return [
        {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()} for row in reader
    ]


def exam_import(*, exam: Exam, content: bytes, filename: str, user: Any = None) -> ImportReport:
    """Import reference scores from CSV or XLSX: all rows or none, one error line per bad row.

    Columns: answer (the source answer's id or external id), criterion (its key), score (a value
    of the criterion's scale, or NA), comment. Answers not yet in the exam are added.
    """
    from annotation.models import Answer
    from taxonomy.services import criteria_for

    report = ImportReport()
    try:
        table = _read_table(content, filename)
    except Exception as exc:  # a broken file is the user's error, reported, never a 500
        report.errors.append(_("The file cannot be read: %(error)s") % {"error": exc})
        return report
    if table and not set(IMPORT_COLUMNS[:3]) <= set(table[0]):
        report.errors.append(
            _("Missing columns: expected %(cols)s.") % {"cols": ", ".join(IMPORT_COLUMNS)}
        )
        return report
    from annotation.forms import parse_id

    keys = {row.get("answer", "") for row in table}
    ids = {i for i in map(parse_id, keys) if i is not None}
    answers: dict[str, Any] = {}
    for a in Answer.objects.filter(Q(pk__in=ids) | Q(external_id__in=keys)).only(
        "pk", "external_id", "instruction_id"
    ):
        answers[str(a.pk)] = a
        if a.external_id:
            answers[a.external_id] = a
    criteria = {
        c.key: c
        for c in Criterion.objects.select_related("rubric").filter(
            key__in={row.get("criterion", "") for row in table}
        )
    }
    allowed_cache: dict[int, set[int]] = {}
    parsed: list[tuple[Any, Criterion, int | None, bool, str]] = []
    seen: set[tuple[int, int]] = set()
    for line, row in enumerate(table, start=2):  # line 1 is the header
        answer = answers.get(row.get("answer", ""))
        criterion = criteria.get(row.get("criterion", ""))
        raw = row.get("score", "")
        if answer is None:
            report.errors.append(
                _("Row %(n)d: unknown answer %(a)r.") % {"n": line, "a": row.get("answer", "")}
            )
            continue
        if criterion is None:
            report.errors.append(
                _("Row %(n)d: unknown criterion %(c)r.")
                % {"n": line, "c": row.get("criterion", "")}
            )
            continue
        if answer.instruction_id not in allowed_cache:
            instruction = answer.instruction
            allowed_cache[answer.instruction_id] = {c.pk for c in criteria_for(instruction)}
        if criterion.pk not in allowed_cache[answer.instruction_id]:
            report.errors.append(
                _("Row %(n)d: criterion %(c)s does not apply to this answer's task.")
                % {"n": line, "c": criterion.key}
            )
            continue
        is_na = raw.strip().lower() in {"na", "n/a"}
        score: int | None = None
        if not is_na:
            score = _import_score(raw)
            if score is None:
                report.errors.append(
                    _("Row %(n)d: score %(s)r is not a number or NA.") % {"n": line, "s": raw}
                )
                continue
        problems = _reference_errors(criterion, score, is_na)
        if problems:
            report.errors.append(_("Row %(n)d: %(e)s") % {"n": line, "e": problems[0]})
            continue
        if (answer.pk, criterion.pk) in seen:
            report.errors.append(
                _("Row %(n)d: a second reference for the same answer and criterion.") % {"n": line}
            )
            continue
        seen.add((answer.pk, criterion.pk))
        parsed.append((answer, criterion, score, is_na, row.get("comment", "")))
    report.rows = len(parsed)
    if report.errors or not parsed:
        if not parsed and not report.errors:
            report.errors.append(_("The file has no rows."))
        return report
    try:
        target = _exam_import_write(exam, parsed, filename, user)
    except ExamError as exc:
        # An older version of the exam, say: the user's error, reported like a bad row.
        report.errors.append(str(exc))
        return report
    report.exam = target
    return report


def _import_score(raw: str) -> int | None:
    """A score cell: an integer ("2", or "2.0" as spreadsheets write it), else None.

    "1e999", "inf", "nan" and "2.5" are no scores; whether it is on the scale is checked next.
    """
    from annotation.forms import parse_score

    score, is_na, malformed = parse_score(raw)
    if not malformed and not is_na and score is not None:
        return score
    if not raw.isascii():
        return None
    try:
        value = float(raw)
    except (ValueError, OverflowError):
        return None
    if not math.isfinite(value) or not value.is_integer() or abs(value) > 2**15 - 1:
        return None
    return int(value)


def _exam_import_write(
    exam: Exam,
    parsed: list[tuple[Any, Criterion, int | None, bool, str]],
    filename: str,
    user: Any,
) -> Exam:
    """Write the checked rows of an exam import (all or none); ExamError when it cannot."""
    from annotation.models import Answer

    with transaction.atomic():
        target = _exam_writable(exam, user)
        existing = {
            src: copy
            for copy, src in target.items.values_list("answer_id", "answer__reserved__source_id")
        }
        missing = [a for a in {p[0].pk: p[0] for p in parsed}.values() if a.pk not in existing]
        if missing:
            full = list(Answer.objects.filter(pk__in=[a.pk for a in missing]).order_by("pk"))
            copies = answers_copy(sources=full, purpose=ReservedAnswer.Purpose.EXAM)
            start = target.items.count()
            ExamItem.objects.bulk_create(
                [
                    ExamItem(exam=target, answer=copy, position=start + i)
                    for i, copy in enumerate(copies)
                ]
            )
            existing.update({src.pk: copy.pk for src, copy in zip(full, copies, strict=True)})
        exam_references_set(
            exam=target,
            rows=[
                ReferenceInput(
                    answer_id=existing[answer.pk],
                    criterion_id=criterion.pk,
                    score=score,
                    is_na=is_na,
                    comment=comment,
                )
                for answer, criterion, score, is_na, comment in parsed
            ],
            user=user,
        )
        audit(
            action="exam_import",
            actor=user,
            panel=target.panel,
            data={"exam": target.pk, "rows": len(parsed), "file": filename[:200]},
        )
    return target


# --- exams: taking and grading --------------------------------------------------------------


def exam_refusal(exam: Exam, expert: Expert, *, now: Any = None) -> str:
    """Why the expert may not start this exam now ("" when they may)."""
    now = now or timezone.now()
    if not exam.is_active or exam_latest(exam).pk != exam.pk:
        return _("This exam is not open.")
    if not Membership.objects.filter(expert=expert, panel_id=exam.panel_id).exists():
        return _("You are not a candidate of this panel.")
    if not ExamReference.objects.filter(item__exam=exam).exists():
        return _("This exam has no questions yet.")
    attempts = list(
        ExamAttempt.objects.filter(expert=expert, exam__lineage=exam.lineage).order_by("-number")
    )
    if any(a.submitted_at is None for a in attempts):
        return _("Finish your current attempt first.")
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
def exam_attempt_start(*, exam: Exam, expert: Expert) -> ExamAttempt:
    """Start an attempt: fresh copies of every exam answer, assigned to the candidate."""
    from annotation.models import Answer

    # The expert row lock serialises double clicks: two attempts cannot start at once.
    Expert.objects.select_for_update().get(pk=expert.pk)
    refusal = exam_refusal(exam, expert)
    if refusal:
        raise ExamError(refusal)
    number = ExamAttempt.objects.filter(expert=expert, exam__lineage=exam.lineage).count() + 1
    attempt = ExamAttempt.objects.create(exam=exam, expert=expert, number=number)
    items = list(exam.items.order_by("position", "pk"))
    references = defaultdict(list)
    for ref in ExamReference.objects.filter(item__exam=exam).select_related("criterion", "rubric"):
        references[ref.item_id].append(ref)
    items = [i for i in items if references[i.pk]]
    sources = list(Answer.objects.filter(pk__in=[i.answer_id for i in items]))
    by_pk = {a.pk: a for a in sources}
    copies = answers_copy(
        sources=[by_pk[i.answer_id] for i in items], purpose=ReservedAnswer.Purpose.EXAM
    )
    order = {g: n for n, g in enumerate(c.value for c in CriterionGroup)}
    specs = [
        _ScoringSpec(
            criteria=[
                (r.criterion, r.rubric)
                for r in sorted(references[i.pk], key=lambda r: (order[r.criterion.group], r.pk))
            ]
        )
        for i in items
    ]
    assignments = _scoring_material_create(
        expert=expert, panel=exam.panel, kind="exam", copies=copies, specs=specs
    )
    ExamAttemptItem.objects.bulk_create(
        [
            ExamAttemptItem(attempt=attempt, item=i, answer=c, assignment=a)
            for i, c, a in zip(items, copies, assignments, strict=True)
        ]
    )
    return attempt


def exam_on_assignment_submitted(assignment_id: int) -> None:
    """Hook after a successful submission: grade the attempt once all its answers are in.

    A no-op for any assignment that is not part of an exam. Safe to call twice.
    """
    from annotation.models import AssignmentStatus

    link = (
        ExamAttemptItem.objects.filter(assignment_id=assignment_id)
        .values_list("attempt_id", flat=True)
        .first()
    )
    if link is None:
        return
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
    from annotation.models import Estimate

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
        ExamReference.objects.filter(item__exam_id=attempt.exam_id)
        .select_related("criterion", "rubric", "item")
        .order_by("item__position", "item_id", "pk")
    ):
        answer_id = links.get(ref.item_id)
        est = estimates.get((answer_id, ref.criterion_id)) if answer_id else None
        submitted = est is not None and est.status == "submitted"
        score = est.score if submitted and est is not None else None
        is_na = bool(est.is_na) if submitted and est is not None else False
        scale = ref.rubric.values
        rows.append(
            Comparison(
                item_id=ref.item_id,
                position=ref.item.position,
                answer_id=ref.item.answer_id,
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
    from annotation.models import Assignment

    attempt = ExamAttempt.objects.select_for_update().select_related("exam").get(pk=attempt_id)
    if attempt.graded:
        return attempt
    rows = attempt_comparisons(attempt)
    attempt.n_total = len(rows)
    attempt.n_matched = sum(1 for r in rows if r.match)
    attempt.coefficient = attempt.n_matched / attempt.n_total if attempt.n_total else 0.0
    # A tiny epsilon: 7/10 must pass a 0.7 threshold despite binary floating point.
    attempt.passed = attempt.coefficient + 1e-9 >= attempt.exam.pass_threshold
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
    before = attempt.verdict
    attempt.override_passed = passed
    attempt.override_reason = reason
    attempt.override_by = _user(user)
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


# --- control (gold) items -------------------------------------------------------------------


def control_settings_for(panel: Panel | int) -> ControlSettings:
    panel_id = panel if isinstance(panel, int) else panel.pk
    obj, _created = ControlSettings.objects.get_or_create(panel_id=panel_id)
    return obj


@transaction.atomic
def control_settings_update(*, panel: Panel, user: Any, **values: Any) -> ControlSettings:
    obj = ControlSettings.objects.select_for_update().get(pk=control_settings_for(panel).pk)
    for name, value in values.items():
        setattr(obj, name, value)
    obj.full_clean()
    obj.save()
    audit(action="control_settings", actor=user, panel=panel, data={k: values[k] for k in values})
    return obj


def control_reference_criteria(*, panel: Panel, answer: Any) -> list[Criterion]:
    """The criteria this panel's experts score on the answer: routed to it, plus critical gates.

    Those are the criteria a control item of the panel is checked against, so those are the ones
    a supervisor of the panel writes references for. Empty when the answer is not routed to the
    panel (the critical gates every panel scores do not route an answer to it) or is a reserved
    copy (exam or control material).
    """
    from annotation.routing import RoutingTable
    from taxonomy.services import criteria_for

    if ReservedAnswer.objects.filter(answer_id=answer.pk).exists():
        return []
    table = RoutingTable.load()
    instruction = answer.instruction
    criteria = criteria_for(instruction)
    routed = {
        c.pk
        for c in criteria
        if table.panel_for(c, instruction.task_id, instruction.style_id) == panel.pk
    }
    if not routed:
        return []
    return [c for c in criteria if c.group == CriterionGroup.CRITICAL or c.pk in routed]


def answer_routed_to_panel(*, panel: Panel, answer: Any) -> bool:
    """Whether the panel scores the answer as real work (the rule behind panels/rules.py's
    `panels.manage_panel_answer`): only such answers have references or become gold of it."""
    return bool(control_reference_criteria(panel=panel, answer=answer))


@transaction.atomic
def control_references_set(
    *, panel: Panel, answer: Any, rows: Sequence[ReferenceInput], user: Any = None
) -> int:
    """Write the answer's reference scores for the panel's criteria (all rows, or none)."""
    from annotation.models import ReferenceEstimate

    allowed = {c.pk: c for c in control_reference_criteria(panel=panel, answer=answer)}
    for row in rows:
        criterion = allowed.get(row.criterion_id)
        if criterion is None:
            raise ExamError(_("This panel does not score that criterion on this answer."))
        problems = _reference_errors(criterion, row.score, row.is_na)
        if problems:
            raise ExamError(problems[0])
    for row in rows:
        ReferenceEstimate.objects.update_or_create(
            answer=answer,
            criterion_id=row.criterion_id,
            panel=panel,
            defaults={
                "score": None if row.is_na else row.score,
                "is_na": row.is_na,
                "comment": row.comment.strip(),
                "author": _user(user),
            },
        )
    audit(
        action=SupervisorAction.Kind.CONTROL_REFERENCES,
        actor=user,
        panel=panel,
        data={"answer": answer.pk, "criteria": [r.criterion_id for r in rows]},
    )
    return len(rows)


@transaction.atomic
def control_item_add(*, panel: Panel, answer: Any, user: Any = None) -> ControlItem:
    """Make an answer routed to the panel, with the panel's references, a gold item of it.

    The answer stays real work for every other panel (their work, triples and statistics are
    untouched). In this panel it becomes gold only: the builder gives the panel no new work on
    it, and the panel's open (unsubmitted) work on it is released now, drafts kept, as a
    reservation that ended; submitted estimates stay as evidence. Experts who held the answer
    as work of the panel never receive it as a control item (they would recognise it).
    """
    from annotation.assignments import OPEN_STATUSES, assignment_release
    from annotation.models import Assignment, AssignmentKind, ReferenceEstimate

    if not answer_routed_to_panel(panel=panel, answer=answer):
        raise ExamError(_("This answer is not scored by the panel."))
    if not ReferenceEstimate.objects.filter(answer=answer, panel=panel).exists():
        raise ExamError(_("The answer has no reference scores."))
    item, _created = ControlItem.objects.get_or_create(
        panel=panel, answer=answer, defaults={"created_by": _user(user)}
    )
    if not item.is_active:
        ControlItem.objects.filter(pk=item.pk).update(is_active=True)
    open_work = list(
        Assignment.objects.select_for_update().filter(
            answer=answer, panel=panel, kind=AssignmentKind.WORK, status__in=OPEN_STATUSES
        )
    )
    for assignment in open_work:
        assignment_release(assignment=assignment, reason="control")
    audit(
        action="control_item_add",
        actor=user,
        panel=panel,
        data={"answer": answer.pk, "released": len(open_work)},
    )
    return item


def control_items_distribute(*, panel_id: int) -> int:
    """Mix control items into the panel's queues at the configured rate (idempotent).

    An expert with W live work assignments should hold floor(W * rate) control items; the
    missing ones are drawn at random from the gold items they have not seen. Returns how many
    were delivered.
    """
    from annotation.models import Answer, Assignment, AssignmentStatus, ReferenceEstimate

    conf = control_settings_for(panel_id)
    if not conf.enabled or conf.rate <= 0:
        return 0
    items = list(ControlItem.objects.filter(panel_id=panel_id, is_active=True))
    if not items:
        return 0
    panel = Panel.objects.get(pk=panel_id)
    with_refs = set(
        ReferenceEstimate.objects.filter(
            answer_id__in=[i.answer_id for i in items], panel_id=panel_id
        ).values_list("answer_id", flat=True)
    )
    # A control copy is scored on every criterion the panel scores on such an answer as work
    # (not only the referenced ones): a shorter list of criteria would tell it apart. Grading
    # counts the referenced criteria only.
    refs: dict[int, list[tuple[Criterion, Rubric]]] = {}
    sources = Answer.objects.select_related("instruction").filter(pk__in=with_refs)
    for source in sources:
        refs[source.pk] = [
            (c, c.rubric)
            for c in control_reference_criteria(panel=panel, answer=source)
            if c.rubric is not None
        ]
    experts = list(
        Membership.objects.filter(
            panel_id=panel_id, qualified=True, is_paused=False, expert__user__is_active=True
        ).values_list("expert_id", flat=True)
    )
    work = dict(
        Assignment.objects.filter(panel_id=panel_id, kind="work", expert_id__in=experts)
        .exclude(status=AssignmentStatus.RELEASED)
        .values_list("expert_id")
        .annotate(n=Count("id"))
        .values_list("expert_id", "n")
    )
    seen: dict[int, set[int]] = defaultdict(set)
    for expert_id, item_id in ControlDelivery.objects.filter(
        item__panel_id=panel_id, expert_id__in=experts
    ).values_list("expert_id", "item_id"):
        seen[expert_id].add(item_id)
    # Who held a gold answer as work of the panel would recognise it: never theirs to check.
    item_of_answer = {i.answer_id: i.pk for i in items}
    for expert_id, answer_id in Assignment.objects.filter(
        panel_id=panel_id, kind="work", answer_id__in=list(item_of_answer)
    ).values_list("expert_id", "answer_id"):
        seen[expert_id].add(item_of_answer[answer_id])
    rng = secrets.SystemRandom()
    delivered = 0
    for expert_id in experts:
        target = int(work.get(expert_id, 0) * conf.rate)
        missing = target - len(seen[expert_id])
        pool = [i for i in items if i.pk not in seen[expert_id] and refs.get(i.answer_id)]
        if missing <= 0 or not pool:
            continue
        chosen = rng.sample(pool, min(missing, len(pool)))
        delivered += _control_deliver(panel, Expert(pk=expert_id), chosen, refs)
    return delivered


@transaction.atomic
def _control_deliver(
    panel: Panel,
    expert: Expert,
    items: Sequence[ControlItem],
    refs: dict[int, list[tuple[Criterion, Rubric]]],
) -> int:
    from annotation.models import Answer

    sources = {a.pk: a for a in Answer.objects.filter(pk__in=[i.answer_id for i in items])}
    copies = answers_copy(
        sources=[sources[i.answer_id] for i in items], purpose=ReservedAnswer.Purpose.CONTROL
    )
    assignments = _scoring_material_create(
        expert=expert,
        panel=panel,
        kind="control",
        copies=copies,
        specs=[_ScoringSpec(criteria=refs[i.answer_id]) for i in items],
    )
    ControlDelivery.objects.bulk_create(
        [
            ControlDelivery(item=i, expert_id=expert.pk, answer=c, assignment=a)
            for i, c, a in zip(items, copies, assignments, strict=True)
        ]
    )
    return len(items)


def control_on_assignment_submitted(assignment_id: int) -> None:
    """Hook after a successful submission: grade a control item, pause a failing expert."""
    from annotation.models import Estimate, ReferenceEstimate

    with transaction.atomic():
        delivery = (
            ControlDelivery.objects.select_for_update()
            .select_related("item")
            .filter(assignment_id=assignment_id)
            .first()
        )
        # Only the first submission counts: a control item is not a practice round.
        if delivery is None or delivery.graded_at is not None:
            return
        conf = control_settings_for(delivery.item.panel_id)
        estimates = {
            e.triple.criterion_id: e
            for e in Estimate.objects.filter(assignment_id=assignment_id).select_related(
                "triple__rubric"
            )
        }
        total = matched = 0
        for ref in ReferenceEstimate.objects.filter(
            answer_id=delivery.item.answer_id, panel_id=delivery.item.panel_id
        ):
            est = estimates.get(ref.criterion_id)
            if est is None:
                continue
            total += 1
            submitted = est.status == "submitted"
            matched += scores_match(
                ref_score=ref.score,
                ref_na=ref.is_na,
                score=est.score if submitted else None,
                is_na=est.is_na if submitted else False,
                scale=est.triple.rubric.values,
                tolerance=conf.tolerance,
            )
        delivery.n_total, delivery.n_matched = total, matched
        delivery.graded_at = timezone.now()
        delivery.save(update_fields=["n_total", "n_matched", "graded_at"])
        standing, _created = ControlStanding.objects.select_for_update().get_or_create(
            expert_id=delivery.expert_id, panel_id=delivery.item.panel_id
        )
        standing.n_items += 1
        standing.n_total += total
        standing.n_matched += matched
        standing.save(update_fields=["n_items", "n_total", "n_matched", "updated_at"])
        accuracy = standing.accuracy
        if (
            standing.n_items >= conf.min_items
            and accuracy is not None
            and accuracy < conf.accuracy_threshold
        ):
            membership = (
                Membership.objects.select_for_update()
                .select_related("expert")
                .filter(expert_id=delivery.expert_id, panel_id=delivery.item.panel_id)
                .first()
            )
            if membership is not None and not membership.is_paused:
                _pause_automatically(membership, accuracy, standing.n_items)


def _pause_automatically(membership: Membership, accuracy: float, n_items: int) -> None:
    """Pause the expert in the panel whose control items they fail (only there)."""
    reason = _("Accuracy on control items %(acc).0f%% over %(n)d items is below the threshold.") % {
        "acc": accuracy * 100,
        "n": n_items,
    }
    membership.is_paused = True
    membership.paused_reason = reason[:300]
    membership.save(update_fields=["is_paused", "paused_reason"])
    expert = membership.expert
    panel = Panel.objects.get(pk=membership.panel_id)
    audit(
        action="auto_pause",
        panel=panel,
        expert=expert,
        note=reason,
        data={"accuracy": accuracy, "items": n_items},
    )
    SupervisorNotice.objects.create(
        panel=panel,
        expert=expert,
        message=(
            _("%(expert)s was paused automatically: %(reason)s")
            % {"expert": expert.pseudonym, "reason": reason}
        )[:500],
    )
    emails = [e for e in panel.supervisors.values_list("email", flat=True) if e]
    if emails:
        subject = _("Pollux Studio: an expert was paused")
        transaction.on_commit(
            lambda: send_mail(
                subject,
                f"{expert.pseudonym}: {reason}",
                settings.DEFAULT_FROM_EMAIL,
                emails,
                fail_silently=True,
            )
        )


# --- supervisor actions ---------------------------------------------------------------------


def _membership_locked(expert: Expert, panel: Panel) -> Membership:
    return Membership.objects.select_for_update().get(expert=expert, panel=panel)


@transaction.atomic
def expert_pause(*, expert: Expert, user: Any, panel: Panel, reason: str = "") -> Membership:
    """Pause the expert in this panel only: no new work from it, its work cannot be opened."""
    membership = _membership_locked(expert, panel)
    membership.is_paused = True
    membership.paused_reason = (reason or _("Paused by a supervisor"))[:300]
    membership.save(update_fields=["is_paused", "paused_reason"])
    audit(action="pause", actor=user, panel=panel, expert=expert, note=reason)
    return membership


@transaction.atomic
def expert_resume(*, expert: Expert, user: Any, panel: Panel, note: str = "") -> Membership:
    """Resume work in this panel; its control accuracy starts afresh, else the next item would
    pause again. Other panels' pauses, records and notices are theirs and stay as they are."""
    membership = _membership_locked(expert, panel)
    membership.is_paused = False
    membership.paused_reason = ""
    membership.save(update_fields=["is_paused", "paused_reason"])
    ControlStanding.objects.filter(expert=expert, panel=panel).update(
        since=timezone.now(), n_items=0, n_total=0, n_matched=0
    )
    SupervisorNotice.objects.filter(expert=expert, panel=panel, read_at__isnull=True).update(
        read_at=timezone.now()
    )
    audit(action="resume", actor=user, panel=panel, expert=expert, note=note)
    return membership


def expert_reassign(*, expert: Expert, panel: Panel, user: Any) -> Any:
    """Release the expert's open work of this panel (only) and queue a build job of the panel
    that hands it to other experts. Control items go too: a queue left with gold only would
    tell the expert which items are gold."""
    from annotation.assignments import OPEN_STATUSES, assignment_release
    from annotation.models import Assignment, AssignmentKind

    with transaction.atomic():
        open_assignments = list(
            Assignment.objects.select_for_update().filter(
                expert=expert,
                panel=panel,
                status__in=OPEN_STATUSES,
                kind__in=[AssignmentKind.WORK, AssignmentKind.CONTROL],
            )
        )
        for assignment in open_assignments:
            assignment_release(assignment=assignment, reason="reassigned")
        answers = sorted({a.answer_id for a in open_assignments if a.kind == AssignmentKind.WORK})
        audit(
            action="reassign",
            actor=user,
            panel=panel,
            expert=expert,
            data={"released": len(open_assignments)},
        )
        return _build_job(panel=panel, user=user, answer_ids=answers, action="reassign")


@transaction.atomic
def assignments_lock_batch(
    *,
    panel: Panel,
    user: Any,
    submitted_from: Any = None,
    submitted_to: Any = None,
    task_id: int | None = None,
) -> int:
    """Lock submitted work of a panel (optionally a date range and task): scores become final."""
    from annotation.models import Assignment, AssignmentStatus

    qs = Assignment.objects.filter(
        panel=panel, kind="work", status=AssignmentStatus.SUBMITTED, locked=False
    )
    if submitted_from:
        qs = qs.filter(submitted_at__gte=submitted_from)
    if submitted_to:
        qs = qs.filter(submitted_at__lt=submitted_to)
    if task_id:
        qs = qs.filter(answer__instruction__task_id=task_id)
    count = qs.update(locked=True)
    audit(
        action="lock_batch",
        actor=user,
        panel=panel,
        data={
            "locked": count,
            "from": str(submitted_from or ""),
            "to": str(submitted_to or ""),
            "task": task_id,
        },
    )
    return count


def triple_reopen(*, triple: Any, user: Any, note: str) -> Any:
    """Reopen a triple for rescoring: one more estimate slot, given to a fresh expert.

    Submitted scores stay (they are evidence); the required overlap grows by one (at most 10)
    and a build job of the triple's panel hands the new slot to a qualified expert who has not
    scored the answer. Returns the job.
    """
    from annotation.models import Triple

    note = (note or "").strip()
    if not note:
        raise ExamError(_("Say why the triple is reopened."))
    with transaction.atomic():
        locked = Triple.objects.select_for_update().select_related("panel").get(pk=triple.pk)
        if locked.required_overlap >= 10:
            raise ExamError(_("This triple already has the maximum number of slots."))
        locked.required_overlap += 1
        locked.reopened_note = note
        locked.save(update_fields=["required_overlap", "reopened_note"])
        audit(
            action="reopen_triple",
            actor=user,
            panel=locked.panel,
            note=note,
            data={"triple": locked.pk, "overlap": locked.required_overlap},
        )
        return _build_job(
            panel=locked.panel, user=user, answer_ids=[locked.answer_id], action="reopen"
        )


def _build_job(
    *, panel: Panel, user: Any, answer_ids: list[int] | None, action: str, control: bool = False
) -> Any:
    """A build job scoped to the panel (annotation.jobs: progress, retries), queued on commit.

    `answer_ids` narrows it further (a reassign, a reopen); None means every answer of the
    panel, and the builder itself leaves reserved copies and the panel's gold answers out.
    Reassign and reopen stay build jobs of the panel (params["action"] says which): their
    synchronous part touches one expert's open work or one triple; the build, which may touch
    many rows, is the job.
    """
    from annotation.jobs import enqueue
    from annotation.models import JobKind

    params: dict[str, Any] = {"panel_id": panel.pk, "action": action}
    if answer_ids is not None:
        params["answer_ids"] = answer_ids
    then = None
    if control:
        from panels.tasks import distribute_control_items

        then = distribute_control_items.si(panel.pk)
    return enqueue(JobKind.ASSIGNMENTS, params, user=_user(user), then=then)


@transaction.atomic
def assignments_build_enqueue(*, panel: Panel, user: Any) -> Any:
    """Queue the panel's assignment builder (then its control items) as a Job with progress."""
    job = _build_job(panel=panel, user=user, answer_ids=None, action="build", control=True)
    audit(action="build", actor=user, panel=panel, data={"job": job.pk})
    return job


def notices_mark_read(*, panel: Panel, user: Any) -> int:
    return SupervisorNotice.objects.filter(panel=panel, read_at__isnull=True).update(
        read_at=timezone.now()
    )


def panel_stats_refresh(*, panel_id: int) -> Any:
    """Recompute a panel's snapshot of heavy aggregates (idempotent; last writer wins)."""
    import time

    from panels.models import PanelStats
    from panels.selectors import panel_stats_compute

    started = time.monotonic()
    panel = Panel.objects.get(pk=panel_id)
    data = panel_stats_compute(panel)
    snapshot, _created = PanelStats.objects.update_or_create(
        panel=panel,
        defaults={
            "data": data,
            "computed_at": timezone.now(),
            "seconds": time.monotonic() - started,
        },
    )
    return snapshot


def panel_stats_refresh_enqueue(*, panel: Panel) -> bool:
    """Queue a refresh unless one was queued in the last minute (a cache key debounces)."""
    from django.core.cache import cache

    if not cache.add(f"panels:stats-refresh:{panel.pk}", 1, timeout=60):
        return False

    def _enqueue() -> None:
        from panels.tasks import refresh_panel_stats

        refresh_panel_stats.delay(panel.pk)

    transaction.on_commit(_enqueue)
    return True
