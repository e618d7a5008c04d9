"""The supervisor's queue of skipped and flagged answers of one panel (work.flags)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from panels.access import get_object_for
from panels.models import Panel
from work import flags as work_flags
from work.models import Flag, FlagResolution


def _panel(request: HttpRequest, pk: int) -> Panel:
    # The console's panel rule: 403 for non-console users, 404 for another panel.
    return get_object_for(
        request.user, "panels.manage_panel", Panel, role="panels.view_console", pk=pk
    )


def _render(
    request: HttpRequest, panel: Panel, *, errors: dict[int, str] | None = None, status: int = 200
) -> HttpResponse:
    resolved = request.GET.get("state") == "resolved"
    page = Paginator(work_flags.panel_flags(panel, resolved=resolved), 50).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "console/flags.html",
        {
            "panel": panel,
            "page": page,
            "resolved": resolved,
            "resolutions": FlagResolution.choices,
            "errors": errors or {},
        },
        status=status,
    )


@login_required
@require_GET
def flags_page(request: HttpRequest, pk: int) -> HttpResponse:
    return _render(request, _panel(request, pk))


@login_required
@require_POST
def flag_resolve(request: HttpRequest, pk: int, flag_id: int) -> HttpResponse:
    panel = _panel(request, pk)
    # A flag of another panel does not exist for this panel's supervisor.
    flag = Flag.objects.filter(pk=flag_id, assignment__panel=panel).first()
    if flag is None:
        raise Http404
    try:
        work_flags.flag_resolve(
            flag=flag,
            user=request.user,
            resolution=request.POST.get("resolution", ""),
            note=request.POST.get("note", ""),
        )
    except work_flags.FlagRefused as exc:
        return _render(request, panel, errors={flag.pk: f"{exc.field}: {exc}"}, status=400)
    messages.success(request, _("Flag resolved."))
    return redirect("console_flags", pk=panel.pk)
