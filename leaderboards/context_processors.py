from __future__ import annotations

from typing import Any

from django.http import HttpRequest


def leaderboards_nav(request: HttpRequest) -> dict[str, Any]:
    """Whether the navigation links the leaderboards, asked lazily: for everyone but an
    expert's session (he scores blind to model names; the page itself stays public)."""
    user = request.user

    class Nav:
        @property
        def show(self) -> bool:
            if not user.is_authenticated:
                return True
            # The expert profile is already loaded on an expert's pages: no query there.
            return not hasattr(user, "expert")

    return {"leaderboards_nav": Nav()}
