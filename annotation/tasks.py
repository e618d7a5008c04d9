"""Celery tasks of the annotation app. Tasks take ids, services check state (safe to retry)."""

from __future__ import annotations
