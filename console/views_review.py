"""The answer review page of a panel: the experts' scores side by side, return and accept.

Access: the console role (403 without it), then the answer through the panel the user manages
and only if the panel scores it (`quality.manage_panel_answer`: 404 otherwise). A viewer with
open work of his own on the answer scores blind: he sees no scores and may not review them.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from console import review as review_selectors
from console.views_queues import queue_params, queue_query, review_nav
from dataset import adjudication
from material.models import Answer
from panels.access import allowed, get_object_for, require
from panels.models import Panel
from quality.rules import PanelAnswer
from work import review
from work.forms import parse_id, parse_score
from work.models import Estimate, Triple


class ReturnForm(forms.Form):
    comment = forms.CharField(
        label=gettext_lazy("Comment for the expert"),
        max_length=review.COMMENT_MAX,
        widget=forms.Textarea(attrs={"rows": 2}),
    )


def _panel(request: HttpRequest, pk: int) -> Panel:
    return get_object_for(
        request.user, "panels.manage_panel", Panel, role="panels.view_console", pk=pk
    )


def _panel_answer(request: HttpRequest, pk: int, answer_id: int) -> tuple[Panel, Answer]:
    panel = _panel(request, pk)
    answer = Answer.objects.select_related("instruction__task").filter(pk=answer_id).first()
    _check_panel_answer(request, panel, answer)
    assert answer is not None, "a missing answer is refused above"
    return panel, answer


def _check_panel_answer(request: HttpRequest, panel: Panel, answer: Answer | None) -> None:
    """404 unless the panel scores the answer (`quality.manage_panel_answer`, as check_object
    answers for a model): a missing answer and one the panel does not score are the same 404."""
    if answer is None or not allowed(
        request.user, "quality.manage_panel_answer", PanelAnswer(panel, answer)
    ):
        require(request.user, "panels.view_console")
        raise Http404


def _page(
    request: HttpRequest, panel: Panel, answer: Answer, status: int = 200, form: Any = None
) -> HttpResponse:
    blind = review_selectors.viewer_blind_on(answer, request.user)
    rows = [] if blind else review_selectors.answer_review(panel, answer)
    nav = review_nav(request, panel)
    return render(
        request,
        "console/review.html",
        {
            "panel": panel,
            "answer": answer,
            "blind": blind,
            "rows": rows,
            "disputed": sum(r.disputed for r in rows),
            "form": form or ReturnForm(),
            # Opened from a review queue: its neighbours; the estimate the keyboard acts on first
            # (the queue row's, or the one after the estimate just reviewed).
            "nav": nav,
            "selected_estimate": parse_id(request.GET.get("estimate")),
        },
        status=status,
    )


def _next_estimate(panel: Panel, answer: Answer, after: Estimate) -> tuple[int, int]:
    """(estimate, triple) the keyboard moves on to once `after` is reviewed: the next estimate
    of the same answer the panel may review, in the page's order (`after` when it is the last)."""
    cells = [
        (cell.estimate_id, row.triple_id)
        for row in review_selectors.answer_review(panel, answer)
        for cell in row.cells
        if cell.reviewable
    ]
    ids = [estimate for estimate, _triple in cells]
    if after.pk in ids and ids.index(after.pk) + 1 < len(ids):
        return cells[ids.index(after.pk) + 1]
    return after.pk, after.triple_id


def _back_to_review(
    request: HttpRequest, panel: Panel, answer: Answer, reviewed: Estimate | None = None
) -> HttpResponse:
    """The review page again, still at its place in the queue it was opened from, with the
    next estimate of the answer selected and in view (the keyboard's a / s act on it)."""
    url = reverse("console_answer_review", args=[panel.pk, answer.pk])
    params = queue_params(request.GET, panel)
    query = queue_query(*params) if params is not None else ""
    if reviewed is not None:
        estimate, triple = _next_estimate(panel, answer, reviewed)
        query = "&".join(q for q in (query, f"estimate={estimate}") if q)
        return redirect(f"{url}?{query}#triple-{triple}")
    return redirect(f"{url}?{query}" if query else url)


