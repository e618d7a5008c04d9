from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from panels.access import allowed


def comparison_nav(request: HttpRequest) -> dict[str, Any]:
    """Whether the navigation shows the rankings link (the page's own rule), asked lazily."""
    user = request.user

    class Nav:
        @property
        def rankings(self) -> bool:
            return allowed(user, "comparison.view_rankings")

    return {"comparison_nav": Nav()}
