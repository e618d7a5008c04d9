"""Who may score an assignment and see a queue (django-rules)."""

from __future__ import annotations

from typing import Any

import rules

from panels.rules import is_expert


@rules.predicate
def owns_assignment(user: Any, assignment: Any) -> bool:
    if assignment is None or not user.is_authenticated:
        return False
    # Through the assignment's expert (read with it by the views): no query for user.expert.
    return bool(assignment.expert.user_id == user.pk)


rules.add_perm("work.score_assignment", owns_assignment)
rules.add_perm("work.view_queue", is_expert)
