"""Pages of answer generation (admins): configurations, runs with progress, cancel and
resume, and each run's outputs with the failed and truncated ones marked."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from generation import services
from generation.models import Backend, Generation, GenerationConfig, GenerationRun
from lib.integers import StrictIntegerFormField, ascii_int
from lib.numbers import decimal_number
from panels.access import require
from taxonomy.models import Task

NUMBERS = {
    "temperature": float,
    "top_p": float,
    "top_k": int,
    "max_new_tokens": int,
    "batch_size": int,
}


# The largest id a database keeps (a bigint). A larger one typed into the page reached the
# database: SQLite's driver cannot bind it (OverflowError, a 500), PostgreSQL compares it as a
# numeric and finds nothing.
ID_MAX = 2**63 - 1
# A run's "at most": far above any catalogue, below anything that is only a typo.
LIMIT_MAX = 10_000_000


def _integer(raw: str, field: str, message: str, *, high: int) -> int:
    """The page's integer `raw`: ASCII digits from 1 to `high` (StrictIntegerFormField, which
    never calls int() on Unicode digits or thousands of them), else GenerationError(message)
    naming the field."""
    try:
        value = StrictIntegerFormField(min_value=1, max_value=high).clean(raw)
    except forms.ValidationError:
        raise services.GenerationError(message, field) from None
    assert value is not None  # required: an empty value is refused above
    return int(value)


def _refused(request: HttpRequest, exc: services.GenerationError) -> HttpResponse:
    return render(
        request,
        "refused.html",
        {"message": str(exc), "field": exc.field, "back": reverse("generation_runs")},
        status=exc.status,
    )


def _run(request: HttpRequest, pk: int) -> GenerationRun:
    require(request.user, "generation.view_runs")
    run = GenerationRun.objects.select_related("config", "config__model").filter(pk=pk).first()
    if run is None:
        raise Http404
    return run


@login_required
@require_GET
def runs(request: HttpRequest) -> HttpResponse:
    require(request.user, "generation.view_runs")
    configs = list(GenerationConfig.objects.select_related("model").prefetch_related("task_groups"))
    latest: dict[str, GenerationConfig] = {}
    for config in configs:
        latest.setdefault(config.name, config)
    return render(
        request,
        "generation/runs.html",
        {
            "configs": list(latest.values()),
            "runs": GenerationRun.objects.select_related("config", "config__model")[:100],
            "groups": Task.objects.filter(level=0).select_related("group").order_by("position"),
            "backends": Backend.choices,
        },
    )


def _number(name: str, raw: str) -> Any:
    """A sampling setting as typed: ASCII digits for a whole number (int() would read "١٢"),
    a decimal comma or point for a fraction (lib.numbers)."""
    if raw.strip() == "":
        return None
    value: Any = ascii_int(raw) if NUMBERS[name] is int else decimal_number(raw)
    if value is None:
        raise services.GenerationError(_("must be a number"), name)
    return value


@login_required
@require_POST
def config_create(request: HttpRequest) -> HttpResponse:
    require(request.user, "generation.manage_runs")
    post = request.POST
    try:
        fields: dict[str, Any] = {
            name: _number(name, post.get(name, "")) for name in NUMBERS if post.get(name)
        }
        seed = post.get("seed", "").strip()
        if seed:
            number = ascii_int(seed)
            if number is None:
                raise services.GenerationError(_("a whole number from 0"), "seed")
            fields["seed"] = number
        groups = [
            _integer(raw, "task_groups", _("unknown task group"), high=ID_MAX)
            for raw in post.getlist("task_groups")
        ]
        services.config_save(
            name=post.get("name", ""),
            model_name=post.get("model_name", ""),
            model_version=post.get("model_version", ""),
            task_groups=groups,
            created_by=request.user,
            backend=post.get("backend", ""),
            model_path=post.get("model_path", "").strip(),
            endpoint=post.get("endpoint", "").strip(),
            endpoint_model=post.get("endpoint_model", "").strip(),
            api_key_env=post.get("api_key_env", "").strip(),
            system_prompt=post.get("system_prompt", ""),
            **fields,
        )
    except services.GenerationError as exc:
        return _refused(request, exc)
    return redirect("generation_runs")


@login_required
@require_POST
def run_create(request: HttpRequest) -> HttpResponse:
    require(request.user, "generation.manage_runs")
    post = request.POST
    try:
        ids = [
            _integer(raw, "config", _("unknown configuration"), high=ID_MAX)
            for raw in post.getlist("config")
        ]
        configs = list(GenerationConfig.objects.filter(pk__in=ids))
        if not configs or len(configs) != len(set(ids)):
            raise services.GenerationError(_("choose configurations"), "config")
        scope: dict[str, Any] = {
            "group": "",
            "source": post.get("source", ""),
            "authored": post.get("authored", ""),
            "all": post.get("all", ""),
            "limit": "",
        }
        if group := post.get("group", "").strip():
            scope["group"] = _integer(group, "group", _("unknown task group"), high=ID_MAX)
        if limit := post.get("limit", "").strip():
            between = _("must be between %(low)s and %(high)s") % {"low": 1, "high": LIMIT_MAX}
            scope["limit"] = _integer(limit, "limit", between, high=LIMIT_MAX)
    except services.GenerationError as exc:
        return _refused(request, exc)
    made = []
    try:
        for config in configs:
            made.append(services.run_create(config=config, scope=scope, created_by=request.user))
    except services.GenerationError as exc:
        return _refused(request, exc)
    messages.success(request, _("%d runs started.") % len(made))
    return redirect("generation_run", made[0].pk) if len(made) == 1 else redirect("generation_runs")


@login_required
@require_GET
def run_page(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(request, pk)
    outcome = request.GET.get("outcome", "")
    outputs = Generation.objects.filter(run=run).select_related("instruction").order_by("pk")
    if outcome in Generation.Outcome.values:
        outputs = outputs.filter(outcome=outcome)
    return render(
        request,
        "generation/run.html",
        {
            "run": run,
            "outputs": outputs[:200],
            "outcome": outcome,
            "outcomes": Generation.Outcome.choices,
            "batches": run.batches.select_related("job").order_by("number")[:500],
        },
    )


@login_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(request, pk)
    require(request.user, "generation.manage_runs")
    services.run_cancel(run=run)
    return redirect("generation_run", pk)


@login_required
@require_POST
def run_resume(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(request, pk)
    require(request.user, "generation.manage_runs")
    services.run_resume(run=run)
    return redirect("generation_run", pk)
