"""The data browser (answers and triples with search and filters) and the pickers that replace
raw-id inputs in the console's forms. Reads are in console/browser.py; the rules in
console/rules.py and panels/rules.py."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from console import browser
from material.models import LanguageModel
from panels import selectors as panel_selectors
from panels.access import allowed, get_object_for, require
from panels.models import Panel
from taxonomy.models import Complexity, FunctionalStyle, Task

# The names a picker's input may carry (htmx sends the input's own name): the form fields the
# console's POST handlers expect, kept unchanged.
PICKER_FIELDS = ("q", "answer", "references", "triple", "task")


@login_required
@require_GET
def data_browser(request: HttpRequest) -> HttpResponse:
    require(request.user, "panels.view_console")
    models_visible = allowed(request.user, "console.view_answer_model")
    panels = panel_selectors.panels_for_user(request.user)
    try:
        filters = browser.parse_filters(request.GET, models_visible=models_visible)
    except browser.FilterError as exc:
        # The page with the reason where the results would be (the typed text stays in the
        # form), not a bare error page.
        return _render(request, panels, browser.Filters(), None, models_visible, str(exc), {})
    panel_ids: list[int] | None
    if filters.panel is not None:
        # Another panel does not exist for a supervisor: 404, as everywhere in the console.
        panel = get_object_for(request.user, "panels.manage_panel", Panel, pk=filters.panel)
        panel_ids = [panel.pk]
    elif allowed(request.user, "console.browse_all_panels"):
        panel_ids = None
    else:
        panel_ids = list(panels.values_list("pk", flat=True))
    browse = {
        "triples": browser.browse_triples,
        "instructions": browser.browse_instructions,
    }.get(filters.kind, browser.browse_answers)
    page = browse(filters, panel_ids=panel_ids, viewer=request.user)
    params = request.GET.copy()
    params.pop("before", None)
    base_query = params.urlencode()
    if page.next_before is not None:
        params["before"] = str(page.next_before)
    queries = {
        "first_query": base_query,
        "next_query": params.urlencode() if page.next_before is not None else "",
    }
    return _render(request, panels, filters, page, models_visible, "", queries)


def _render(
    request: HttpRequest,
    panels: Any,
    filters: browser.Filters,
    page: browser.Page | None,
    models_visible: bool,
    error: str,
    queries: dict[str, str],
) -> HttpResponse:
    return render(
        request,
        "console/browser.html",
        {
            "page": page,
            "f": filters,
            "filter_error": error,
            "panels": panels.order_by("number"),
            "tasks": Task.objects.filter(is_leaf=True)
            .select_related("group", "parent__parent")
            .order_by("position"),
            "styles": FunctionalStyle.objects.order_by("name_en"),
            "complexities": Complexity.choices,
            "statuses": _statuses(),
            "reasons": browser.EXCLUSION_REASONS,
            "models_visible": models_visible,
            "language_models": LanguageModel.objects.order_by("name", "version")
            if models_visible
            else [],
            **queries,
        },
        status=400 if error else 200,
    )


def _statuses() -> list[tuple[str, str]]:
    labels = {
        "open": _("open (estimates pending)"),
        "in_dataset": _("in the dataset"),
        "excluded": _("excluded"),
        "no_verdict": _("no verdict yet"),
    }
    return [(s, labels[s]) for s in browser.STATUSES]


@login_required
@require_GET
def picker(request: HttpRequest, pk: int, what: str) -> HttpResponse:
    """`<option>`s of the panel's answers, triples or tasks matching the typed text, for the
    `<datalist>` of a picker input (htmx swaps them in as the user types)."""
    panel = get_object_for(
        request.user, "panels.manage_panel", Panel, role="panels.view_console", pk=pk
    )
    q = next((str(request.GET[n]) for n in PICKER_FIELDS if request.GET.get(n)), "")
    # The labels and the search by external id follow the viewer's sight of models.
    models_visible = allowed(request.user, "console.view_answer_model")
    if what == "answers":
        options = browser.pick_answers(panel.pk, q, models_visible=models_visible)
    elif what == "triples":
        options = browser.pick_triples(panel.pk, q, models_visible=models_visible)
    elif what == "tasks":
        options = browser.pick_tasks(q)
    else:
        raise Http404
    return render(request, "console/_picker_options.html", {"options": options})
