from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from panels.access import allowed


def generation_nav(request: HttpRequest) -> dict[str, Any]:
    """Whether the navigation links answer generation (admins), asked lazily."""
    user = request.user

    class Nav:
        @property
        def show(self) -> bool:
            return bool(user.is_authenticated) and allowed(user, "generation.view_runs")

    return {"generation_nav": Nav()}
