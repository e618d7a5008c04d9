"""Reads about people and panels: which panels a user sees, members, audit log and notices."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from panels.models import Membership, Panel, SupervisorAction, SupervisorNotice


def panels_for_user(user: Any) -> QuerySet[Panel]:
    """Admins see every panel, supervisors only theirs."""
    if user.is_staff or user.is_superuser:
        return Panel.objects.all()
    return Panel.objects.filter(supervisors=user)


def panel_for_user(user: Any, pk: int) -> Panel:
    """The panel if the user may manage it; 404 otherwise (another panel does not exist)."""
    panel = Panel.objects.filter(pk=pk).first()
    if panel is None or not user.has_perm("panels.manage_panel", panel):
        raise Http404
    return panel


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
