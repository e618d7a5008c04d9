"""Reads about people and panels: which panels a user sees, members, audit log and notices."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from panels.models import Membership, Panel, SupervisorAction, SupervisorNotice
from panels.rules import is_admin


def panels_for_user(user: Any) -> QuerySet[Panel]:
    """Admins see every panel, supervisors only theirs."""
    if is_admin(user):
        return Panel.objects.all()
    return Panel.objects.filter(supervisors=user)


def eligible_memberships() -> QuerySet[Membership]:
    """The memberships that may be given new work (the one home of this rule, for every kind's
    builder): qualified, not paused in that panel, the expert's account active."""
    return Membership.objects.filter(qualified=True, is_paused=False, expert__user__is_active=True)


def panel_experts(panel: Panel, *, status: str = "") -> QuerySet[Membership]:
    """Memberships of the panel for the experts table (paginated by the view)."""
    qs = Membership.objects.filter(panel=panel).select_related("expert__user")
    if status == "paused":
        qs = qs.filter(is_paused=True)
    elif status == "unqualified":
        qs = qs.filter(qualified=False)
    elif status == "active":
        qs = qs.filter(qualified=True, is_paused=False)
    return qs.order_by("expert__pseudonym")


def recent_actions(panel: Panel, limit: int = 20) -> QuerySet[SupervisorAction]:
    return SupervisorAction.objects.filter(panel=panel).select_related("actor", "expert")[:limit]


def unread_notices(panel: Panel) -> QuerySet[SupervisorNotice]:
    return SupervisorNotice.objects.filter(panel=panel, read_at__isnull=True)
