"""Reading submissions: whose are shown to whom, and the models a board may show."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from leaderboards.hooks import Submitted
from leaderboards.models import BoardVersion, Leaderboard
from panels.access import allowed
from participants.models import Participant
from submissions.models import State, Submission


def submitted_models() -> Submitted:
    """{model id: (the version it was submitted to, published?)} of every submission
    (leaderboards.hooks.submitted_models). A submission stored without a version (made before
    versions, or by hand) belongs to its board's first version, as the migration decided."""
    rows = list(
        Submission.objects.filter(model__isnull=False).values_list(
            "model_id", "state", "version_id", "leaderboard_id"
        )
    )
    first: dict[int, int] = {}
    if any(version is None for _m, _s, version, _b in rows):
        for board, pk in BoardVersion.objects.order_by("-number").values_list(
            "leaderboard_id", "pk"
        ):
            first[board] = pk
    return {
        model: (version or first.get(board), state == State.PUBLISHED)
        for model, state, version, board in rows
    }


def participant_of(user: Any) -> Participant | None:
    if not user.is_authenticated:
        return None
    return Participant.objects.filter(user=user, approved=True).first()


def submissions_for(user: Any) -> QuerySet[Submission]:
    """An admin's: all, publication requests first; a participant's: his own."""
    qs = Submission.objects.select_related("leaderboard", "version", "participant__user")
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
