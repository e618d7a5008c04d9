from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from panels import selectors


@login_required
def console(request: HttpRequest) -> HttpResponse:
    if not request.user.has_perm("panels.view_console"):
        raise PermissionDenied
    panels = selectors.panels_for_user(request.user)
    return render(request, "panels/console.html", {"panels": selectors.panel_progress(panels)})
