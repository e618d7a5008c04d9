"""Celery tasks of quality. Tasks take ids; the services are idempotent."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from quality.control import control_items_distribute
from quality.exams import exam_attempt_grade


@shared_task(bind=True, max_retries=3, acks_late=True)
def distribute_control_items(self: Any, panel_id: int) -> int:
    """Mix control items into the panel's queues (only what is missing: safe to retry)."""
    return control_items_distribute(panel_id=panel_id)


@shared_task(bind=True, max_retries=3, acks_late=True)
def grade_exam_attempt(self: Any, attempt_id: int) -> None:
    """Grade an attempt (a no-op once graded): for a late or failed automatic grade."""
    exam_attempt_grade(attempt_id=attempt_id)
