"""A board's versions: the list with each changelog (readers of the board), and cutting a new
version (admins). Thin: leaderboards.versions holds the rules."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from leaderboards import services, versions
from leaderboards.models import Leaderboard
from leaderboards.views import _board_for
from panels.access import allowed, require


class CutForm(forms.Form):
    note = forms.CharField(
        label=gettext_lazy("Note (what and why, shown with the changelog)"),
        max_length=2000,
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
    )
    closed = forms.BooleanField(
        label=gettext_lazy("Closed test"),
        required=False,
        help_text=gettext_lazy(
            "Its inputs are never downloadable: participants give their model's endpoint and "
            "the platform generates the answers itself."
        ),
    )


def _page(
    request: HttpRequest, board: Leaderboard, form: CutForm | None = None, status: int = 200
) -> HttpResponse:
    manage = allowed(request.user, "leaderboards.manage_leaderboards")
    listed = list(
        board.versions.select_related("judge_config", "created_by")
        .annotate(n_items=Count("items"))
        .order_by("-number")
    )
    for version in listed:
        version.rules_shown = versions.rules_shown(  # type: ignore[attr-defined]
            version.changelog.get("rules", [])
        )
        # A closed test's inputs are the admins' only.
        version.inputs_allowed = allowed(  # type: ignore[attr-defined]
            request.user, "submissions.download_version_inputs", version
        )
    context = {
        "board": board,
        "manage": manage,
        "versions": listed,
    }
    if manage:
        latest = versions.version_latest(board)
        # The preview keeps the latest version's closedness (the form's default).
        closed = bool(latest and latest.closed)
        log = versions.changelog_of(latest, versions.draft_of(board, closed=closed))
        context.update(
            draft_log=log,
            draft_rules=versions.rules_shown(log["rules"]),
            draft_empty=latest is not None and versions.changelog_empty(log),
            next_number=(latest.number + 1) if latest else 1,
            cut_form=form or CutForm(initial={"closed": closed}),
        )
    return render(request, "leaderboards/versions.html", context, status=status)


@require_GET
def versions_page(request: HttpRequest, slug: str) -> HttpResponse:
    found = _board_for(request, slug)
    if isinstance(found, HttpResponse):
        return found
    return _page(request, found)


@login_required
@require_POST
def version_cut(request: HttpRequest, slug: str) -> HttpResponse:
    require(request.user, "leaderboards.manage_leaderboards")
    board = get_object_or_404(Leaderboard, slug=slug)
    form = CutForm(request.POST)
    if not form.is_valid():
        return _page(request, board, form, status=400)
    try:
        version = versions.version_cut(
            board,
            actor=request.user,
            note=form.cleaned_data["note"],
            closed=form.cleaned_data["closed"],
        )
    except versions.NothingToCut as exc:
        return HttpResponse(str(exc), status=409, content_type="text/plain; charset=utf-8")
    services.snapshot_queue(board, request.user, version=version)
    text = _("Version v%(n)s is cut; its leaderboard is being computed.")
    messages.success(request, text % {"n": version.number})
    return redirect("leaderboard_versions", slug=board.slug)
