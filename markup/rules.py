"""Who may see span markups (django-rules).

For now admins and supervisors who are not experts: the markups name their experts and show
one expert's fragments beside another's, which an expert marking the same texts must not see
(the same reason comparison.rules keeps experts off the rankings)."""

from __future__ import annotations

import rules

from panels.rules import is_admin, is_expert, is_supervisor

rules.add_perm("markup.view_markups", is_admin | (is_supervisor & ~is_expert))
