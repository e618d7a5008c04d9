from __future__ import annotations

from typing import Any

from django.http import HttpRequest


def roles(request: HttpRequest) -> dict[str, Any]:
    """The navigation's role flags, computed lazily once per request (at most one query)."""
    user = request.user

    class Roles:
        @property
        def expert(self) -> bool:
            return bool(user.is_authenticated and hasattr(user, "expert"))

        @property
        def admin(self) -> bool:
            return bool(user.is_authenticated and user.is_staff)

        @property
        def console(self) -> bool:
            if not user.is_authenticated:
                return False
            if user.is_staff or user.is_superuser:
                return True
            return bool(user.supervised_panels.exists())

    return {"roles": Roles()}
