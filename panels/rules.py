"""Object-level permissions (django-rules): one place that says who may do what.

Roles: an *expert* (has an Expert profile), a *supervisor* (supervises given panels), an *admin*
(is_staff). Views ask through `panels.access` (`require`, `get_object_for`: 403 for a role, 404
for an object); each app adds the rules of its own objects in its `rules.py` from these
predicates.
"""

from __future__ import annotations

from typing import Any

import rules


@rules.predicate
def is_admin(user: Any) -> bool:
    return bool(user.is_authenticated and (user.is_staff or user.is_superuser))


@rules.predicate
def is_expert(user: Any) -> bool:
    return bool(user.is_authenticated and hasattr(user, "expert"))


@rules.predicate
def is_supervisor(user: Any) -> bool:
    if not user.is_authenticated:
        return False
    # Asked several times per page (navigation, permissions): one query per request's user.
    cached = getattr(user, "_pollux_is_supervisor", None)
    if cached is None:
        cached = bool(user.supervised_panels.exists())
        user._pollux_is_supervisor = cached
    return bool(cached)


@rules.predicate
def supervises_panel(user: Any, panel: Any) -> bool:
    if panel is None or not user.is_authenticated:
        return False
    return bool(panel.supervisors.filter(pk=user.pk).exists())


rules.add_perm("panels.view_console", is_admin | is_supervisor)
rules.add_perm("panels.manage_panel", is_admin | supervises_panel)
