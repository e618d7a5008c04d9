"""Exam pages: authoring and review for supervisors, the exam list for candidates.

Supervisors' pages check the role first, then the exam's panel (404 for other panels). The
candidate's pages show reference scores and comments only for answers already in: in practice
after each submitted item (its feedback page), in a qualifying exam after the attempt is graded
(its result page, mismatches only). The candidate scores in the ordinary scoring page.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from material import identity
from material.models import Answer
from panels.access import allowed, get_object_for, require
from panels.models import Expert, Panel
from quality import exam_import as exam_import_service
from quality import exams as exam_services
from quality import feedback, kind_pairwise
from quality import selectors as quality_selectors
from quality.forms import AnswerIdForm, ExamForm, GoldPairsForm, ImportForm, OverrideForm
from quality.models import Exam, ExamAttempt, ReferenceLabel, ReferenceScore
from quality.rules import PanelAnswer
from taxonomy.services import criteria_for
from work.forms import parse_id, parse_score
from work.models import AssignmentStatus


def _exam(request: HttpRequest, pk: int) -> Exam:
    require(request.user, "panels.view_console")
    return get_object_for(
        request.user, "quality.manage_exam", Exam.objects.select_related("panel"), pk=pk
    )


def _attempt(request: HttpRequest, pk: int) -> ExamAttempt:
    require(request.user, "panels.view_console")
    return get_object_for(
        request.user,
        "quality.review_attempt",
        ExamAttempt.objects.select_related("exam__panel", "expert__user"),
        pk=pk,
    )


def _exam_change(
    request: HttpRequest, exam: Exam, change: Callable[[], Exam], saved: str = ""
) -> HttpResponse:
    """Apply a change to an exam and open the exam it leaves (a new version when the exam was
    in use); a refusal is shown on the exam as it was."""
    try:
        target = change()
    except exam_services.ExamError as exc:
        messages.error(request, str(exc))
        return redirect("console_exam", pk=exam.pk)
    if saved:
        messages.success(request, saved % {"v": target.version})
    return redirect("console_exam", pk=target.pk)


@login_required
@require_http_methods(["GET", "POST"])
def exams_page(request: HttpRequest, pk: int) -> HttpResponse:
    panel = get_object_for(
        request.user, "panels.manage_panel", Panel, role="panels.view_console", pk=pk
    )
    form = ExamForm(request.POST or None, initial={"pass_threshold": 0.7})
    if request.method == "POST" and form.is_valid():
        exam = exam_services.exam_create(panel=panel, user=request.user, **form.cleaned_data)
        return redirect("console_exam", pk=exam.pk)
    return render(
        request,
        "quality/exams.html",
        {"panel": panel, "exams": quality_selectors.exams_for_panel(panel), "form": form},
    )


def _exam_context(exam: Exam) -> dict[str, object]:
    items = list(
        exam.items.select_related(
            "answer__instruction__task", "pair__instruction", "pair__answer_a", "pair__answer_b"
        ).order_by("position", "pk")
    )
    refs: dict[int, dict[int, ReferenceScore]] = {}
    for ref in ReferenceScore.objects.filter(item__exam=exam):
        refs.setdefault(ref.exam_item_id, {})[ref.criterion_id] = ref
    labels: dict[int, list[ReferenceLabel]] = {}
    for label in (
        ReferenceLabel.objects.filter(item__exam=exam)
        .select_related("comparison_criterion")
        .order_by("comparison_criterion__position", "pk")
    ):
        labels.setdefault(label.exam_item_id, []).append(label)
    blocks = []
    pair_blocks = []
    criteria_cache: dict[tuple[int | None, int | None], list[object]] = {}
    for item in items:
        if item.pair is not None:
            # Side by side: its unanimous labels (in the pair's orientation) are the reference.
            pair_blocks.append({"item": item, "labels": labels.get(item.pk, [])})
            continue
        assert item.answer is not None, "a pointwise item has its answer"
        instruction = item.answer.instruction
        key = (instruction.task_id, instruction.style_id)
        if key not in criteria_cache:
            criteria_cache[key] = list(criteria_for(instruction))
        rows = [
            {"criterion": c, "ref": refs.get(item.pk, {}).get(c.pk)}  # type: ignore[attr-defined]
            for c in criteria_cache[key]
        ]
        blocks.append({"item": item, "rows": rows, "n_refs": len(refs.get(item.pk, {}))})
    versions = Exam.objects.filter(lineage=exam.lineage).order_by("-version")
    latest = versions.first()
    return {
        "exam": exam,
        "panel": exam.panel,
        "blocks": blocks,
        "pair_blocks": pair_blocks,
        "versions": versions,
        "is_latest": latest is not None and latest.pk == exam.pk,
        "attempts": ExamAttempt.objects.filter(exam__lineage=exam.lineage)
        .select_related("expert__user", "exam")
        .order_by("-started_at")[:200],
    }


@login_required
@require_http_methods(["GET", "POST"])
def exam_page(request: HttpRequest, pk: int) -> HttpResponse:
    exam = _exam(request, pk)
    form = ExamForm(
        request.POST or None, instance=exam if request.method == "GET" else None, initial=None
    )
    if request.method == "POST" and form.is_valid():
        return _exam_change(
            request,
            exam,
            lambda: exam_services.exam_update(exam=exam, user=request.user, **form.cleaned_data),
            _("Saved (version %(v)d)."),
        )
    context = _exam_context(exam)
    context.update(
        {
            "form": form,
            "add_form": AnswerIdForm(),
            "import_form": ImportForm(),
            "gold_form": GoldPairsForm(),
        }
    )
    return render(request, "quality/exam.html", context)


@login_required
@require_POST
def exam_item_add(request: HttpRequest, pk: int) -> HttpResponse:
    exam = _exam(request, pk)
    form = AnswerIdForm(request.POST)
    if not form.is_valid():
        return redirect("console_exam", pk=exam.pk)
    raw = form.cleaned_data["answer"].strip()
    answer_pk = parse_id(raw)
    # By external id only for a viewer who sees models (material.identity): it can name one.
    by_external_id = identity.answers_by_external_id(
        raw, models_visible=allowed(request.user, "console.view_answer_model")
    )
    answer = (
        Answer.objects.filter(pk=answer_pk).first()
        if answer_pk is not None
        else Answer.objects.filter(by_external_id).first()
    )
    # Only real answers the exam's panel scores (the control items' rule): another panel's
    # answer does not exist here, and nothing is copied or added.
    if (
        answer is None
        or hasattr(answer, "reserved")
        or not allowed(request.user, "quality.manage_panel_answer", PanelAnswer(exam.panel, answer))
    ):
        form.add_error("answer", _("This panel scores no answer with that id."))
        context = _exam_context(exam)
        context.update(
            {
                "form": ExamForm(instance=exam),
                "add_form": form,
                "import_form": ImportForm(),
                "gold_form": GoldPairsForm(),
            }
        )
        return render(request, "quality/exam.html", context, status=422)
    return _exam_change(
        request,
        exam,
        lambda: exam_services.exam_item_add(exam=exam, answer=answer, user=request.user)[0],
    )


@login_required
@require_POST
def exam_pairs_add(request: HttpRequest, pk: int) -> HttpResponse:
    """Add N side-by-side pairs of the panel's gold pool (unanimous on every criterion)."""
    exam = _exam(request, pk)
    form = GoldPairsForm(request.POST)
    if not form.is_valid():
        for name, errors in form.errors.items():
            for error in errors:
                messages.error(request, f"{name}: {error}")
        return redirect("console_exam", pk=exam.pk)
    n = form.cleaned_data["n"]
    seed = form.cleaned_data["seed"]
    return _exam_change(
        request,
        exam,
        lambda: kind_pairwise.exam_pairs_add_from_gold(
            exam=exam, n=n, seed=seed, user=request.user
        )[0],
        _("Side-by-side pairs added from the gold pool (version %(v)d)."),
    )


