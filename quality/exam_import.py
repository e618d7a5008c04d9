"""Import of an exam's reference scores from CSV or XLSX (all rows or none, one error line per
bad row); split from quality.exams, whose services it uses."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils.translation import gettext as _

from material.models import Answer
from material.readers import read_table
from panels.services import audit
from quality.copies import answers_copy
from quality.exams import (
    ExamError,
    ReferenceInput,
    exam_references_set,
    exam_writable,
    reference_errors,
)
from quality.models import Exam, ExamItem
from taxonomy.models import Criterion
from taxonomy.services import criteria_for
from work.forms import parse_id, parse_score
from work.models import ReservedAnswer


@dataclass
class ImportReport:
    exam: Exam | None = None
    rows: int = 0
    errors: list[str] = field(default_factory=list)


IMPORT_COLUMNS = ("answer", "criterion", "score", "comment")


def exam_import(*, exam: Exam, content: bytes, filename: str, user: Any = None) -> ImportReport:
    """Import reference scores from CSV or XLSX: all rows or none, one error line per bad row.

    Columns: answer (the source answer's id or external id), criterion (its key), score (a value
    of the criterion's scale, or NA), comment. Answers not yet in the exam are added.
    """

    report = ImportReport()
    try:
        table = read_table(content, filename, settings.IMPORT_MAX_BYTES)
    except Exception as exc:  # a broken file is the user's error, reported, never a 500
        report.errors.append(_("The file cannot be read: %(error)s") % {"error": exc})
        return report
    if table and not set(IMPORT_COLUMNS[:3]) <= set(table[0]):
        report.errors.append(
            _("Missing columns: expected %(cols)s.") % {"cols": ", ".join(IMPORT_COLUMNS)}
        )
        return report

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
        problems = reference_errors(criterion, score, is_na)
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

    with transaction.atomic():
        target = exam_writable(exam, user)
        existing = {
            src: copy
            for copy, src in target.items.filter(answer__isnull=False).values_list(
                "answer_id", "answer__reserved__source_id"
            )
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