@login_required
@require_GET
def answer_review(request: HttpRequest, pk: int, answer_id: int) -> HttpResponse:
    panel, answer = _panel_answer(request, pk, answer_id)
    return _page(request, panel, answer)


def _panel_estimate(request: HttpRequest, pk: int, estimate_id: int) -> tuple[Panel, Estimate]:
    """A work estimate of the panel on an answer it scores (404 otherwise)."""
    panel = _panel(request, pk)
    estimate = (
        Estimate.objects.select_related("assignment", "triple__answer__instruction")
        .filter(pk=estimate_id, assignment__panel=panel)
        .first()
    )
    if estimate is None:
        raise Http404
    _check_panel_answer(request, panel, estimate.triple.answer)
    return panel, estimate


def _review(request: HttpRequest, pk: int, estimate_id: int, accept: bool) -> HttpResponse:
    panel, estimate = _panel_estimate(request, pk, estimate_id)
    answer = estimate.triple.answer
    if review_selectors.viewer_blind_on(answer, request.user):
        # He cannot see the scores he would judge: his own work on the answer comes first.
        messages.error(request, _("Submit your own work on this answer before reviewing it."))
        return _page(request, panel, answer, status=409)
    form = ReturnForm(request.POST)
    try:
        if accept:
            review.estimate_accept(estimate=estimate, user=request.user)
            messages.success(request, _("The estimate is accepted."))
        elif not form.is_valid():
            messages.error(request, _("Write a comment for the expert (at most 2000 characters)."))
            return _page(request, panel, answer, status=400, form=form)
        else:
            review.estimate_return(
                estimate=estimate, user=request.user, comment=form.cleaned_data["comment"]
            )
            messages.success(request, _("The estimate is sent back to its expert."))
    except review.ReviewRefused as exc:
        messages.error(request, str(exc))
        return _page(request, panel, answer, status=exc.status, form=form)
    return _back_to_review(request, panel, answer, reviewed=estimate)


@login_required
@require_POST
def estimate_return(request: HttpRequest, pk: int, estimate_id: int) -> HttpResponse:
    return _review(request, pk, estimate_id, accept=False)


@login_required
@require_POST
def estimate_accept(request: HttpRequest, pk: int, estimate_id: int) -> HttpResponse:
    return _review(request, pk, estimate_id, accept=True)


@login_required
@require_POST
def triple_adjudicate(request: HttpRequest, pk: int, triple_id: int) -> HttpResponse:
    """Record the supervisor's verdict on one of the panel's triples (400 naming the field)."""
    panel = _panel(request, pk)
    triple = (
        Triple.objects.select_related("answer__instruction", "rubric", "criterion", "panel")
        .filter(pk=triple_id, panel=panel)
        .first()
    )
    if triple is None:
        raise Http404
    _check_panel_answer(request, panel, triple.answer)
    answer = triple.answer
    if review_selectors.viewer_blind_on(answer, request.user):
        messages.error(request, _("Submit your own work on this answer before reviewing it."))
        return _page(request, panel, answer, status=409)
    score, is_na, malformed = parse_score(request.POST.get("score"))
    try:
        if malformed:
            raise adjudication.AdjudicationRefused("score", _("The score is not a number."))
        adjudication.adjudicate(
            triple=triple,
            score=score,
            is_na=is_na,
            reason=request.POST.get("reason", ""),
            user=request.user,
        )
    except adjudication.AdjudicationRefused as exc:
        messages.error(
            request,
            _("Criterion %(key)s, %(field)s: %(error)s")
            % {
                "key": triple.criterion.key if triple.criterion else triple.pk,
                "field": exc.field,
                "error": exc,
            },
        )
        return _page(request, panel, answer, status=400)
    messages.success(request, _("The verdict is recorded."))
    return _back_to_review(request, panel, answer)
