from __future__ import annotations

from typing import Any

import rules
from django.http import HttpRequest

from panels.rules import is_admin, is_expert, is_supervisor


def roles(request: HttpRequest) -> dict[str, Any]:
    """The navigation's role flags, computed lazily once per request.

    The links follow the same django-rules permissions the views check, asked of the rules alone:
    ``perms.*`` in a template would also ask Django's ModelBackend, which loads the user's and
    groups' model permissions (two queries per page) that no rule here depends on.
    """
    user = request.user

    class Roles:
        @property
        def expert(self) -> bool:
            return bool(is_expert(user))

        @property
        def admin(self) -> bool:
            return bool(user.is_authenticated and user.is_staff)

        @property
        def console(self) -> bool:
            return bool(is_admin(user) or is_supervisor(user))

        @property
        def can_import(self) -> bool:
            return bool(rules.has_perm("material.import_material", user))

        @property
        def can_export(self) -> bool:
            return bool(rules.has_perm("dataset.export_dataset", user))

        @property
        def judges(self) -> bool:
            return bool(rules.has_perm("judging.view_runs", user))

    return {"roles": Roles()}
