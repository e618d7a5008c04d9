from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from panels.access import allowed


def markup_nav(request: HttpRequest) -> dict[str, Any]:
    """Whether the navigation shows the span markups link (the pages' own rule), asked lazily."""
    user = request.user

    class Nav:
        @property
        def texts(self) -> bool:
            return allowed(user, "markup.view_markups")

    return {"markup_nav": Nav()}
