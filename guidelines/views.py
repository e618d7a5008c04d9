"""Guideline pages: the reader's page (experts, from the scoring page and the exams) and the
supervisor's pages (list, edit as a new version, history, an old version).

Readers are the panel's members, its supervisors and admins; another panel's guidelines do not
exist for anyone else (404). Authors are shown only to those who may write them.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from guidelines import selectors, services
from guidelines.forms import ExampleFormSet, GuidelineForm, example_initial, examples_from
from guidelines.models import Guideline
from panels.access import allowed, get_object_for
from panels.models import Panel
from taxonomy.models import Criterion


def _readable_panel(request: HttpRequest, pk: int) -> Panel:
    return get_object_for(
        request.user, "guidelines.read_panel", Panel, role="guidelines.view_guidelines", pk=pk
    )


def _editable_panel(request: HttpRequest, pk: int) -> Panel:
    return get_object_for(
        request.user, "guidelines.edit_panel", Panel, role="panels.view_console", pk=pk
    )


def _criterion(key: str | None) -> Criterion | None:
    """The criterion named by `?criterion=<key>`; None for the panel-wide guideline."""
    key = (key or "").strip()
    if not key:
        return None
    criterion = Criterion.objects.filter(key=key).first()
    if criterion is None:
        raise Http404
    return criterion


@login_required
@require_GET
def panel_page(request: HttpRequest, pk: int) -> HttpResponse:
    panel = _readable_panel(request, pk)
    try:
        focus = _criterion(request.GET.get("criterion"))
    except Http404:
        focus = None  # an unknown criterion in a link: the whole panel's guidelines
    editor = allowed(request.user, "guidelines.edit_panel", panel)
    return render(
        request,
        "guidelines/panel.html",
        {
            "panel": panel,
            "guidelines": selectors.panel_guidelines(panel, focus),
            "focus": focus,
            "editor": editor,
        },
    )


@login_required
@require_GET
def manage_page(request: HttpRequest, pk: int) -> HttpResponse:
    panel = _editable_panel(request, pk)
    panel_wide, rows = selectors.manage_rows(panel)
    return render(
        request,
        "guidelines/manage.html",
        {"panel": panel, "panel_wide": panel_wide, "rows": rows},
    )


@login_required
@require_http_methods(["GET", "POST"])
def edit_page(request: HttpRequest, pk: int) -> HttpResponse:
    panel = _editable_panel(request, pk)
    criterion = _criterion(request.GET.get("criterion"))
    guideline = (
        Guideline.objects.filter(panel=panel, criterion=criterion).select_related("current").first()
    )
    current = guideline.current if guideline else None
    if request.method == "POST":
        form = GuidelineForm(request.POST)
        examples = ExampleFormSet(request.POST, prefix="ex")
        if form.is_valid() and examples.is_valid():
            version, made = services.guideline_save(
                panel=panel,
                criterion=criterion,
                body=form.cleaned_data["body"],
                hard_cases=form.cleaned_data["hard_cases"],
                examples=examples_from(examples),
                change_note=form.cleaned_data["change_note"],
                user=request.user,
            )
            if made:
                messages.success(
                    request, _("Version %(n)s of the guideline saved.") % {"n": version.number}
                )
            else:
                messages.info(request, _("Nothing changed: no new version was made."))
            return redirect("guidelines_manage", pk=panel.pk)
        status = 400
    else:
        form = GuidelineForm(
            initial={"body": current.body, "hard_cases": current.hard_cases} if current else None
        )
        examples = ExampleFormSet(prefix="ex", initial=example_initial(current))
        status = 200
    action = reverse("guidelines_edit", args=[panel.pk])
    if criterion is not None:
        action += "?" + request.GET.urlencode()
    return render(
        request,
        "guidelines/edit.html",
        {
            "panel": panel,
            "criterion": criterion,
            "guideline": guideline,
            "current": current,
            "form": form,
            "examples": examples,
            "action": action,
        },
        status=status,
    )


@login_required
@require_GET
def history_page(request: HttpRequest, pk: int, guideline_id: int) -> HttpResponse:
    panel = _editable_panel(request, pk)
    guideline = (
        Guideline.objects.filter(pk=guideline_id, panel=panel).select_related("criterion").first()
    )
    if guideline is None:
        raise Http404
    return render(
        request,
        "guidelines/history.html",
        {
            "panel": panel,
            "guideline": guideline,
            "versions": selectors.guideline_versions(guideline),
        },
    )


@login_required
@require_GET
def version_page(request: HttpRequest, pk: int, version_id: int) -> HttpResponse:
    panel = _editable_panel(request, pk)
    version = selectors.version_with_examples(version_id, panel)
    if version is None:
        raise Http404
    return render(
        request,
        "guidelines/version.html",
        {"panel": panel, "guideline": version.guideline, "version": version},
    )
