"""Judge run pages: list, start, run page (progress polled by htmx, metrics), contradictions.

Every view starts with its permission check; a run a user may not see is a 404.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from judging import kinds, selectors, services
from judging.forms import RunStartForm
from judging.models import JudgeRun
from panels.access import allowed, get_object_for, require


def _get_run_for_user(request: HttpRequest, pk: int, perm: str = "judging.view_run") -> JudgeRun:
    return get_object_for(
        request.user, perm, JudgeRun.objects.select_related("config", "created_by"), pk=pk
    )


@login_required
def run_list(request: HttpRequest) -> HttpResponse:
    require(request.user, "judging.view_runs")
    runs = selectors.runs_for_user(request.user)[:200]
    return render(
        request,
        "judging/run_list.html",
        {"runs": runs, "may_start": allowed(request.user, "judging.start_run")},
    )


@login_required
def run_start(request: HttpRequest) -> HttpResponse:
    require(request.user, "judging.start_run")
    form = RunStartForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        run = services.run_create(
            config=form.cleaned_data["config"],
            scope=form.scope(),
            created_by=request.user,
            backend=form.cleaned_data.get("backend") or None,
            **form.run_options(),
        )
        messages.success(request, _("Judge run started: %(n)d triples.") % {"n": run.total})
        return redirect("judging_run", pk=run.pk)
    return render(request, "judging/run_start.html", {"form": form})


def _stored_report(run: JudgeRun) -> selectors.StoredReport:
    """The run's stored report; a computation is asked for when there is none or it is stale."""
    stored = selectors.report_stored(run)
    if stored.stale:
        services.report_request(run.pk)
        stored.computing = True
    return stored


def _progress_context(run: JudgeRun) -> dict[str, Any]:
    return {"run": run, "rate": services.run_throughput(run), "unit": kinds.of(run).unit()}


@login_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _get_run_for_user(request, pk)
    context = _progress_context(run)
    context["may_manage"] = allowed(request.user, "judging.manage_run", run)
    if getattr(request, "htmx", False):
        # The progress poll reads the run row only: never the report, never an estimate.
        return render(request, "judging/run_detail.html#progress", context)
    # The report is computed by a worker and stored; the page shows what is stored and, when
    # there is none or its inputs changed, asks for a computation (one at a time per run).
    stored = context["stored"] = _stored_report(run)
    report = context["report"] = stored.data
    # What the page shows of the run's kind: a pointwise run's breakdowns and confusion
    # matrices, a side-by-side run's position-bias twins.
    context.update(kinds.of(run).page_context(run, report))
    return render(request, "judging/run_detail.html", context)


@login_required
@require_POST
def run_report_recompute(request: HttpRequest, pk: int) -> HttpResponse:
    """Recompute the stored report now (whoever may see the run may ask for it)."""
    run = _get_run_for_user(request, pk)
    if services.report_request(run.pk):
        messages.info(request, _("The report is being recomputed; reload the page in a moment."))
    else:
        messages.info(request, _("The report is already being computed."))
    return redirect("judging_run", pk=run.pk)


@login_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = _get_run_for_user(request, pk, "judging.manage_run")
    if run.is_active:
        services.run_cancel(run=run)
        messages.info(request, _("The run is cancelled."))
    return redirect("judging_run", pk=run.pk)


@login_required
@require_POST
def run_resume(request: HttpRequest, pk: int) -> HttpResponse:
    run = _get_run_for_user(request, pk, "judging.manage_run")
    queued = services.run_resume(run=run)
    messages.info(request, _("Resumed: %(n)d batches queued.") % {"n": queued})
    return redirect("judging_run", pk=run.pk)


@login_required
@require_POST
def run_swap(request: HttpRequest, pk: int) -> HttpResponse:
    """Start the position-bias twin of a side-by-side run: the same scope, templates and
    examples with A and B swapped (whoever may manage the run)."""
    run = _get_run_for_user(request, pk, "judging.manage_run")
    try:
        twin = services.run_create(
            config=run.config,
            scope=run.scope,
            created_by=request.user,
            backend=run.backend,
            swap_of=run,
        )
    except services.JudgingError as exc:
        messages.error(request, str(exc))
        return redirect("judging_run", pk=run.pk)
    messages.success(request, _("Position-bias run started: %(n)d calls.") % {"n": twin.total})
    return redirect("judging_run", pk=twin.pk)


@login_required
def run_contradictions(request: HttpRequest, pk: int) -> HttpResponse:
    run = _get_run_for_user(request, pk)
    # The stored report's list only (computed with it): before the first one, "computing".
    stored = _stored_report(run)
    ids = stored.data["contradictions"] if stored.data else []
    page = Paginator(ids, 20).get_page(request.GET.get("page"))
    items = selectors.contradiction_details(run, list(page.object_list))
    return render(
        request,
        "judging/contradictions.html",
        {"run": run, "page": page, "items": items, "stored": stored, "report": stored.data},
    )
