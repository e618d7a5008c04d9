"""The pages of the algorithmic markup contest (markup.contest): the leaderboard by СТАР per
sample, and a participant's own runs with their reports."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from markup import contest
from markup.models import MarkupRun, MarkupSample
from panels.access import require


@login_required
@require_GET
def leaderboard(request: HttpRequest) -> HttpResponse:
    require(request.user, "markup.view_leaderboard")
    boards = [
        (sample, contest.leaderboard(sample)) for sample in MarkupSample.objects.order_by("name")
    ]
    return render(request, "markup/leaderboard.html", {"boards": boards})


@login_required
@require_GET
def my_runs(request: HttpRequest) -> HttpResponse:
    require(request.user, "markup.participate")
    runs = MarkupRun.objects.filter(participant__user_id=int(request.user.pk or 0)).select_related(
        "sample"
    )
    reports = [contest.run_report(run) for run in runs]
    return render(request, "markup/my_runs.html", {"reports": reports})
