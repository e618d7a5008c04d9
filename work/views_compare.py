"""The side-by-side page (REPA): a query, responses A and B, eleven radio groups, a comment.

The assignment page (work.views.assignment_page) hands a pair assignment to `compare_page`;
the form posts here. Model identities never reach the page: the answers are read as texts only,
and which answer is shown on the left follows the assignment's stored placement.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from lib.markdown import pygments_css
from panels.access import check_object
from protocol.pairwise import Label
from taxonomy.models import ComparisonCriterion
from work import comparisons, hooks, kinds, services
from work.forms import time_total
from work.models import Assignment, AssignmentStatus

# The four options in the order of the page and of the keys 1-4 (REPA's order).
OPTIONS = (Label.A, Label.B, Label.BOTH_GOOD, Label.BOTH_BAD)


def _option_texts() -> dict[str, str]:
    return {
        Label.A: _("A is better"),
        Label.B: _("B is better"),
        Label.BOTH_GOOD: _("Both are good"),
        Label.BOTH_BAD: _("Both are bad"),
    }


def sequence_position(assignment_id: int, kind: str) -> hooks.SequencePosition | None:
    """The assignment's place in its sequence (an exam attempt: quality registers it)."""
    find = hooks.position.get(kind)
    return find(assignment_id) if find is not None else None


def next_url(assignment_id: int, exam: hooks.SequencePosition | None) -> str:
    """Where "save and open the next item" goes, for both pages: within an exam, only its own
    items (the exam's continue page picks the next unanswered item of the same attempt and
    after the last one shows the result: console.views_exams.attempt_continue); regular work
    goes through the queue, which never opens exam items."""
    if exam is not None:
        return exam.continue_url(after=assignment_id)
    return reverse("queue_next") + f"?after={assignment_id}"


def pair_assignment(request: HttpRequest, pk: int) -> Assignment:
    """The user's own pair assignment (`work.score_assignment`): 404 for anyone else's or for an
    assignment that is not side by side; 403 for a user who is no expert."""
    assignment = check_object(
        request.user,
        "work.score_assignment",
        Assignment.objects.select_related(
            "expert", "panel", "pair__instruction", "pair__answer_a", "pair__answer_b"
        )
        .only(
            "id",
            "status",
            "kind",
            "locked",
            "swapped",
            "comment",
            "expert__user",
            "panel__number",
            "pair__instruction__text",
            "pair__answer_a__text",
            "pair__answer_b__text",
            "pair__category",
        )
        .annotate(membership_paused=services.membership_paused())
        .filter(pk=pk, pair__isnull=False)
        .first(),
        role="work.view_queue",
    )
    return assignment


def compare_page(
    request: HttpRequest,
    assignment: Assignment,
    *,
    posted: Mapping[str, str] | None = None,
    comment: str | None = None,
    errors: Mapping[str, list[str]] | None = None,
    form_errors: list[str] | None = None,
    closed_reason: str = "",
    status: int = 200,
) -> HttpResponse:
    pair = assignment.pair
    assert pair is not None, "compare_page is for pair assignments"
    left, right = (
        (pair.answer_b, pair.answer_a) if assignment.swapped else (pair.answer_a, pair.answer_b)
    )
    rows = comparisons.comparison_rows(assignment)
    texts = _option_texts()
    for row in rows:
        if posted is not None and row["key"] in posted:
            row["label"] = posted[row["key"]]
        row["errors"] = (errors or {}).get(row["key"], [])
        row["options"] = [
            {"value": option.value, "text": texts[option], "key": n}
            for n, option in enumerate(OPTIONS, start=1)
        ]
    exam = sequence_position(assignment.pk, assignment.kind)
    criteria = ComparisonCriterion.objects.filter(
        pk__in=assignment.estimates.values("triple__comparison_criterion")
    )
    context = {
        "assignment": assignment,
        "instruction": pair.instruction,
        "category": pair.category,
        "left_text": left.text,
        "right_text": right.text,
        "rows": rows,
        "comment": assignment.comment if comment is None else comment,
        "criteria": criteria,
        "form_errors": form_errors or [],
        "closed_reason": closed_reason,
        "editable": assignment.status != AssignmentStatus.RELEASED and not assignment.locked,
        "pygments_css": pygments_css(),
        "back_url": "" if exam is not None else _previous_url(assignment),
        "exam": exam,
        # An exam item is skipped within its attempt, never into the regular queue.
        "skip_url": next_url(assignment.pk, exam),
    }
    return render(request, "work/compare.html", context, status=status)


def _previous_url(assignment: Assignment) -> str:
    """The expert's previous pair (Back): edit what was just saved."""
    qs = Assignment.objects.filter(
        expert_id=assignment.expert_id, pair__isnull=False, pk__lt=assignment.pk
    ).exclude(status=AssignmentStatus.RELEASED)
    previous = qs.order_by("-pk").values_list("pk", flat=True).first()
    if previous is None:
        return ""
    return reverse("assignment", kwargs={"pk": previous})


@login_required
@require_POST
def compare_submit(request: HttpRequest, pk: int) -> HttpResponse:
    """Save the labels of one pair (REPA's Save): all criteria at once, then the next pair."""
    assignment = pair_assignment(request, pk)
    data = kinds.slot(kinds.PAIRWISE, "parse_submission")(request.POST)
    total = time_total(request.POST)
    if total is None:
        return compare_page(
            request,
            assignment,
            posted=data.labels,
            comment=data.comment,
            form_errors=[_("time_total: not a duration.")],
            status=400,
        )
    try:
        result = comparisons.comparison_submit(
            assignment=assignment,
            data=data,
            user=request.user,
            submission_key=request.POST.get("submission_key", "")[:64],
            time_spent_ms=total,
        )
    except services.ScoringClosed as exc:
        return compare_page(
            request,
            assignment,
            posted=data.labels,
            comment=data.comment,
            closed_reason=str(exc),
            status=409,
        )
    if not result.ok:
        return compare_page(
            request,
            assignment,
            posted=data.labels,
            comment=data.comment,
            errors=result.errors,
            form_errors=result.form_errors,
            status=422,
        )
    messages.success(request, _("Comparison saved."))
    if request.POST.get("then") == "stay":
        return redirect("assignment", pk=pk)
    return redirect(next_url(pk, sequence_position(pk, result.kind)))


@login_required
@require_POST
def compare_draft(request: HttpRequest, pk: int) -> HttpResponse:
    """Autosave of one criterion's choice (htmx): kept as a draft in the pair's orientation."""
    assignment = pair_assignment(request, pk)
    key = request.POST.get("criterion", "")
    shown = request.POST.get("label", "")
    if shown not in {o.value for o in OPTIONS}:
        return HttpResponse(_("Not saved: label: unknown option."), status=422)
    try:
        comparisons.comparison_save_draft(assignment=assignment, key=key, shown=shown)
    except services.ScoringClosed as exc:
        return HttpResponse(str(exc), status=409)
    except KeyError:
        raise Http404 from None
    return HttpResponse(_("Draft saved"))


@login_required
@require_POST
def compare_refuse(request: HttpRequest, pk: int) -> HttpResponse:
    """Refuse the pair (REPA's Refuse): it goes to another expert, never back to this one."""
    assignment = pair_assignment(request, pk)
    try:
        comparisons.comparison_refuse(assignment=assignment)
    except services.ScoringClosed as exc:
        messages.error(request, str(exc))
        return redirect("assignment", pk=pk)
    messages.info(request, _("Pair refused: it goes to another expert."))
    return redirect(f"{reverse('queue_next')}?after={pk}")
