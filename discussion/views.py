"""The thread pages: an item's thread (a page, or the htmx fragment the work pages hold), posting
a comment, resolving a thread, and the list of one's threads.

Access is checked first in every view, through panels.access: the role (`discussion.view_threads`,
a 403) and the item (`discussion.comment`, a 404 as if it did not exist; discussion.rules).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from discussion import selectors, services
from discussion.models import Thread
from discussion.rules import owns_item
from discussion.services import Item
from markup.models import Markup
from panels.access import allowed, get_object_for, require
from panels.rules import is_admin
from work import kinds
from work.models import Assignment

ROLE = "discussion.view_threads"


def _assignment(request: HttpRequest, pk: int) -> Assignment:
    return get_object_for(
        request.user,
        "discussion.comment",
        Assignment.objects.select_related("expert", "panel"),
        role=ROLE,
        pk=pk,
    )


def _markup(request: HttpRequest, pk: int) -> Markup:
    # A markup of a panel's expert (an imported one, or a participant system's, has no thread).
    markups = Markup.objects.select_related("expert", "panel").filter(
        panel__isnull=False, expert__isnull=False
    )
    return get_object_for(request.user, "discussion.comment", markups, role=ROLE, pk=pk)


def _back_url(request: HttpRequest, item: Item) -> str:
    """Where the item's work is, for this viewer: the expert's own page of it, or the panel's
    review page of a rubric answer."""
    own = owns_item(request.user, item)
    if isinstance(item, Markup):
        return reverse("markup_work_page", args=[item.pk]) if own else ""
    if own:
        return reverse("assignment", args=[item.pk])
    if kinds.kind_of(item) == kinds.POINTWISE:
        return reverse("console_answer_review", args=[item.panel_id, item.answer_id])
    return ""


def _render(
    request: HttpRequest, item: Item, box: selectors.Box, status: int = 200
) -> HttpResponse:
    if request.htmx:  # type: ignore[attr-defined]
        return render(request, "discussion/_thread.html", {"box": box}, status=status)
    context: dict[str, Any] = {
        "box": box,
        "label": selectors.item_label(item),
        "back_url": _back_url(request, item),
        # The expert's pseudonym for his supervisors, as their other pages name him.
        "expert": None if owns_item(request.user, item) else item.expert,
        "panel": item.panel,
    }
    return render(request, "discussion/thread.html", context, status=status)


def _thread(request: HttpRequest, item: Item) -> HttpResponse:
    if request.method == "POST":
        try:
            services.comment_post(item=item, user=request.user, body=request.POST.get("body", ""))
        except services.CommentRefused as exc:
            box = selectors.box(
                item,
                request.user,
                body=request.POST.get("body", "")[: services.BODY_MAX * 2],
                error=f"{exc.field}: {exc}",
            )
            return _render(request, item, box, status=400)
        if not request.htmx:  # type: ignore[attr-defined]
            target = request.POST.get("next", "")
            if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
                target = selectors.item_url(item)
            return redirect(target)
    box = selectors.box(item, request.user)
    if box.thread is not None:
        services.thread_read(thread=box.thread, user=request.user)
    return _render(request, item, box)


@login_required
@require_http_methods(["GET", "POST"])
def assignment_thread(request: HttpRequest, pk: int) -> HttpResponse:
    """The thread on an assignment (a rubric answer, a side-by-side pair)."""
    return _thread(request, _assignment(request, pk))


@login_required
@require_http_methods(["GET", "POST"])
def markup_thread(request: HttpRequest, pk: int) -> HttpResponse:
    """The thread on a span markup of a panel."""
    return _thread(request, _markup(request, pk))


@login_required
@require_POST
def thread_resolve(request: HttpRequest, pk: int) -> HttpResponse:
    """Mark a thread resolved (`resolved=1`) or open again (`resolved=0`): its panel's
    supervisors and admins."""
    thread = (
        Thread.objects.select_related(
            "assignment__expert", "assignment__panel", "markup__expert", "markup__panel"
        )
        .filter(pk=pk)
        .first()
    )
    item: Item | None = None
    if thread is not None:
        item = thread.assignment if thread.assignment is not None else thread.markup
    if thread is None or item is None or not allowed(request.user, "discussion.resolve", item):
        # As panels.access.check_object: 403 without the role, else 404 as if it did not exist.
        require(request.user, "discussion.resolve_threads")
        raise Http404
    value = request.POST.get("resolved", "")
    if value not in ("0", "1"):
        return HttpResponseBadRequest(_("resolved: 1 to resolve the thread, 0 to open it again."))
    services.thread_resolve(thread=thread, user=request.user, resolved=value == "1")
    if request.htmx:  # type: ignore[attr-defined]
        return _render(request, item, selectors.box(item, request.user))
    return redirect(selectors.item_url(item))


@login_required
@require_GET
def thread_list(request: HttpRequest) -> HttpResponse:
    """The viewer's threads: an expert's own (unread replies first), and for a supervisor or an
    admin the open threads of the panels he may read, counted per panel."""
    user = request.user
    require(user, ROLE)
    me = int(user.pk or 0)
    visible = selectors.visible_threads(user)
    own = selectors.thread_rows(visible.filter(expert__user_id=me), user)
    own.sort(key=lambda r: not r.unread)
    staff = allowed(user, "discussion.resolve_threads")
    others = visible.exclude(expert__user_id=me).filter(resolved=False)
    return render(
        request,
        "discussion/threads.html",
        {
            "own": own,
            "staff": staff,
            "counts": selectors.panel_counts(user) if staff else [],
            "open": selectors.thread_rows(others, user) if staff else [],
            "admin": is_admin(user),
        },
    )
