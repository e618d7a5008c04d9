from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from markup.models import Markup
from panels.access import allowed


def markup_nav(request: HttpRequest) -> dict[str, Any]:
    """Whether the navigation shows the span markups link (the pages' own rule), asked lazily."""
    user = request.user

    class Nav:
        @property
        def texts(self) -> bool:
            return allowed(user, "markup.view_markups")

        @property
        def runs(self) -> bool:
            return allowed(user, "markup.participate")

        @property
        def leaderboard(self) -> bool:
            return allowed(user, "markup.view_leaderboard")

        @property
        def work(self) -> bool:
            # Only for experts who were given markup work: one indexed EXISTS when asked.
            expert = getattr(user, "expert", None) if user.is_authenticated else None
            return bool(
                expert is not None
                and Markup.objects.filter(expert=expert, panel__isnull=False).exists()
            )

    return {"markup_nav": Nav()}
