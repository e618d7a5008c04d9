"""The supervisor console (htmx): panels, experts, lists, plots and actions.

Every view starts with an access helper: the role (console users only, else 403) and then the
object (a panel the user supervises, else 404: another panel does not exist for them).
"""

from __future__ import annotations

from datetime import datetime, time
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from console import plots
from console import selectors as console_selectors
from console import services as console_services
from console import stats as console_stats
from console.forms import ControlSettingsForm, LockBatchForm, NoteForm, ReopenForm
from jobs.models import Job, JobKind, JobStatus
from material import identity
from material.models import Answer
from panels import selectors as panel_selectors
from panels import services as panel_services
from panels.access import allowed, get_object_for, require
from panels.models import Expert, Membership, Panel
from quality import control as control_services
from quality import exams as exam_services
from quality import kind_pairwise
from quality.forms import GoldPairsForm
from quality.models import ControlItem, ReferenceScore
from quality.rules import PanelAnswer
from taxonomy.models import CriterionGroup
from taxonomy.services import display_names
from work.forms import parse_id, parse_score
from work.models import Triple


def _console_user(request: HttpRequest) -> None:
    require(request.user, "panels.view_console")


def _panel(request: HttpRequest, pk: int) -> Panel:
    return get_object_for(
        request.user, "panels.manage_panel", Panel, role="panels.view_console", pk=pk
    )


def _panel_expert(request: HttpRequest, pk: int, expert_id: int) -> tuple[Panel, Expert]:
    panel = _panel(request, pk)
    membership = (
        Membership.objects.select_related("expert").filter(panel=panel, expert_id=expert_id).first()
    )
    if membership is None:
        raise Http404
    return panel, membership.expert


def _panel_answer(request: HttpRequest, panel: Panel, raw: Any) -> Any:
    """A real answer routed to the panel, by id or external id (the latter only for a viewer
    who sees models: material.identity); None otherwise (an answer the panel does not score
    does not exist for its console)."""

    raw = str(raw or "").strip()
    if not raw:
        return None
    # parse_id: ASCII digits within bigint range ("²" and 20 digits name no id).
    pk = parse_id(raw)
    answers = Answer.objects.select_related("instruction")
    by_external_id = identity.answers_by_external_id(
        raw, models_visible=allowed(request.user, "console.view_answer_model")
    )
    answer = (answers.filter(pk=pk) if pk is not None else answers.filter(by_external_id)).first()
    # The rule is also about the data: an answer the panel does not score is nobody's gold there.
    if answer is None or not allowed(
        request.user, "quality.manage_panel_answer", PanelAnswer(panel, answer)
    ):
        return None
    return answer


def _template(request: HttpRequest, name: str, partial: str) -> str:
    return f"{name}#{partial}" if getattr(request, "htmx", False) else name


@login_required
@require_GET
def console(request: HttpRequest) -> HttpResponse:
    _console_user(request)
    panels = panel_selectors.panels_for_user(request.user)
    return render(
        request, "console/console.html", {"panels": console_selectors.panel_progress(panels)}
    )


@login_required
@require_GET
def panel_page(request: HttpRequest, pk: int) -> HttpResponse:
    panel = _panel(request, pk)
    stats = console_stats.panel_stats(panel)
    if stats.stale:
        console_stats.panel_stats_refresh_enqueue(panel=panel)
    throughput = stats.throughput[-14:]
    return render(
        request,
        "console/panel.html",
        {
            "panel": panel,
            "stats": stats,
            "groups": stats.groups,
            "tasks": console_selectors.localise_task_rows(stats.tasks),
            "throughput": throughput,
            "throughput_chart": plots.bar_chart(
                [(f"{d:%d.%m}", n) for d, n in throughput],
                title=_("Estimates per day"),
                width=420,
                height=130,
                css_class="throughput",
            ),
            "times": _named_times(stats.times),
            "pair_agreement": console_selectors.pair_agreement_rows(panel),
            "notices": panel_selectors.unread_notices(panel)[:20],
            "actions": panel_selectors.recent_actions(panel),
            "lock_form": LockBatchForm(),
            "reopen_form": ReopenForm(),
            "statuses": [
                ("", _("all")),
                ("active", _("active")),
                ("paused", _("paused")),
                ("unqualified", _("unqualified")),
            ],
        },
    )


