from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from panels.access import allowed


def authoring_nav(request: HttpRequest) -> dict[str, Any]:
    """Whether the navigation links the writing pages: for supervisors and admins, asked
    lazily (both predicates are cached per request). Experts reach them from their queue
    (work.hooks.queue_sections)."""
    user = request.user

    class Nav:
        @property
        def show(self) -> bool:
            if not user.is_authenticated:
                return False
            return allowed(user, "authoring.view_dashboard")

    return {"authoring_nav": Nav()}
