"""Reads of the threads: what a page shows of an item's thread, and the lists of threads."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, F, Q, QuerySet
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from discussion.models import AuthorRole, Comment, Thread
from discussion.services import BODY_MAX, Item, item_filter
from markup.models import Markup
from panels.access import allowed
from panels.models import Panel
from panels.rules import is_admin, is_expert
from work import kinds
from work.selectors import blind_answer_ids


@dataclass
class CommentRow:
    role: str
    role_label: str
    body: str
    created_at: datetime
    mine: bool


@dataclass
class Box:
    """One item's thread as a page shows it: its comments, the form and what the viewer may do."""

    dom_id: str
    url: str
    title: str
    thread: Thread | None
    comments: list[CommentRow] = field(default_factory=list)
    can_resolve: bool = False
    resolve_url: str = ""
    body: str = ""
    error: str = ""
    body_max: int = BODY_MAX
    # Folded until opened: a page of several threads (the review page) folds the empty ones.
    fold: bool = False


def item_url(item: Item) -> str:
    """The thread's own URL (its page, its fragment, where comments are posted)."""
    if isinstance(item, Markup):
        return reverse("discussion_markup", args=[item.pk])
    return reverse("discussion_assignment", args=[item.pk])


# The kinds' names as the work pages call them (the registry's labels are not translated).
_KIND_NAMES = {
    kinds.POINTWISE: gettext_lazy("Scoring"),
    kinds.PAIRWISE: gettext_lazy("Side-by-side comparison"),
    kinds.MARKUP: gettext_lazy("Span markup"),
}


def _kind_name(key: str) -> str:
    return str(_KIND_NAMES.get(key) or kinds.get(key).label)


def item_label(item: Item) -> str:
    """What the item is, in words, without its content (no model, no other expert)."""
    if isinstance(item, Markup):
        return _("%(kind)s, text %(text)s") % {
            "kind": _kind_name(kinds.MARKUP),
            "text": item.text_id,
        }
    return _("%(kind)s, assignment %(pk)s") % {
        "kind": _kind_name(kinds.kind_of(item)),
        "pk": item.pk,
    }


def box(item: Item, user: Any, *, title: str = "", body: str = "", error: str = "") -> Box:
    """The item's thread for `user` (who may see it: the caller checked `discussion.comment`)."""
    prefix = "markup" if isinstance(item, Markup) else "assignment"
    thread = Thread.objects.filter(**item_filter(item)).first()
    comments = []
    if thread is not None:
        labels = dict(AuthorRole.choices)
        comments = [
            CommentRow(
                role=c.author_role,
                role_label=str(labels.get(c.author_role, c.author_role)),
                body=c.body,
                created_at=c.created_at,
                mine=c.author_id == user.pk,
            )
            for c in Comment.objects.filter(thread=thread).only(
                "author_role", "body", "created_at", "author_id"
            )
        ]
    can_resolve = thread is not None and allowed(user, "discussion.resolve", item)
    return Box(
        dom_id=f"thread-{prefix}-{item.pk}",
        url=item_url(item),
        title=title or _("Comments"),
        thread=thread,
        comments=comments,
        can_resolve=can_resolve,
        resolve_url=reverse("discussion_resolve", args=[thread.pk])
        if can_resolve and thread
        else "",
        body=body,
        error=error,
    )


def visible_threads(user: Any) -> QuerySet[Thread]:
    """The threads `user` may read (discussion.rules, as one query)."""
    threads = Thread.objects.all()
    if not user.is_authenticated:
        return threads.none()
    if is_admin(user):
        return threads
    own = Q(expert__user_id=user.pk)
    panels = Panel.objects.filter(supervisors=user.pk).values("pk")
    staff = Q(panel__in=panels, assignment__isnull=False) & ~Q(
        assignment__answer_id__in=blind_answer_ids(user)
    )
    if not is_expert(user):
        staff |= Q(panel__in=panels, markup__isnull=False)
    return threads.filter(own | staff)


def unread_for_expert(user: Any) -> QuerySet[Thread]:
    """The expert's threads whose latest comment is a reply he has not read yet."""
    return Thread.objects.filter(expert__user_id=user.pk, awaiting_reply=False).filter(
        Q(expert_read_at__isnull=True, last_comment_at__isnull=False)
        | Q(last_comment_at__gt=F("expert_read_at"))
    )


@dataclass
class ThreadRow:
    thread: Thread
    url: str
    label: str
    unread: bool
    comments: int


def thread_rows(threads: QuerySet[Thread], user: Any) -> list[ThreadRow]:
    """Rows of a list of threads, latest first (the item's words, not its content)."""
    unread = set(unread_for_expert(user).values_list("pk", flat=True))
    rows = []
    for t in (
        threads.select_related("assignment", "markup", "expert", "panel")
        .annotate(n_comments=Count("comments"))
        .order_by(F("last_comment_at").desc(nulls_last=True), "-pk")[:200]
    ):
        item = t.assignment if t.assignment is not None else t.markup
        assert item is not None, "a thread is on one item (its check constraint)"
        rows.append(
            ThreadRow(
                thread=t,
                url=item_url(item),
                label=item_label(item),
                unread=t.pk in unread,
                comments=t.n_comments,
            )
        )
    return rows


@dataclass
class PanelCount:
    panel: Panel
    open: int
    awaiting: int


def panel_counts(user: Any) -> list[PanelCount]:
    """Open threads per panel the viewer supervises (every panel for an admin) and how many of
    them wait for a reply, among the threads he may read."""
    counts = (
        visible_threads(user)
        .exclude(expert__user_id=user.pk)
        .filter(resolved=False)
        .values("panel")
        .annotate(open=Count("pk"), awaiting=Count("pk", filter=Q(awaiting_reply=True)))
    )
    by_panel = {c["panel"]: c for c in counts}
    panels = Panel.objects.filter(pk__in=by_panel).order_by("number")
    return [PanelCount(p, by_panel[p.pk]["open"], by_panel[p.pk]["awaiting"]) for p in panels]
