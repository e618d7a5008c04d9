"""The data browser (answers, triples, instructions and experts' work with search and filters),
its bulk actions on a selection of work, and the pickers that replace raw-id inputs in the
console's forms. Reads are in console/browser.py, the bulk actions in console/bulk.py; the rules
in console/rules.py and panels/rules.py."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST

from console import browser, bulk
from material.models import LanguageModel
from panels import selectors as panel_selectors
from panels.access import allowed, check_object, get_object_for, require
from panels.models import Panel
from taxonomy.models import Complexity, FunctionalStyle, Task
from work.models import AssignmentStatus

# The names a picker's input may carry (htmx sends the input's own name): the form fields the
# console's POST handlers expect, kept unchanged.
PICKER_FIELDS = ("q", "answer", "references", "triple", "task")


@login_required
@require_GET
def data_browser(request: HttpRequest) -> HttpResponse:
    require(request.user, "panels.view_console")
    return _browse(request, request.GET)


def _browse(request: HttpRequest, query: QueryDict, bulk_error: str = "") -> HttpResponse:
    """The browser's page for the filters in `query` (a bulk action's refusal shown above its
    table, answered 400)."""
    models_visible = allowed(request.user, "console.view_answer_model")
    panels = panel_selectors.panels_for_user(request.user)
    try:
        filters = browser.parse_filters(query, models_visible=models_visible)
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
        "assignments": browser.browse_assignments,
    }.get(filters.kind, browser.browse_answers)
    page = browse(filters, panel_ids=panel_ids, viewer=request.user)
    params = query.copy()
    params.pop("before", None)
    base_query = params.urlencode()
    if page.next_before is not None:
        params["before"] = str(page.next_before)
    queries = {
        "first_query": base_query,
        "next_query": params.urlencode() if page.next_before is not None else "",
        # Where a bulk action comes back to: this very page.
        "this_query": query.urlencode(),
    }
    extra: dict[str, Any] = {}
    if filters.kind == "assignments":
        extra = {
            "bulk_actions": list(bulk.ACTIONS.items()),
            # Who may take reassigned work: the experts of the panels on the page (None: an
            # admin browsing every panel).
            "bulk_experts": bulk.panel_experts(
                panel_ids if panel_ids is not None else Panel.objects.values_list("pk", flat=True)
            ),
            "bulk_error": bulk_error,
        }
    return _render(
        request, panels, filters, page, models_visible, "", queries | extra, bulk_error=bulk_error
    )


def _render(
    request: HttpRequest,
    panels: Any,
    filters: browser.Filters,
    page: browser.Page | None,
    models_visible: bool,
    error: str,
    queries: dict[str, Any],
    bulk_error: str = "",
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
            "work_statuses": AssignmentStatus.choices,
            "language_models": LanguageModel.objects.order_by("name", "version")
            if models_visible
            else [],
            **queries,
        },
        status=400 if error or bulk_error else 200,
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


@login_required
@require_POST
def bulk_action(request: HttpRequest) -> HttpResponse:
    """A bulk action on the assignments selected in the browser (console.bulk), then back to the
    same browser page with what moved and why each refused row did not.

    Every selected row is checked before anything is written: an id that does not exist or
    belongs to a panel the user does not supervise is a 404 and nothing changes.
    """
    require(request.user, "panels.view_console")
    back = QueryDict(str(request.POST.get("back", ""))[:2000])
    try:
        data = bulk.parse_input(request.POST)
    except bulk.BulkInputError as exc:
        return _browse(request, back, bulk_error=str(exc))
    rows = bulk.selection(data.ids)
    if len(rows) != len(data.ids):
        raise Http404
    for row in {a.panel_id: a for a in rows}.values():
        check_object(request.user, "console.act_on_work", row, role="panels.view_console")
    try:
        result = bulk.bulk_apply(data=data, assignments=rows, user=request.user)
    except bulk.BulkInputError as exc:
        return _browse(request, back, bulk_error=str(exc))
    _report(request, result)
    return redirect(reverse("console_browser") + "?" + back.urlencode())


def _report(request: HttpRequest, result: bulk.BulkResult) -> None:
    n = result.done
    if result.action == bulk.REASSIGN:
        done = ngettext(
            "%(n)d assignment moved to %(expert)s.",
            "%(n)d assignments moved to %(expert)s.",
            n,
        ) % {"n": n, "expert": result.target}
    elif result.action == bulk.REOPEN:
        done = ngettext(
            "%(n)d assignment sent back to its expert for rework.",
            "%(n)d assignments sent back to their experts for rework.",
            n,
        ) % {"n": n}
    else:
        done = ngettext(
            "%(n)d assignment sent to the review queue.",
            "%(n)d assignments sent to the review queue.",
            n,
        ) % {"n": n}
    (messages.success if n else messages.info)(request, done)
    if result.refused:
        m = len(result.refused)
        messages.warning(
            request,
            ngettext("%(n)d row was left as it was:", "%(n)d rows were left as they were:", m)
            % {"n": m},
        )
        for refusal in result.refused:
            messages.warning(
                request,
                _("Assignment #%(id)d: %(reason)s")
                % {"id": refusal.assignment_id, "reason": refusal.reason},
            )
