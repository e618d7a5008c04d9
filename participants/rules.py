"""The participant role (django-rules): an approved participant profile.

A participant not approved yet, or revoked (an admin cleared `approved`), is a *pending* account:
it may do nothing but read the public pages, as an anonymous visitor does. Logging in it is told
that the account awaits approval (participants.forms.LoginForm); a session it still holds is
refused by the rules (`is_vetted` wherever a rule asks only for a logged-in user)."""

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


def _participant(user: Any) -> Any:
    """The user's participant profile, or None; cached on the user like `is_participant`."""
    cached = getattr(user, "_pollux_participant", False)
    if cached is False:
        cached = getattr(user, "participant", None)
        user._pollux_participant = cached
    return cached


@rules.predicate
def is_pending_participant(user: Any) -> bool:
    """A participant profile not (or no longer) approved."""
    if not user.is_authenticated:
        return False
    participant = _participant(user)
    return bool(participant is not None and not participant.approved)


@rules.predicate
def is_logged_in(user: Any) -> bool:
    return bool(user.is_authenticated)


# A logged-in account in good standing: what a rule asks for where any logged-in user would do.
is_vetted = is_logged_in & ~is_pending_participant
