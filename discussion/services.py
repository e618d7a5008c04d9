"""Writes of the threads: a comment posted, a thread resolved or reopened, a thread read."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from discussion.models import AuthorRole, Comment, Thread
from discussion.rules import owns_item
from markup.models import Markup
from panels.rules import is_admin
from work.models import Assignment

Item = Assignment | Markup

# A comment longer than this is refused (a note on one item, not a document).
BODY_MAX = 5000
# The same text from the same author on the same thread within this window is one comment: a
# second click, a resent form or Ctrl+Enter pressed twice.
DUPLICATE_WINDOW = timedelta(seconds=30)


class CommentRefused(Exception):
    """A comment that cannot be stored; `field` names the form field to fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def item_filter(item: Item) -> dict[str, Any]:
    """The thread's lookup of its item."""
    if isinstance(item, Markup):
        return {"markup": item}
    return {"assignment": item}


def clean_body(body: str) -> str:
    """The comment's text, trimmed; refused when empty or longer than BODY_MAX."""
    text = (body or "").replace("\r\n", "\n").strip()
    if not text:
        raise CommentRefused("body", _("Write the comment first."))
    if len(text) > BODY_MAX:
        raise CommentRefused(
            "body",
            _("The comment is %(n)d characters long; at most %(max)d are allowed.")
            % {"n": len(text), "max": BODY_MAX},
        )
    return text


def author_role(user: Any, item: Item) -> str:
    """What the author is to the item's thread: its expert, an admin or a supervisor."""
    if owns_item(user, item):
        return AuthorRole.EXPERT
    if is_admin(user):
        return AuthorRole.ADMIN
    return AuthorRole.SUPERVISOR


@transaction.atomic
def comment_post(*, item: Item, user: Any, body: str) -> Comment:
    """Add a comment to the item's thread (opened on the first comment). The caller has checked
    `discussion.comment` on the item. The expert's comment reopens a resolved thread and waits
    for a reply; a supervisor's is a reply the expert has not read yet."""
    text = clean_body(body)
    assert item.expert_id is not None and item.panel_id is not None, "an expert's item"
    thread, _created = Thread.objects.get_or_create(
        **item_filter(item), defaults={"expert_id": item.expert_id, "panel_id": item.panel_id}
    )
    # One writer per thread at a time: the duplicate check and the thread's state below see
    # every comment committed before this one.
    thread = Thread.objects.select_for_update().get(pk=thread.pk)
    now = timezone.now()
    duplicate = (
        thread.comments.filter(author_id=user.pk, body=text, created_at__gte=now - DUPLICATE_WINDOW)
        .order_by("-created_at")
        .first()
    )
    if duplicate is not None:
        return duplicate
    role = author_role(user, item)
    comment = Comment.objects.create(
        thread=thread, author_id=user.pk, author_role=role, body=text, created_at=now
    )
    by_expert = role == AuthorRole.EXPERT
    thread.last_comment_at = now
    thread.awaiting_reply = by_expert
    fields = ["last_comment_at", "awaiting_reply"]
    if by_expert:
        thread.expert_read_at = now
        fields.append("expert_read_at")
        if thread.resolved:
            thread.resolved, thread.resolved_at, thread.resolved_by = False, None, None
            fields += ["resolved", "resolved_at", "resolved_by"]
    thread.save(update_fields=fields)
    return comment


def thread_resolve(*, thread: Thread, user: Any, resolved: bool) -> Thread:
    """Mark the thread resolved (or open again); the caller has checked `discussion.resolve`."""
    thread.resolved = resolved
    thread.resolved_at = timezone.now() if resolved else None
    thread.resolved_by = user if resolved else None
    thread.save(update_fields=["resolved", "resolved_at", "resolved_by"])
    return thread


def thread_read(*, thread: Thread, user: Any) -> None:
    """The thread's expert has read it: its replies so far are no longer unread for him."""
    Thread.objects.filter(pk=thread.pk, expert__user_id=user.pk).update(
        expert_read_at=timezone.now()
    )
