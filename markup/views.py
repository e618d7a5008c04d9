"""The span markup pages (admins and supervisors who are not experts, markup.rules): the texts
with their markups, and two markups of one text side by side, each showing only what
markup.rules lets the viewer read (his panels' texts and submitted markups)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from lib.integers import ascii_int
from markup import selectors
from markup.models import Markup, MarkupText
from markup.rules import visible_markups, visible_texts
from markup.work import divergence_threshold
from panels.access import allowed, get_object_for, require
from panels.models import Panel
from panels.rules import is_admin


@login_required
@require_GET
def text_list(request: HttpRequest) -> HttpResponse:
    require(request.user, "markup.view_markups")
    user = request.user
    # The assignment form lists the panels this user may assign work in (panels.manage_panel).
    panels = Panel.objects.all() if is_admin(user) else Panel.objects.filter(supervisors=user.pk)
    page = Paginator(visible_texts(user).order_by("external_id"), 20).get_page(
        request.GET.get("page")
    )
    context = {
        "page": page,
        "rows": selectors.text_rows(page.object_list, markups=visible_markups(user)),
        "panels": panels.order_by("number"),
        "threshold": divergence_threshold(),
        "can_transfer": allowed(user, "markup.export_markups"),
    }
    return render(request, "markup/texts.html", context)


def _markup_id(request: HttpRequest, name: str) -> int | None:
    raw = request.GET.get(name, "")
    if not raw:
        return None
    number = ascii_int(raw)
    if number is None:
        raise Http404
    return number


@login_required
@require_GET
def text_compare(request: HttpRequest, pk: int) -> HttpResponse:
    """Markups `x` and `y` of the text (default: its first two)."""
    require(request.user, "markup.view_markups")
    text = get_object_for(request.user, "markup.view_text", MarkupText, pk=pk)
    # Another panel's markup, a draft or a system's is not found, as if it did not exist.
    markups = list(visible_markups(request.user).filter(text=text).order_by("pk"))
    by_id = {m.pk: m for m in markups}
    chosen: list[Markup | None] = []
    for name, default in (("x", 0), ("y", 1)):
        markup_id = _markup_id(request, name)
        if markup_id is None:
            if len(markups) <= default:
                chosen.append(None)
                continue
            chosen.append(markups[default])
        elif markup_id in by_id:
            chosen.append(by_id[markup_id])
        else:
            raise Http404
    context: dict[str, object] = {"text": text, "markups": markups}
    x, y = chosen
    if x is not None and y is not None:
        context.update(selectors.comparison(text, x, y))
    context["choices"] = [(m.pk, selectors.markup_label(m)) for m in markups]
    return render(request, "markup/compare.html", context)
