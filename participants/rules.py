"""The participant role (django-rules): an approved participant profile."""

from __future__ import annotations

from typing import Any

import rules


@rules.predicate
def is_participant(user: Any) -> bool:
    if not user.is_authenticated:
        return False
    # Asked by the navigation on every page: one query per request's user (a missing reverse
    # one-to-one is not cached by Django, so each `user.participant` would query again).
    cached = getattr(user, "_pollux_is_participant", None)
    if cached is None:
        participant = getattr(user, "participant", None)
        cached = bool(participant is not None and participant.approved)
        user._pollux_is_participant = cached
    return bool(cached)
