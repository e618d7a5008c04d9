from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from panels.access import allowed


def submissions_nav(request: HttpRequest) -> dict[str, Any]:
    """Whether the navigation links the submissions (participants, admins), asked lazily; an
    expert's pages ask nothing (their query budget) and show no link."""
    user = request.user

    class Nav:
        @property
        def show(self) -> bool:
            if not user.is_authenticated or hasattr(user, "expert"):
                return False
            return allowed(user, "submissions.view_submissions")

    return {"submissions_nav": Nav()}
