"""The rankings page (admins and supervisors who are not experts), its recompute action
(admins) and its downloads. The rankings are computed by a job and stored; the page shows the
latest one of the experts' labels and, beside it, the latest one of each judge run's labels
with their rank correlations (comparison.tables). The downloads are built in the request."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from comparison import services, tables
from comparison.models import ALL_CRITERIA, Ranking
from comparison.svg import Point, interval_svg
from jobs.models import Job, JobStatus
from lib.arrow import parquet_zip_bytes
from lib.xlsx import workbook_bytes
from panels.access import allowed, require
from panels.models import Panel
from taxonomy.models import ComparisonCriterion

SYSTEM_NAMES = {
    "elo": "Elo",
    "bradley_terry": "Bradley–Terry",
    "glicko2": "Glicko-2",
}
CORRELATED_NAMES = {**SYSTEM_NAMES, tables.BORDA: "Borda"}
DOWNLOADS = {
    "xlsx": ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx"),
    "parquet": ("application/zip", "parquet.zip"),
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


def _judge_views(
    human: Ranking | None, judges: list[Ranking], names: dict[str, str], criteria: dict[str, str]
) -> list[dict[str, Any]]:
    """Each judge ranking beside the experts': per criterion, every model's rank in each
    system by the experts and by the judge, and the rank correlations."""
    mine = tables.criteria_of(human) if human is not None else {}
    out = []
    for judge in judges:
        correlations = {
            item["key"]: item["systems"]
            for item in (tables.rank_correlations(human, judge) if human is not None else [])
        }
        sections = []
        for key, item in tables.criteria_of(judge).items():
            ours = {m["model"]: m for m in mine.get(key, {}).get("models", [])}
            rows = []
            for model in item["models"]:
                expert = ours.get(model["model"])
                rows.append(
                    {
                        "name": model["name"],
                        "ranks": [
                            (
                                expert[system]["rank"] if expert else None,
                                model[system]["rank"],
                            )
                            for system in SYSTEM_NAMES
                        ]
                        + [(expert["borda_rank"] if expert else None, model["borda_rank"])],
                    }
                )
            sections.append(
                {
                    "key": key,
                    "name": criteria.get(key, key),
                    "n_battles": item["n_battles"],
                    "excluded": item.get("excluded") or {},
                    "rows": rows,
                    "correlations": [
                        {**c, "title": CORRELATED_NAMES[c["system"]]}
                        for c in correlations.get(key, [])
                    ],
                }
            )
        out.append(
            {
                "ranking": judge,
                "name": names.get(judge.source, judge.source),
                "excluded": sorted((judge.result.get("excluded") or {}).items()),
                "criteria": sections,
            }
        )
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
    judges = services.latest_judge_rankings()
    sources = services.source_names()
    defaults = services.RankingParams().as_dict()
    shown = {**defaults, **(values or {})}
    context.update(
        {
            "ranking": ranking,
            "judges": _judge_views(ranking, judges, sources, names),
            "source_choices": list(sources.items()),
            "source_value": shown["source"],
            "system_titles": [*SYSTEM_NAMES.values(), "Borda"],
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
    names = {"criterion", "source", *(name for name, _label in FORM_FIELDS)}
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


def _visible_panels(user: Any) -> list[Panel]:
    return [
        panel
        for panel in Panel.objects.order_by("number")
        if allowed(user, "comparison.view_panel_agreement", panel)
    ]


@login_required
@require_GET
def rankings_download(request: HttpRequest, fmt: str) -> HttpResponse:
    """The latest rankings, rank correlations and the agreement of the panels the user may see,
    as .xlsx or as a .zip of Parquet files (comparison.tables)."""
    require(request.user, "comparison.view_rankings")
    if fmt not in DOWNLOADS:
        raise Http404
    content_type, extension = DOWNLOADS[fmt]
    data = tables.download_tables(_visible_panels(request.user))
    body = workbook_bytes(data, tables.README) if fmt == "xlsx" else parquet_zip_bytes(data)
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="model-rankings.{extension}"'
    return response
