"""Expert pages: the queue, and the assignment's URL, which shows and submits the page of the
assignment's kind (work.pages: the rubric, side by side)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from work import entries, hooks, kinds, pages, selectors
from work.forms import parse_id
from work.models import AssignmentStatus


@login_required
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    expert = pages.expert_or_403(request)
    status = request.GET.get("status") or None
    page = Paginator(selectors.queue_page(expert, status), 50).get_page(request.GET.get("page"))
    page.object_list = list(page.object_list)
    # An entry of several panels names them all (one query for the page).
    entry_panels = entries.entry_panels(expert.pk, page.object_list)
    return render(
        request,
        "work/queue.html",
        {
            "counts": selectors.queue_counts(expert),
            "page": page,
            "rows": [(a, entry_panels.get(a.pk, [])) for a in page.object_list],
            "status": status,
            "statuses": AssignmentStatus.choices,
            "paused_panels": selectors.paused_panels(expert),
            # Other kinds of work of this expert (span markup), by the kinds' own providers.
            "sections": [
                section
                for provider in hooks.queue_sections
                if (section := provider(expert.pk)) is not None
            ],
        },
    )


@login_required
@require_GET
def queue_next(request: HttpRequest) -> HttpResponse:
    """The next open item of the expert's queue; `kind=pairwise` (the side-by-side page's next
    pair) keeps to pairs, and after the last one comes back to the queue with a message."""
    # A malformed "after" (not an id) is ignored: the queue simply starts from the beginning;
    # another kind than side by side too: any next item.
    pairs = request.GET.get("kind") == kinds.PAIRWISE
    nxt = selectors.next_assignment_id(
        pages.user_id(request), parse_id(request.GET.get("after")), pairs_only=pairs
    )
    if nxt is None:
        pages.expert_or_403(request)
        if pairs:
            messages.info(request, _("No more pairs to compare in your queue. Thank you!"))
        else:
            messages.info(request, _("No more answers in your queue. Thank you!"))
        return redirect("queue")
    return redirect("assignment", pk=nxt)


@login_required
@require_http_methods(["GET", "POST"])
def assignment_page(request: HttpRequest, pk: int) -> HttpResponse:
    """The page of the assignment's kind (work.pages): shown with the assignment read once with
    what every kind's page shows, submitted with the assignment and its entry's estimates read
    once; 404 for anyone else's, 403 for a user who is no expert."""
    if request.method == "GET":
        assignment = pages.own_assignment(request, pk, pages.pages)
        return pages.pages[assignment.task_kind].show(request, assignment)
    lead, estimates = pages.own_entry(request, pk)
    return pages.pages[lead.task_kind].submit(request, lead, estimates)