@login_required
@require_POST
def exam_item_remove(request: HttpRequest, pk: int, answer_id: int) -> HttpResponse:
    exam = _exam(request, pk)
    return _exam_change(
        request,
        exam,
        lambda: exam_services.exam_item_remove(exam=exam, answer_id=answer_id, user=request.user),
    )


@login_required
@require_POST
def exam_references(request: HttpRequest, pk: int) -> HttpResponse:
    """Save the reference scores of one item: score_<criterion>, comment_<criterion>."""
    exam = _exam(request, pk)
    answer_id = parse_id(request.POST.get("answer"))
    if answer_id is None:
        raise Http404
    rows = []
    for name, value in request.POST.items():
        criterion_id = parse_id(name[6:]) if name.startswith("score_") else None
        if criterion_id is None:
            continue
        score, is_na, malformed = parse_score(value)
        if malformed:
            messages.error(request, _("Unknown score."))
            return redirect("console_exam", pk=exam.pk)
        rows.append(
            exam_services.ReferenceInput(
                answer_id=answer_id,
                criterion_id=criterion_id,
                score=score,
                is_na=is_na,
                comment=request.POST.get(f"comment_{criterion_id}", "")[:5000],
            )
        )
    return _exam_change(
        request,
        exam,
        lambda: exam_services.exam_references_set(exam=exam, rows=rows, user=request.user),
        _("References saved (version %(v)d)."),
    )


