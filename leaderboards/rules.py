"""Who sees and runs leaderboards (django-rules).

A leaderboard names models. Private: admins and supervisors who are not experts (as the model
rankings). Internal: every logged-in user in good standing except an expert, who scores blind
to model names (an expert who also supervises included); a participant not approved yet, or
revoked, is not in good standing (participants.rules). Public: anyone, anonymous visitors
included — a public page is world-readable, so an expert is not refused it either. Scores
only: no page of this app shows an answer, an instruction or an expert. Creating, recomputing
and publishing: admins.
"""

from __future__ import annotations

from typing import Any

import rules

from leaderboards.models import Visibility
from panels.rules import is_admin, is_expert, is_supervisor
from participants.rules import is_vetted

staff = is_admin | (is_supervisor & ~is_expert)


@rules.predicate
def is_public(user: Any, board: Any) -> bool:
    return board is not None and board.visibility == Visibility.PUBLIC


@rules.predicate
def is_internal(user: Any, board: Any) -> bool:
    return board is not None and board.visibility == Visibility.INTERNAL


# Internal boards: logged-in users in good standing (a participant not approved yet, or
# revoked, reads the public boards only: participants.rules).
rules.add_perm(
    "leaderboards.view_leaderboard",
    is_public | (is_internal & is_vetted & ~is_expert) | staff,
)
rules.add_perm("leaderboards.manage_leaderboards", is_admin)
