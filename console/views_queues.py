"""The review queues of a panel: four ordered lists a supervisor works through by keyboard.

Access as every console page of a panel: the console role (403 without it), then the panel the
user supervises (404 for another panel's, as `panels.access` answers an object refused).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from console import queues
from lib.integers import ascii_int
from panels.access import get_object_for
from panels.models import Expert, Panel


def _panel(request: HttpRequest, pk: int) -> Panel:
    return get_object_for(
        request.user, "panels.manage_panel", Panel, role="panels.view_console", pk=pk
    )


def _int(value: str | None, default: int) -> int:
    number = ascii_int(value or "")
    return default if number is None else max(1, number)


def queue_params(get: QueryDict, panel: Panel) -> tuple[str, int, Expert | None] | None:
    """The queue position a review page was opened at (None: not from a queue)."""
    queue = get.get("queue", "")
    if queue not in queues.QUEUES:
        return None
    expert = queues.panel_expert(panel, get.get("expert", "").strip())
    return queue, _int(get.get("pos"), 1), expert


def queue_query(queue: str, pos: int, expert: Expert | None) -> str:
    """The query string that puts a review page at a position of a queue."""
    params: dict[str, Any] = {"queue": queue, "pos": pos}
    if expert is not None:
        params["expert"] = expert.pseudonym
    return urlencode(params)


def review_url(panel: Panel, item: queues.QueueItem, queue: str, pos: int, expert: Any) -> str:
    """The answer review page of a queue item, at its position, scrolled to its criterion."""
    url = reverse("console_answer_review", args=[panel.pk, item.answer_id])
    url += "?" + queue_query(queue, pos, expert)
    if item.estimate_id is not None:
        url += f"&estimate={item.estimate_id}"
    if item.triple_id is not None:
        url += f"#triple-{item.triple_id}"
    return url


@login_required
@require_GET
def review_queues(request: HttpRequest, pk: int) -> HttpResponse:
    panel = _panel(request, pk)
    queue = request.GET.get("queue", "")
    if queue not in queues.QUEUES:
        queue = queues.LOW_CONFIDENCE
    page_number = _int(request.GET.get("page"), 1)
    expert_code = request.GET.get("expert", "").strip()
    expert = queues.panel_expert(panel, expert_code) if queue == queues.EXPERT else None
    offset = (page_number - 1) * queues.PAGE_SIZE
    page = queues.queue_page(panel, queue, viewer=request.user, offset=offset, expert=expert)
    rows = [
        (pos, item, review_url(panel, item, queue, pos, expert))
        for pos, item in queues.positions(page.offset, page.items)
    ]
    base = {"queue": queue} | ({"expert": expert.pseudonym} if expert else {})
    return render(
        request,
        "console/review_queues.html",
        {
            "panel": panel,
            "queue": queue,
            "queues": list(queues.QUEUES.items()),
            "rows": rows,
            "page_number": page_number,
            "previous_url": "?" + urlencode(base | {"page": page_number - 1})
            if page_number > 1
            else "",
            "next_url": "?" + urlencode(base | {"page": page_number + 1}) if page.has_more else "",
            "experts": queues.panel_experts(panel) if queue == queues.EXPERT else [],
            "expert": expert,
            "expert_code": expert_code,
        },
    )


def review_nav(request: HttpRequest, panel: Panel) -> dict[str, Any] | None:
    """The review page's place in the queue it was opened from: links to the neighbours and
    back to the queue's page (None when it was not opened from a queue)."""
    params = queue_params(request.GET, panel)
    if params is None:
        return None
    queue, pos, expert = params
    near = queues.neighbours(panel, queue, pos, viewer=request.user, expert=expert)
    back = {"queue": queue, "page": near.page} | ({"expert": expert.pseudonym} if expert else {})
    return {
        "queue": queue,
        "label": queues.QUEUES[queue],
        "pos": pos,
        "query": queue_query(queue, pos, expert),
        "current": near.current,
        "previous_url": review_url(panel, near.previous, queue, pos - 1, expert)
        if near.previous
        else "",
        "next_url": review_url(panel, near.next, queue, pos + 1, expert) if near.next else "",
        "queue_url": reverse("console_review_queues", args=[panel.pk]) + "?" + urlencode(back),
    }