def _named_times(times: dict[str, Any] | None) -> dict[str, Any] | None:
    """The snapshot's median times with each criterion's display name."""
    if not times:
        return times
    names = display_names(c["key"] for c in times.get("criteria", []))
    return {**times, "criteria": [{**c, "name": names[c["key"]]} for c in times["criteria"]]}


@login_required
@require_GET
def experts_table(request: HttpRequest, pk: int) -> HttpResponse:
    """The experts table (htmx-swappable): paginated, filtered by status in the database."""
    panel = _panel(request, pk)
    status = request.GET.get("status", "")
    page = Paginator(panel_selectors.panel_experts(panel, status=status), 25).get_page(
        request.GET.get("page")
    )
    stats = console_stats.panel_stats(panel)
    blind = console_selectors.viewer_is_blind(panel, request.user)
    # A blind viewer (open work of his own here) sees no agreement figures: {} means none.
    agreement = {} if blind else stats.agreement
    rows = console_selectors.expert_rows(panel, list(page.object_list), agreement)
    groups = [g for g, _label in CriterionGroup.choices]
    return render(
        request,
        _template(request, "console/experts.html", "experts-table"),
        {
            "panel": panel,
            "page": page,
            "rows": rows,
            "status": status,
            "groups": groups,
            "stats": stats,
            "blind": blind,
        },
    )


@login_required
@require_GET
def plots_page(request: HttpRequest, pk: int) -> HttpResponse:
    panel = _panel(request, pk)
    stats = console_stats.panel_stats(panel)
    blind = console_selectors.viewer_is_blind(panel, request.user)
    shown = [] if blind else stats.distribution
    names = display_names(d["key"] for d in shown)
    distribution = [
        {
            "criterion": d,
            "name": names[d["key"]],
            "svg": plots.score_distribution_chart(d["counts"], title=names[d["key"]]),
        }
        for d in shown
    ]
    return render(
        request,
        _template(request, "console/plots.html", "plots"),
        {
            "panel": panel,
            "stats": stats,
            "distribution": distribution,
            "blind": blind,
            "confidence": ""
            if blind
            else plots.histogram_chart(stats.confidence or [0] * 10, title=_("Verdict confidence")),
            "progress": plots.line_chart(
                stats.progress, title=_("Estimates submitted, cumulative")
            ),
        },
    )


@login_required
@require_GET
def estimates_page(request: HttpRequest, pk: int) -> HttpResponse:
    panel = _panel(request, pk)
    keys = ("status", "group", "expert", "criterion", "score", "review")
    filters = {k: request.GET.get(k, "").strip() for k in keys}
    page = Paginator(
        console_selectors.estimates_list(panel, filters, viewer=request.user), 50
    ).get_page(request.GET.get("page"))
    query = "&".join(f"{k}={v}" for k, v in filters.items() if v)
    return render(
        request,
        _template(request, "console/estimates.html", "estimates-table"),
        {
            "panel": panel,
            "page": page,
            "filters": filters,
            "query": query,
            "groups": CriterionGroup.choices,
        },
    )


def _back(panel: Panel) -> HttpResponse:
    return redirect("console_panel", pk=panel.pk)


def _note(request: HttpRequest) -> str:
    """The optional note of a pause or resume (an invalid one is left out, not refused)."""
    form = NoteForm(request.POST)
    return str(form.cleaned_data["note"]) if form.is_valid() else ""


@login_required
@require_POST
def expert_pause(request: HttpRequest, pk: int, expert_id: int) -> HttpResponse:
    panel, expert = _panel_expert(request, pk, expert_id)
    panel_services.expert_pause(
        expert=expert, user=request.user, panel=panel, reason=_note(request)
    )
    messages.success(request, _("%(expert)s is paused.") % {"expert": expert.pseudonym})
    return _back(panel)


@login_required
@require_POST
def expert_resume(request: HttpRequest, pk: int, expert_id: int) -> HttpResponse:
    panel, expert = _panel_expert(request, pk, expert_id)
    panel_services.expert_resume(expert=expert, user=request.user, panel=panel, note=_note(request))
    messages.success(request, _("%(expert)s works again.") % {"expert": expert.pseudonym})
    return _back(panel)


@login_required
@require_POST
def expert_reassign(request: HttpRequest, pk: int, expert_id: int) -> HttpResponse:
    panel, expert = _panel_expert(request, pk, expert_id)
    job = console_services.expert_reassign(expert=expert, panel=panel, user=request.user)
    messages.success(
        request,
        _("The open answers of %(expert)s are released; a build job hands them to other experts.")
        % {"expert": expert.pseudonym},
    )
    return redirect("console_job", job_id=job.pk)


