"""Who sees and runs leaderboards (django-rules).

A leaderboard names models. Private: admins and supervisors who are not experts (as the model
rankings). Internal: every logged-in user except an expert, who scores blind to model names (an
expert who also supervises included). Public: anyone, anonymous visitors included — a public
page is world-readable, so an expert is not refused it either. Scores only: no page of this app
shows an answer, an instruction or an expert. Creating, recomputing and publishing: admins.
"""

from __future__ import annotations

from typing import Any

import rules

from leaderboards.models import Visibility
from panels.rules import is_admin, is_expert, is_supervisor

staff = is_admin | (is_supervisor & ~is_expert)


@rules.predicate
def is_public(user: Any, board: Any) -> bool:
    return board is not None and board.visibility == Visibility.PUBLIC


@rules.predicate
def is_internal(user: Any, board: Any) -> bool:
    return board is not None and board.visibility == Visibility.INTERNAL


@rules.predicate
def is_logged_in(user: Any) -> bool:
    return bool(user.is_authenticated)


rules.add_perm(
    "leaderboards.view_leaderboard",
    is_public | (is_internal & is_logged_in & ~is_expert) | staff,
)
rules.add_perm("leaderboards.manage_leaderboards", is_admin)
