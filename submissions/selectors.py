"""Reading submissions: whose are shown to whom, and the models a board may show."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from leaderboards.models import Leaderboard
from panels.access import allowed
from participants.models import Participant
from submissions.models import State, Submission


def submitted_models() -> dict[int, int | None]:
    """{model id: the board it is published on, or None} of every submission
    (leaderboards.hooks.submitted_models)."""
    return {
        model: board if state == State.PUBLISHED else None
        for model, state, board in Submission.objects.filter(model__isnull=False).values_list(
            "model_id", "state", "leaderboard_id"
        )
    }


def participant_of(user: Any) -> Participant | None:
    if not user.is_authenticated:
        return None
    return Participant.objects.filter(user=user, approved=True).first()


def submissions_for(user: Any) -> QuerySet[Submission]:
    """An admin's: all, publication requests first; a participant's: his own."""
    qs = Submission.objects.select_related("leaderboard", "participant__user")
    if allowed(user, "submissions.manage_submissions"):
        return qs
    return qs.filter(participant__user=user, participant__approved=True)


def open_boards(user: Any) -> list[Leaderboard]:
    """The boards the user may submit to."""
    return [
        b
        for b in Leaderboard.objects.filter(accepts_submissions=True, judge_config__isnull=False)
        if allowed(user, "submissions.submit_to", b)
    ]
