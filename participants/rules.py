"""The participant role (django-rules): an approved participant profile."""

from __future__ import annotations

from typing import Any

import rules


@rules.predicate
def is_participant(user: Any) -> bool:
    if not user.is_authenticated:
        return False
    participant = getattr(user, "participant", None)
    return bool(participant is not None and participant.approved)
