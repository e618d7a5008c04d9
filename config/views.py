from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.contrib.staticfiles import finders
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET

from panels.access import allowed


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Send each role to where its work is."""
    user = request.user
    if allowed(user, "work.view_queue"):
        return redirect("queue")
    if allowed(user, "panels.view_console"):
        return redirect("console")
    if allowed(user, "markup.participate"):
        # A participant's work is his models' submissions (the markup runs are linked there).
        return redirect("submissions")
    if user.is_staff:
        return redirect("admin:index")
    # No role (yet): what everyone may read.
    return redirect("leaderboards")


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for on every site whatever the page links to.

    Served from the static files (finders in development, the collected copy in production)
    rather than redirected, so the answer is one 200 that may be cached for a day.
    """
    path = finders.find("favicon.ico")
    if not path:
        raise Http404
    with open(path, "rb") as icon:
        response = HttpResponse(icon.read(), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response
