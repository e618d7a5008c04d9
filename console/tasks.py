"""Celery tasks of the console: the panel statistics snapshot. Tasks take ids."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from console.stats import panel_stats_refresh
from panels.models import Panel


@shared_task(bind=True, max_retries=2, acks_late=True)
def refresh_panel_stats(self: Any, panel_id: int) -> None:
    """Recompute the console's snapshot of a panel (seconds at 500,000 estimates)."""
    panel_stats_refresh(panel_id=panel_id)


@shared_task
def refresh_all_panel_stats() -> int:
    """Beat: keep every panel's console snapshot fresh, so no supervisor waits for it."""
    ids = list(Panel.objects.values_list("pk", flat=True))
    for panel_id in ids:
        refresh_panel_stats.delay(panel_id)
    return len(ids)
