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

        @property
        def runs(self) -> bool:
            # An expert's pages (the scoring page's query budget) ask nothing more: the links
            # are for participants, and the expert profile is already loaded by those pages.
            if hasattr(user, "expert"):
                return False
            return allowed(user, "markup.participate")

        @property
        def leaderboard(self) -> bool:
            # markup.view_leaderboard is markup.view_markups or markup.participate.
            return self.texts or self.runs

    return {"markup_nav": Nav()}
