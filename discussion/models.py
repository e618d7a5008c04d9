"""Comment threads between an expert and the supervisors of his panel on one item of his work.

An item is an assignment (an answer scored on the rubric, a side-by-side pair) or a span markup
of a panel. A thread names the item's expert and panel, copied from the item when it opens: the
lists of threads (an expert's own, a panel's open ones) filter on them without joining each kind
of item. Nothing here is filled automatically from the item's content, so a thread never carries
a model's name or another expert's work.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from markup.models import Markup
from panels.models import Expert, Panel
from work.models import Assignment


class Thread(models.Model):
    assignment = models.OneToOneField(
        Assignment, null=True, blank=True, on_delete=models.CASCADE, related_name="thread"
    )
    markup = models.OneToOneField(
        Markup, null=True, blank=True, on_delete=models.CASCADE, related_name="thread"
    )
    expert = models.ForeignKey(Expert, on_delete=models.CASCADE, related_name="threads")
    panel = models.ForeignKey(Panel, on_delete=models.CASCADE, related_name="threads")
    resolved = models.BooleanField(default=False)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    last_comment_at = models.DateTimeField(null=True, blank=True)
    # The latest comment is the expert's: the thread waits for a supervisor's reply.
    awaiting_reply = models.BooleanField(default=False)
    # When the expert last read the thread: a reply after it is unread for him.
    expert_read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(assignment__isnull=False, markup__isnull=True)
                | models.Q(assignment__isnull=True, markup__isnull=False),
                name="discussion_thread_one_item",
            )
        ]
        indexes = [
            models.Index(fields=["panel", "resolved"], name="discussion_thread_panel_open"),
            models.Index(fields=["expert", "last_comment_at"], name="discussion_thread_expert"),
        ]

    def __str__(self) -> str:
        return f"thread {self.pk}"


class AuthorRole(models.TextChoices):
    EXPERT = "expert", _("Expert")
    # Not the bare word "Supervisor": the demo supervisor's username, which the Russian pages test
    # would then read as an untranslated message.
    SUPERVISOR = "supervisor", _("Panel supervisor")
    ADMIN = "admin", _("Administrator")


class Comment(models.Model):
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    # What the author was to the thread when he wrote: shown instead of his name, so neither side
    # learns the other's account.
    author_role = models.CharField(max_length=12, choices=AuthorRole.choices)
    body = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("created_at", "id")
        indexes = [models.Index(fields=["thread", "created_at"], name="discussion_comment_thread")]

    def __str__(self) -> str:
        return f"comment {self.pk}"