@login_required
@require_POST
def exam_import(request: HttpRequest, pk: int) -> HttpResponse:
    exam = _exam(request, pk)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, str(error))
        return redirect("console_exam", pk=exam.pk)
    upload = form.cleaned_data["file"]
    report = exam_import_service.exam_import(
        exam=exam, content=upload.read(), filename=upload.name, user=request.user
    )
    if report.errors:
        context = _exam_context(exam)
        context.update(
            {
                "form": ExamForm(instance=exam),
                "add_form": AnswerIdForm(),
                "import_form": form,
                "import_errors": report.errors,
            }
        )
        return render(request, "quality/exam.html", context, status=422)
    assert report.exam is not None
    messages.success(request, _("%(n)d references imported.") % {"n": report.rows})
    return redirect("console_exam", pk=report.exam.pk)


@login_required
@require_http_methods(["GET", "POST"])
def attempt_page(request: HttpRequest, pk: int) -> HttpResponse:
    """Every criterion side by side: the candidate's score and rationale, the reference's."""
    attempt = _attempt(request, pk)
    form = OverrideForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            exam_services.exam_attempt_override(
                attempt=attempt,
                passed=form.cleaned_data["passed"],
                reason=form.cleaned_data["reason"],
                user=request.user,
            )
            messages.success(request, _("Verdict overridden."))
            return redirect("console_attempt", pk=attempt.pk)
        except exam_services.ExamError as exc:
            form.add_error(None, str(exc))
    rows = exam_services.attempt_comparisons(attempt)
    pair_rows = kind_pairwise.attempt_pair_comparisons(attempt)
    show_all = request.GET.get("all") == "1"
    return render(
        request,
        "quality/attempt.html",
        {
            "attempt": attempt,
            "exam": attempt.exam,
            "panel": attempt.exam.panel,
            "rows": rows if show_all else [r for r in rows if not r.match],
            "pair_rows": pair_rows if show_all else [r for r in pair_rows if not r.match],
            "has_pairs": bool(pair_rows),
            "n_rows": len(rows) + len(pair_rows),
            "n_mismatches": sum(1 for r in rows if not r.match)
            + sum(1 for r in pair_rows if not r.match),
            "show_all": show_all,
            "form": form,
        },
    )


# --- the candidate's side ------------------------------------------------------------------


def _candidate(request: HttpRequest) -> Expert:
    require(request.user, "quality.take_exam")
    return request.user.expert  # type: ignore[union-attr]


@login_required
@require_GET
def my_exams(request: HttpRequest) -> HttpResponse:
    expert = _candidate(request)
    return render(
        request, "quality/my_exams.html", {"rows": quality_selectors.exams_for_candidate(expert)}
    )


@login_required
@require_POST
def exam_start(request: HttpRequest, pk: int) -> HttpResponse:
    expert = _candidate(request)
    exam = get_object_for(request.user, "quality.start_exam", Exam, pk=pk)
    try:
        attempt = exam_services.exam_attempt_start(exam=exam, expert=expert)
    except exam_services.ExamError as exc:
        messages.error(request, str(exc))
        return redirect("my_exams")
    first = quality_selectors.attempt_first_open_assignment(attempt)
    return redirect("assignment", pk=first) if first else redirect("my_exams")


