"""Who sees and moves submissions (django-rules).

A participant sees his own submissions only (their private results included), submits to a
board that takes submissions and downloads its public inputs (never the references). Admins
see every submission, decide on publication, score again and send answers to the panels.
Supervisors and experts have no part here: a submission names its model.
"""

from __future__ import annotations

from typing import Any

import rules

from panels.rules import is_admin
from participants.rules import is_participant


@rules.predicate
def owns(user: Any, submission: Any) -> bool:
    return (
        submission is not None
        and user.is_authenticated
        and submission.participant.user_id == user.pk
        and submission.participant.approved
    )


@rules.predicate
def takes_submissions(user: Any, board: Any) -> bool:
    """The board takes submissions and the user may read it (a private board is staff's only:
    not even its title, inputs or standings reach a participant)."""
    return (
        board is not None
        and board.accepts_submissions
        and board.judge_config_id is not None
        and rules.has_perm("leaderboards.view_leaderboard", user, board)
    )


@rules.predicate
def version_open(user: Any, version: Any) -> bool:
    """A version that is not a closed test (a closed test's inputs are never downloadable)."""
    return version is not None and not version.closed


@rules.predicate
def version_takes_submissions(user: Any, version: Any) -> bool:
    return version is not None and takes_submissions.test(user, version.leaderboard)


rules.add_perm("submissions.view_submission", is_admin | (is_participant & owns))
rules.add_perm("submissions.request_publication", is_participant & owns)
rules.add_perm("submissions.submit_to", is_participant & takes_submissions)
rules.add_perm("submissions.download_inputs", is_admin | (is_participant & takes_submissions))
# On a version: a closed test's inputs are the admins' only.
rules.add_perm(
    "submissions.download_version_inputs",
    is_admin | (is_participant & version_takes_submissions & version_open),
)
rules.add_perm("submissions.cancel_generation", is_admin | (is_participant & owns))
rules.add_perm("submissions.view_submissions", is_admin | is_participant)
rules.add_perm("submissions.manage_submissions", is_admin)
rules.add_perm("participants.manage_participants", is_admin)
