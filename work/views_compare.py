"""The side-by-side page (REPA): a query, responses A and B, eleven radio groups, a comment.

Shown at the assignment's URL (work.views.assignment_page picks this module for pairwise work,
work.pages); the form posts to its own URL, and the submission calls the services itself.
Model identities never reach the page: the answers are read as texts only,
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
from protocol.pairwise import Label
from taxonomy.models import ComparisonCriterion
from work import comparisons, hooks, kinds, pages, services
from work.forms import time_total
from work.models import Assignment, AssignmentStatus, Estimate

# The four options in the order of the page and of the keys 1-4 (REPA's order).
OPTIONS = (Label.A, Label.B, Label.BOTH_GOOD, Label.BOTH_BAD)


def _option_texts() -> dict[str, str]:
    return {
        Label.A: _("A is better"),
        Label.B: _("B is better"),
        Label.BOTH_GOOD: _("Both are good"),
        Label.BOTH_BAD: _("Both are bad"),
    }


def pair_assignment(request: HttpRequest, pk: int) -> Assignment:
    """The user's own pair assignment (`work.score_assignment`): 404 for anyone else's or for an
    assignment that is not side by side; 403 for a user who is no expert."""
    return pages.own_assignment(request, pk, [PAGE], pair__isnull=False)


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
    exam = pages.sequence_position(assignment.pk, assignment.kind)
    criteria = ComparisonCriterion.objects.filter(
        pk__in=assignment.estimates.values("triple__comparison_criterion")
    )
    context = {
        "assignment": assignment,
        "instruction": pair.instruction,
        "category": comparisons.category_name(pair.category) if pair.category else "",
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
        # An exam item is skipped within its attempt, never into the regular queue; regular
        # work skips to the next pair.
        "skip_url": _next_pair_url(assignment.pk, exam),
        "labelled": sum(1 for row in rows if row["label"]),
    }
    return render(request, "work/compare.html", context, status=status)


def _next_pair_url(pk: int, exam: hooks.SequencePosition | None) -> str:
    """Where Save (Ctrl+Enter), Skip and Refuse go: the expert's next side-by-side pair, never
    an answer of the rubric; the queue with a message after the last one (work.views.queue_next).
    """
    return pages.next_url(pk, exam, kind=kinds.PAIRWISE)


def _previous_url(assignment: Assignment) -> str:
    """The expert's previous pair (Back): edit what was just saved."""
    qs = Assignment.objects.filter(
        expert_id=assignment.expert_id, pair__isnull=False, pk__lt=assignment.pk
    ).exclude(status=AssignmentStatus.RELEASED)
    previous = qs.order_by("-pk").values_list("pk", flat=True).first()
    if previous is None:
        return ""
    return reverse("assignment", kwargs={"pk": previous})


def compare_show(request: HttpRequest, assignment: Assignment) -> HttpResponse:
    """The side-by-side page of a pair (GET of work.views.assignment_page): the pair's texts,
    never its models; opening it starts the work."""
    state = pages.opened(request, assignment)
    if isinstance(state, HttpResponse):
        return state
    assignment, closed = state
    return compare_page(request, assignment, closed_reason=closed)


@login_required
@require_POST
def compare_submit(request: HttpRequest, pk: int) -> HttpResponse:
    """Save the labels of one pair (REPA's Save) posted to the page's own URL."""
    return compare_save(request, pair_assignment(request, pk))


def compare_posted(
    request: HttpRequest, lead: Assignment, estimates: list[Estimate]
) -> HttpResponse:
    """The labels posted to the assignment's URL (work.views.assignment_page)."""
    return compare_save(request, pair_assignment(request, lead.pk))


def compare_save(request: HttpRequest, assignment: Assignment) -> HttpResponse:
    """All criteria of the pair at once, then the next pair; a refusal shows the page again
    from the assignment read for the request."""
    pk = assignment.pk
    data = comparisons.comparison_from_post(request.POST)
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
    return redirect(_next_pair_url(pk, pages.sequence_position(pk, result.kind)))


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
    return redirect(_next_pair_url(pk, None))


# What the side-by-side page reads of its assignment (work.pages.own_assignment).
PAGE = pages.KindPage(
    related=("expert", "panel", "pair__instruction", "pair__answer_a", "pair__answer_b"),
    fields=(
        "status",
        "locked",
        "swapped",
        "comment",
        "drafts_backup",
        "expert__user",
        "panel__number",
        "pair__instruction__text",
        "pair__answer_a__text",
        "pair__answer_b__text",
        "pair__category",
    ),
    show=compare_show,
    submit=compare_posted,
)
