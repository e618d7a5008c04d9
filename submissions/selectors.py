"""Reading submissions: whose are shown to whom, and the models a board may show."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet

from leaderboards.hooks import Submitted
from leaderboards.models import BoardVersion, Leaderboard, VersionItem
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


def frozen_instructions(rows: Sequence[tuple[int, int, int]]) -> dict[int, tuple[str, str]]:
    """(text, reference answer) of each answer's instruction as the version its submission
    answers froze it (judging.hooks.frozen_instructions), for the rows (answer id, model id,
    instruction id) whose model is a submission's; the others are not named."""
    versions = dict(
        Submission.objects.filter(
            model_id__in={model for _a, model, _i in rows}, version__isnull=False
        ).values_list("model_id", "version_id")
    )
    if not versions:
        return {}
    copies = {
        (version, instruction): (text, reference)
        for version, instruction, text, reference in VersionItem.objects.filter(
            version_id__in=set(versions.values()),
            instruction_id__in={i for _a, model, i in rows if model in versions},
        ).values_list("version_id", "instruction_id", "text", "reference_answer")
    }
    return {
        answer: copies[(versions[model], instruction)]
        for answer, model, instruction in rows
        if model in versions and (versions[model], instruction) in copies
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
    """The boards the user may submit to, each with `closed`: whether its current version is a
    closed test (an endpoint, not a file; no inputs to download)."""
    boards = [
        b
        for b in Leaderboard.objects.filter(accepts_submissions=True, judge_config__isnull=False)
        if allowed(user, "submissions.submit_to", b)
    ]
    latest: dict[int, bool] = {}
    for board_id, closed in (
        BoardVersion.objects.filter(leaderboard__in=boards)
        .order_by("leaderboard_id", "number")
        .values_list("leaderboard_id", "closed")
    ):
        latest[board_id] = closed
    for board in boards:
        board.closed = latest.get(board.pk, False)  # type: ignore[attr-defined]
    return boards


def frozen_texts(model_id: int, ids: Sequence[int]) -> dict[int, str]:
    """The texts a submission's version froze, for its model's generation
    (generation.hooks.frozen_texts)."""
    version_id = (
        Submission.objects.filter(model_id=model_id, version__isnull=False)
        .values_list("version_id", flat=True)
        .first()
    )
    if version_id is None:
        return {}
    return dict(
        VersionItem.objects.filter(version_id=version_id, instruction_id__in=list(ids)).values_list(
            "instruction_id", "text"
        )
    )
