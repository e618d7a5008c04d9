"""Shipped POLLUX judge-prompt templates (data only, see NOTICE.md)."""

from __future__ import annotations
