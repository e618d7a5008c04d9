from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from panels.access import allowed


def roles(request: HttpRequest) -> dict[str, Any]:
    """The navigation's role flags, computed lazily once per request.

    The links follow the same django-rules permissions the views check, asked of the rules alone
    (panels.access): ``perms.*`` in a template would also ask Django's ModelBackend, which loads
    the user's and groups' model permissions (two queries per page) that no rule here depends on.
    """
    user = request.user

    class Roles:
        @property
        def expert(self) -> bool:
            return allowed(user, "work.view_queue")

        @property
        def admin(self) -> bool:
            # The Django admin site's own rule (is_staff), not a project permission.
            return bool(user.is_authenticated and user.is_staff)

        @property
        def console(self) -> bool:
            return allowed(user, "panels.view_console")

        @property
        def can_import(self) -> bool:
            return allowed(user, "material.import_material")

        @property
        def can_export(self) -> bool:
            return allowed(user, "dataset.export_dataset")

        @property
        def judges(self) -> bool:
            return allowed(user, "judging.view_runs")

    return {"roles": Roles()}
