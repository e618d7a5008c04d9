"""Writes about people and panels: the audit log, pauses and resumes, notices."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from panels import hooks
from panels.models import Expert, Membership, Panel, SupervisorAction, SupervisorNotice


def audit(
    *,
    action: str,
    actor: Any = None,
    panel: Panel | None = None,
    expert: Expert | None = None,
    note: str = "",
    data: dict[str, Any] | None = None,
) -> SupervisorAction:
    return SupervisorAction.objects.create(
        action=action,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        panel=panel,
        expert=expert,
        note=note,
        data=data or {},
    )


def actor_or_none(user: Any) -> Any:
    return user if getattr(user, "is_authenticated", False) else None


def _membership_locked(expert: Expert, panel: Panel) -> Membership:
    return Membership.objects.select_for_update().get(expert=expert, panel=panel)


@transaction.atomic
def expert_pause(*, expert: Expert, user: Any, panel: Panel, reason: str = "") -> Membership:
    """Pause the expert in this panel only: no new work from it, its work cannot be opened."""
    membership = _membership_locked(expert, panel)
    membership.is_paused = True
    membership.paused_reason = (reason or _("Paused by a supervisor"))[:300]
    membership.save(update_fields=["is_paused", "paused_reason"])
    audit(action="pause", actor=user, panel=panel, expert=expert, note=reason)
    return membership


@transaction.atomic
def expert_resume(*, expert: Expert, user: Any, panel: Panel, note: str = "") -> Membership:
    """Resume work in this panel; its control accuracy starts afresh, else the next item would
    pause again. Other panels' pauses, records and notices are theirs and stay as they are."""
    membership = _membership_locked(expert, panel)
    membership.is_paused = False
    membership.paused_reason = ""
    membership.save(update_fields=["is_paused", "paused_reason"])
    for reset in hooks.on_resumed:
        reset(expert.pk, panel.pk)
    SupervisorNotice.objects.filter(expert=expert, panel=panel, read_at__isnull=True).update(
        read_at=timezone.now()
    )
    audit(action="resume", actor=user, panel=panel, expert=expert, note=note)
    return membership


def notices_mark_read(*, panel: Panel, user: Any) -> int:
    return SupervisorNotice.objects.filter(panel=panel, read_at__isnull=True).update(
        read_at=timezone.now()
    )
