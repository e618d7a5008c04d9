"""Seams where apps above panels react to people events, filled in their AppConfig.ready().

Panels is the bottom of the people side; quality keeps per-membership state (the control
standing) that a resume must reset. Quality registers its function here
(quality.apps.QualityConfig.ready) instead of panels importing quality.
"""

from __future__ import annotations

from collections.abc import Callable

from lib.registry import Registry

# Called inside the resume's transaction with (expert id, panel id).
on_resumed: Registry[Callable[[int, int], None]] = Registry("panels.hooks.on_resumed")