@login_required
@require_GET
def attempt_continue(request: HttpRequest, pk: int) -> HttpResponse:
    """The candidate's way through an attempt: the next unanswered item, then the result.

    `after` (the item just scored) keeps the exam's order; an exam never hands over to regular
    work. Once every item is in, the candidate lands on their exam list, which shows the result.
    """
    _candidate(request)
    attempt = get_object_for(
        request.user,
        "quality.continue_attempt",
        ExamAttempt.objects.select_related("exam", "expert"),
        pk=pk,
    )
    after = request.GET.get("after", "")
    position = quality_selectors.exam_position(int(after)) if after.isdigit() else None
    if position is not None and position.attempt_id == attempt.pk:
        following = position.next_assignment_id
    else:
        following = quality_selectors.attempt_first_open_assignment(attempt)
    if following:
        return redirect("assignment", pk=following)
    attempt.refresh_from_db()
    if attempt.is_practice and attempt.graded:
        return redirect("exam_attempt_result", pk=attempt.pk)
    if attempt.graded:
        messages.success(
            request,
            _("Exam “%(title)s” finished: your result is below.") % {"title": attempt.exam.title},
        )
    else:
        messages.info(request, _("Every exam item is answered; the result is being computed."))
    return redirect(reverse("my_exams") + f"#exam-{attempt.exam_id}")


def _own_attempt(request: HttpRequest, pk: int) -> ExamAttempt:
    """The candidate's own attempt: 404 for anyone else's (supervisors use the console)."""
    _candidate(request)
    return get_object_for(
        request.user,
        "quality.view_own_attempt",
        ExamAttempt.objects.select_related("exam__panel", "expert"),
        pk=pk,
    )


@login_required
@require_GET
def practice_feedback(request: HttpRequest, pk: int, assignment_id: int) -> HttpResponse:
    """After each practice item: the expert's values next to the references and their comments.

    An item not answered yet (skipped on the way) shows nothing and moves on: a reference seen
    before the answer would be an answer key.
    """
    attempt = _own_attempt(request, pk)
    link = feedback.practice_link(attempt, assignment_id)
    if link is None or not attempt.is_practice:
        raise Http404
    continue_url = reverse("exam_attempt_continue", args=[attempt.pk]) + f"?after={assignment_id}"
    if link.assignment.status != AssignmentStatus.SUBMITTED:
        return redirect(continue_url)
    shown = feedback.practice_feedback(attempt, link)
    position = quality_selectors.exam_position(assignment_id)
    return render(
        request,
        "quality/practice_feedback.html",
        {
            "attempt": attempt,
            "exam": attempt.exam,
            "feedback": shown,
            "position": position,
            "continue_url": continue_url,
        },
    )


@login_required
@require_GET
def attempt_result(request: HttpRequest, pk: int) -> HttpResponse:
    """The candidate's result of a graded attempt: each mismatch with the reference comment.

    Retakes: a qualifying exam's retake is usually the same version, so these mismatches tell
    the candidate part of its answer key. The issue asks for them (POLLUX-style: learn from
    the mismatches); they are shown only after grading, only mismatches, and only to the
    attempt's own expert. A panel that wants blind retakes adds a new version with other items.
    """
    attempt = _own_attempt(request, pk)
    if not attempt.graded:
        messages.info(request, _("The result is shown once every item is answered."))
        return redirect("exam_attempt_continue", pk=attempt.pk)
    rows = exam_services.attempt_comparisons(attempt)
    pair_rows = kind_pairwise.attempt_pair_comparisons(attempt)
    mismatches = [r for r in rows if not r.match]
    pair_mismatches = feedback.shown_pair_rows(attempt, [r for r in pair_rows if not r.match])
    return render(
        request,
        "quality/attempt_result.html",
        {
            "attempt": attempt,
            "exam": attempt.exam,
            "rows": mismatches,
            "pair_rows": pair_mismatches,
            "n_rows": len(rows) + len(pair_rows),
            "n_mismatches": len(mismatches) + len(pair_mismatches),
        },
    )
