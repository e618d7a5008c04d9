"""Celery tasks of the panels app. Tasks take ids; the services are idempotent."""

from __future__ import annotations

from typing import Any

from celery import shared_task


@shared_task(bind=True, max_retries=3, acks_late=True)
def distribute_control_items(self: Any, panel_id: int) -> int:
    """Mix control items into the panel's queues (only what is missing: safe to retry)."""
    from panels.services import control_items_distribute

    return control_items_distribute(panel_id=panel_id)


@shared_task(bind=True, max_retries=3, acks_late=True)
def grade_exam_attempt(self: Any, attempt_id: int) -> None:
    """Grade an attempt (a no-op once graded): for a late or failed automatic grade."""
    from panels.services import exam_attempt_grade

    exam_attempt_grade(attempt_id=attempt_id)


@shared_task(bind=True, max_retries=2, acks_late=True)
def refresh_panel_stats(self: Any, panel_id: int) -> None:
    """Recompute the console's snapshot of a panel (seconds at 500,000 estimates)."""
    from panels.services import panel_stats_refresh

    panel_stats_refresh(panel_id=panel_id)


@shared_task
def refresh_all_panel_stats() -> int:
    """Beat: keep every panel's console snapshot fresh, so no supervisor waits for it."""
    from panels.models import Panel

    ids = list(Panel.objects.values_list("pk", flat=True))
    for panel_id in ids:
        refresh_panel_stats.delay(panel_id)
    return len(ids)
