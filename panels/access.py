"""The one way a view or API endpoint checks access: the django-rules permissions, 403 and 404.

A *role* permission (no object: `panels.view_console`, `work.view_queue`, ...) refused is a 403:
the user knows the page exists and that it is not for them. An *object* permission refused is a
404, exactly like an object that does not exist: another panel's objects do not exist for a
supervisor, another expert's work does not exist for an expert.

The rules are asked through `rules.has_perm`, not `user.has_perm`: Django's backends grant a
superuser every permission, and the object rules are also about the data (a superuser is not the
owner of an expert's assignment; `is_admin` in the rules says what an admin may do).
"""

from __future__ import annotations

from typing import Any, TypeVar

import rules
from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.http import Http404

M = TypeVar("M", bound=Model)


def allowed(user: Any, perm: str, obj: Any = None) -> bool:
    """Whether the rule `perm` lets `user` act (on `obj`, for an object permission)."""
    return bool(rules.has_perm(perm, user, obj))


def require(user: Any, perm: str, obj: Any = None) -> None:
    """403 unless the role permission `perm` holds."""
    if not allowed(user, perm, obj):
        raise PermissionDenied


def check_object(user: Any, perm: str, obj: M | None, *, role: str | None = None) -> M:
    """The object if `perm` holds on it; 404 otherwise (the object does not exist for the user).

    With `role`, a user without that role permission gets a 403 instead, whatever the object: the
    role is asked only on refusal, so the allowed path costs no query for it (an object rule
    that holds implies its role).
    """
    if obj is None or not allowed(user, perm, obj):
        if role is not None:
            require(user, role)
        raise Http404
    return obj


def get_object_for(
    user: Any,
    perm: str,
    queryset: QuerySet[M] | type[M],
    *,
    role: str | None = None,
    **lookup: Any,
) -> M:
    """The object found by `lookup`, checked with `check_object` (403 for the role, else 404)."""
    qs = queryset._default_manager.all() if isinstance(queryset, type) else queryset
    return check_object(user, perm, qs.filter(**lookup).first(), role=role)
