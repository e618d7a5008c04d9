"""Who may read and write a panel's guidelines (django-rules).

Readers: the panel's experts (candidates of its exam included: they are unqualified members),
its supervisors and admins. Writers: its supervisors and admins. Another panel's guidelines do
not exist for anyone else (404).
"""

from __future__ import annotations

from typing import Any

import rules

from panels.models import Membership
from panels.rules import is_admin, is_expert, is_supervisor, supervises_panel


@rules.predicate
def member_of_panel(user: Any, panel: Any) -> bool:
    if panel is None or not user.is_authenticated:
        return False
    return bool(Membership.objects.filter(panel=panel, expert__user=user).exists())


# The role: someone who may read some panel's guidelines (anyone else gets a 403).
rules.add_perm("guidelines.view_guidelines", is_admin | is_supervisor | is_expert)
rules.add_perm("guidelines.read_panel", is_admin | supervises_panel | member_of_panel)
rules.add_perm("guidelines.edit_panel", is_admin | supervises_panel)
