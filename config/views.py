from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Send each role to where its work is."""
    user = request.user
    if hasattr(user, "expert"):
        return redirect("queue")
    if user.has_perm("panels.view_console"):
        return redirect("console")
    return redirect("admin:index")


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})