def _day_start(day: Any) -> datetime | None:
    if not day:
        return None
    return timezone.make_aware(datetime.combine(day, time.min))


@login_required
@require_POST
def lock_batch(request: HttpRequest, pk: int) -> HttpResponse:
    panel = _panel(request, pk)
    form = LockBatchForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Check the dates."))
        return _back(panel)
    count = console_services.assignments_lock_batch(
        panel=panel,
        user=request.user,
        submitted_from=_day_start(form.cleaned_data["submitted_from"]),
        submitted_to=_day_start(form.cleaned_data["submitted_to"]),
        task_id=form.cleaned_data["task"],
    )
    messages.success(request, _("%(n)d submitted answers are locked.") % {"n": count})
    return _back(panel)


@login_required
@require_POST
def triple_reopen(request: HttpRequest, pk: int) -> HttpResponse:
    panel = _panel(request, pk)
    form = ReopenForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Give the triple id and a note."))
        return _back(panel)
    triple = get_object_or_404(
        Triple, pk=form.cleaned_data["triple"], panel=panel, answer__reserved__isnull=True
    )
    try:
        job = console_services.triple_reopen(
            triple=triple, user=request.user, note=form.cleaned_data["note"]
        )
    except exam_services.ExamError as exc:
        messages.error(request, str(exc))
        return _back(panel)
    messages.success(
        request, _("The triple is reopened; a build job gives the new slot to another expert.")
    )
    return redirect("console_job", job_id=job.pk)


@login_required
@require_POST
def build(request: HttpRequest, pk: int) -> HttpResponse:
    panel = _panel(request, pk)
    job = console_services.assignments_build_enqueue(panel=panel, user=request.user)
    url = reverse("console_job", args=[job.pk])
    if getattr(request, "htmx", False):
        return _render_job(request, job.pk)
    return redirect(url)


@login_required
@require_POST
def route_pairs(request: HttpRequest, pk: int) -> HttpResponse:
    """Route the side-by-side pairs not routed yet to this panel, `overlap` experts each."""
    panel = _panel(request, pk)
    raw = request.POST.get("overlap", "3")
    overlap = parse_id(raw)
    try:
        if overlap is None:
            raise ValueError(_("overlap: not a whole number."))
        job = console_services.pairs_route_enqueue(panel=panel, user=request.user, overlap=overlap)
    except ValueError as exc:
        messages.error(request, str(exc))
        return (
            HttpResponse(str(exc), status=400) if getattr(request, "htmx", False) else _back(panel)
        )
    if getattr(request, "htmx", False):
        return _render_job(request, job.pk)
    return redirect("console_job", job_id=job.pk)


@login_required
@require_GET
def job_status(request: HttpRequest, job_id: int) -> HttpResponse:
    return _render_job(request, job_id)


def _render_job(request: HttpRequest, job_id: int) -> HttpResponse:
    _console_user(request)
    job = get_object_or_404(Job, pk=job_id, kind=JobKind.ASSIGNMENTS)
    panel_id = (job.params or {}).get("panel_id")
    if panel_id is None:
        raise Http404
    panel = get_object_for(request.user, "panels.manage_panel", Panel, pk=int(panel_id))
    finished = job.status in (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)
    return render(
        request,
        _template(request, "console/job.html", "job"),
        {"job": job, "panel": panel, "finished": finished},
    )


@login_required
@require_POST
def notices_read(request: HttpRequest, pk: int) -> HttpResponse:
    panel = _panel(request, pk)
    panel_services.notices_mark_read(panel=panel, user=request.user)
    return _back(panel)


