"""The rankings page (admins and supervisors who are not experts) and its recompute action
(admins). The rankings are computed by a job and stored; the page shows the latest one."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from comparison import services
from comparison.models import ALL_CRITERIA, Ranking
from comparison.svg import Point, interval_svg
from jobs.models import Job, JobStatus
from panels.access import allowed, require
from taxonomy.models import ComparisonCriterion

SYSTEM_NAMES = {
    "elo": "Elo",
    "bradley_terry": "Bradley–Terry",
    "glicko2": "Glicko-2",
}
# The form's fields beyond the criterion: (name, label), in RankingParams' terms.
FORM_FIELDS = [
    ("rounds", gettext_lazy("Bootstrap rounds (0: none)")),
    ("seed", gettext_lazy("Seed")),
    ("both_good", gettext_lazy("Score of “both good” for A")),
    ("both_bad", gettext_lazy("Score of “both bad” for A")),
    ("elo_initial", gettext_lazy("Elo: initial rating")),
    ("elo_k", gettext_lazy("Elo: K")),
    ("elo_scale", gettext_lazy("Elo: scale")),
    ("elo_base", gettext_lazy("Elo: base")),
    ("bt_iterations", gettext_lazy("Bradley–Terry: MM iterations")),
    ("glicko_rating", gettext_lazy("Glicko-2: initial rating")),
    ("glicko_rd", gettext_lazy("Glicko-2: initial RD")),
    ("glicko_volatility", gettext_lazy("Glicko-2: volatility σ")),
    ("glicko_tau", gettext_lazy("Glicko-2: τ")),
]


def _criteria_names() -> dict[str, str]:
    names: dict[str, str] = {}
    for criterion in ComparisonCriterion.objects.order_by("position", "key"):
        names.setdefault(criterion.key, criterion.name)
    return names


def _criterion_views(ranking: Ranking, names: dict[str, str]) -> list[dict[str, Any]]:
    """The stored result laid out for the template: names, and an SVG per system."""
    out = []
    for item in ranking.result.get("criteria", []):
        models = item["models"]
        plots = []
        for system, title in SYSTEM_NAMES.items():
            ordered = sorted(models, key=lambda m, s=system: m[s]["rank"])  # type: ignore[misc]
            points = [
                Point(m["name"], m[system]["mean"], m[system]["low"], m[system]["high"])
                for m in ordered
            ]
            plots.append(interval_svg(points, title))
        out.append({**item, "name": names.get(item["key"], item["key"]), "plots": plots})
    return out


def _page(
    request: HttpRequest,
    *,
    values: dict[str, Any] | None = None,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    job: Job | None = services.latest_job()
    context: dict[str, Any] = {
        "job": job,
        "job_active": job is not None and job.status in (JobStatus.QUEUED, JobStatus.RUNNING),
    }
    if getattr(request, "htmx", False):
        # The progress poll reads the job row only.
        return render(request, "comparison/rankings.html#progress", context)
    names = _criteria_names()
    ranking = services.latest_ranking()
    defaults = services.RankingParams().as_dict()
    shown = {**defaults, **(values or {})}
    context.update(
        {
            "ranking": ranking,
            "criteria": _criterion_views(ranking, names) if ranking else [],
            "excluded": sorted((ranking.result.get("excluded") or {}).items()) if ranking else [],
            "may_compute": allowed(request.user, "comparison.compute_rankings"),
            "criterion_choices": [(ALL_CRITERIA, _("every criterion")), *names.items()],
            "criterion_value": shown["criterion"],
            "fields": [(name, label, shown[name]) for name, label in FORM_FIELDS],
            "error": error,
        }
    )
    return render(request, "comparison/rankings.html", context, status=status)


@login_required
@require_GET
def rankings_page(request: HttpRequest) -> HttpResponse:
    require(request.user, "comparison.view_rankings")
    return _page(request)


@login_required
@require_POST
def rankings_recompute(request: HttpRequest) -> HttpResponse:
    """Queue a computation with the posted parameters (absent ones take their defaults)."""
    require(request.user, "comparison.compute_rankings")
    names = {"criterion", *(name for name, _label in FORM_FIELDS)}
    data = {name: request.POST[name] for name in names if name in request.POST}
    try:
        _job, queued = services.rankings_request(data=data, user=request.user)
    except services.ParamsError as exc:
        return _page(request, values=data, error=str(exc), status=400)
    if queued:
        messages.info(request, _("The rankings are being computed; the page shows the progress."))
    else:
        messages.info(request, _("The rankings are already being computed."))
    return redirect("comparison_rankings")
