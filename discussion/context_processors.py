"""The threads on the pages where the work is, without those pages' views knowing of them.

The rubric and side-by-side page (`assignment`), the span markup page (`markup_work_page`) and
the panel's review page of an answer (`console_answer_review`) include
`discussion/_boxes.html` when `discussion_boxes` is in their context: this processor puts it
there on those URLs, for the items the user may read (discussion.rules), and nothing on any other
page (as work.context_processors.review_returns). The navigation's link and the expert's count
of unread replies are computed only when a template asks for them.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext as _

from console.review import expert_codes
from discussion import selectors, services
from discussion.rules import owns_item
from markup.models import Markup
from panels.access import allowed
from work import kinds
from work.models import Assignment


class Nav:
    def __init__(self, user: Any) -> None:
        self.user = user

    @cached_property
    def show(self) -> bool:
        return allowed(self.user, "discussion.view_threads")

    @cached_property
    def unread(self) -> int:
        if not hasattr(self.user, "expert"):
            return 0
        return selectors.unread_for_expert(self.user).count()


def _own_boxes(user: Any, item: Assignment | Markup | None) -> list[selectors.Box]:
    if item is None or not owns_item(user, item) or item.panel_id is None:
        return []
    box = selectors.box(item, user, title=_("Comments with the panel's supervisors"))
    if box.thread is not None:
        # The page shows him the replies: they are read (the navigation's count drops).
        services.thread_read(thread=box.thread, user=user)
    return [box]


def _review_boxes(user: Any, panel_id: int, answer_id: int) -> list[selectors.Box]:
    """A thread per expert of the panel holding rubric work on the answer, under the page's code
    for him (never his name)."""
    codes = expert_codes(answer_id)
    boxes = []
    assignments = (
        Assignment.objects.select_related("expert", "panel")
        .filter(panel_id=panel_id, answer_id=answer_id)
        .order_by("pk")
    )
    for a in assignments:
        # His own work's thread is on his own page of it, not among the panel's.
        if kinds.kind_of(a) != kinds.POINTWISE or a.expert_id not in codes or owns_item(user, a):
            continue
        if not allowed(user, "discussion.comment", a):
            continue
        title = _("Comments with expert %(code)s") % {"code": codes[a.expert_id]}
        box = selectors.box(a, user, title=title)
        box.fold = not box.comments
        boxes.append(box)
    return boxes


def discussion(request: HttpRequest) -> dict[str, Any]:
    user = request.user
    if not user.is_authenticated:
        return {}
    context: dict[str, Any] = {"discussion_nav": Nav(user)}
    match = getattr(request, "resolver_match", None)
    name = match.url_name if match is not None else None
    if name == "assignment":
        item = (
            Assignment.objects.select_related("expert", "panel")
            .filter(pk=match.kwargs["pk"])  # type: ignore[union-attr]
            .first()
        )
        context["discussion_boxes"] = _own_boxes(user, item)
    elif name == "markup_work_page":
        markup = (
            Markup.objects.select_related("expert", "panel")
            .filter(pk=match.kwargs["pk"])  # type: ignore[union-attr]
            .first()
        )
        context["discussion_boxes"] = _own_boxes(user, markup)
    elif name == "console":
        context["discussion_counts"] = selectors.panel_counts(user)
    elif name == "console_answer_review":
        kwargs = match.kwargs  # type: ignore[union-attr]
        context["discussion_boxes"] = _review_boxes(
            user, int(kwargs["pk"]), int(kwargs["answer_id"])
        )
    return context