@login_required
def control_page(request: HttpRequest, pk: int) -> HttpResponse:
    panel = _panel(request, pk)
    conf = control_services.control_settings_for(panel)
    form = ControlSettingsForm(instance=conf)
    if request.method == "GET" and "references" in request.GET:
        found = _panel_answer(request, panel, request.GET["references"])
        if found is not None:
            return redirect("console_control_references", pk=panel.pk, answer_id=found.pk)
        messages.error(request, _("No such answer."))
    if request.method == "POST":
        if request.POST.get("action") == "add":
            answer = _panel_answer(request, panel, request.POST.get("answer"))
            if answer is None:
                messages.error(request, _("No such answer."))
            else:
                try:
                    control_services.control_item_add(panel=panel, answer=answer, user=request.user)
                    messages.success(request, _("Control item added."))
                except exam_services.ExamError as exc:
                    messages.error(request, str(exc))
            return redirect("console_control", pk=panel.pk)
        form = ControlSettingsForm(request.POST, instance=conf)
        if form.is_valid():
            control_services.control_settings_update(
                panel=panel,
                user=request.user,
                **{name: form.cleaned_data[name] for name in form.Meta.fields},
            )
            messages.success(request, _("Saved."))
            return redirect("console_control", pk=panel.pk)
    items = ControlItem.objects.filter(panel=panel).order_by("-created_at", "-pk")
    page = Paginator(items, 50).get_page(request.GET.get("page"))
    return render(
        request,
        "console/control.html",
        {"panel": panel, "form": form, "page": page, "gold_form": GoldPairsForm()},
    )


@login_required
@require_POST
def control_pairs_add(request: HttpRequest, pk: int) -> HttpResponse:
    """Make N side-by-side pairs of the panel's gold pool (unanimous on every criterion) its
    control items, their labels the references."""
    panel = _panel(request, pk)
    form = GoldPairsForm(request.POST)
    if not form.is_valid():
        for name, errors in form.errors.items():
            for error in errors:
                messages.error(request, f"{name}: {error}")
        return redirect("console_control", pk=panel.pk)
    try:
        added = kind_pairwise.control_pairs_add_from_gold(
            panel=panel, n=form.cleaned_data["n"], seed=form.cleaned_data["seed"], user=request.user
        )
    except exam_services.ExamError as exc:
        messages.error(request, str(exc))
    else:
        done = _("%(n)d side-by-side control pairs added from the gold pool.")
        messages.success(request, done % {"n": len(added)})
    return redirect("console_control", pk=panel.pk)


@login_required
def control_references(request: HttpRequest, pk: int, answer_id: int) -> HttpResponse:
    """Reference scores of an answer for the panel's criteria: what a control item is checked by."""

    panel = _panel(request, pk)
    # Only answers the panel scores as work; exam and control material is frozen copies (the
    # exam pages write exam references), and another panel's answer does not exist here.
    answer = _panel_answer(request, panel, answer_id)
    if answer is None:
        raise Http404
    criteria = control_services.control_reference_criteria(panel=panel, answer=answer)
    if request.method == "POST":
        rows = []
        for criterion in criteria:
            raw = request.POST.get(f"score_{criterion.pk}", "")
            comment = request.POST.get(f"comment_{criterion.pk}", "")[:5000]
            score, is_na, malformed = parse_score(raw)
            if malformed:
                messages.error(request, _("Unknown score."))
                return redirect("console_control_references", pk=panel.pk, answer_id=answer.pk)
            if score is None and not is_na:
                continue  # left blank: no reference for this criterion
            rows.append(
                exam_services.ReferenceInput(
                    answer_id=answer.pk,
                    criterion_id=criterion.pk,
                    score=score,
                    is_na=is_na,
                    comment=comment,
                )
            )
        try:
            saved = control_services.control_references_set(
                panel=panel, answer=answer, rows=rows, user=request.user
            )
        except exam_services.ExamError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, _("%(n)d reference scores saved.") % {"n": saved})
        return redirect("console_control_references", pk=panel.pk, answer_id=answer.pk)
    existing = {
        r.criterion_id: r
        for r in ReferenceScore.objects.filter(answer=answer, panel=panel, criterion__in=criteria)
    }
    rows_out = [
        {
            "criterion": c,
            "levels": [(v, c.rubric.level_text(v)) for v in c.rubric.values] if c.rubric else [],
            "ref": existing.get(c.pk),
        }
        for c in criteria
    ]
    is_item = ControlItem.objects.filter(panel=panel, answer=answer, is_active=True).exists()
    return render(
        request,
        "console/control_references.html",
        {"panel": panel, "answer": answer, "rows": rows_out, "is_item": is_item},
    )


@login_required
@require_POST
def stats_refresh(request: HttpRequest, pk: int) -> HttpResponse:
    """Recompute the panel's numbers in the background (a Celery task)."""
    panel = _panel(request, pk)
    if console_stats.panel_stats_refresh_enqueue(panel=panel):
        messages.info(request, _("The numbers are being recomputed; reload in a moment."))
    else:
        messages.info(request, _("A recomputation is already under way."))
    return _back(panel)
