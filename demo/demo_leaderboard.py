"""The demo's public leaderboard: the panels' past work, scripted, then aggregated and ranked.

The experts other than the one a newcomer logs in as ("anna") submit their demo assignments
through the real submission service with scripted scores — each demo model has a quality, the
chance its verdict sits at the top of a scale — so the aggregation job and the leaderboard have
verdicts to work on. Anna's own queue is left untouched. Idempotent: submitted assignments are
not touched again; the board is created once; its snapshot is recomputed on every seed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from django.conf import settings

from dataset.aggregation import aggregation_run
from dataset.models import TripleAggregate
from demo.demo_data import DEMO_EXPERT, DEMO_EXPERTS, DEMO_MODELS
from judging.services import config_save
from leaderboards.models import Leaderboard, Visibility
from leaderboards.services import snapshot_store
from material.models import Answer
from submissions.services import benchmark_instructions
from taxonomy.models import CriterionGroup
from work.models import Assignment, AssignmentKind, AssignmentStatus, TripleKind
from work.services import ScoreInput, assignment_submit

DEMO_BOARD = "pollux-demo"
DEMO_SERVER_JUDGE = "demo-judge-server"
# The chance a verdict is the scale's best, per demo model (by name): a visible ranking.
QUALITY = {m.name: q for m, q in zip(DEMO_MODELS, (0.55, 0.7, 0.4, 0.85), strict=True)}
RATIONALE = "Демо: оценка из истории панели, ответ проверен по критерию."


def _draw(*parts: Any) -> float:
    """A deterministic number in [0, 1) from its parts (the same demo every time)."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _score(values: list[int], best: int, quality: float, draw: float) -> int:
    if draw < quality:
        return best
    others = [v for v in values if v != best]
    return others[int(draw * 1000) % len(others)] if others else best


def demo_history_ensure() -> int:
    """Submit the open pointwise demo assignments of every demo expert but the login one;
    returns how many were submitted."""
    usernames = [p.username for p in DEMO_EXPERTS if p.username != DEMO_EXPERT]
    open_work = (
        Assignment.objects.filter(
            expert__user__username__in=usernames,
            kind=AssignmentKind.WORK,
            pair__isnull=True,
        )
        .exclude(status=AssignmentStatus.SUBMITTED)
        .select_related("answer__model", "expert__user")
        .order_by("pk")
    )
    submitted = 0
    for assignment in open_work:
        quality = QUALITY.get(assignment.answer.model.name, 0.5)
        items = []
        estimates = assignment.estimates.filter(triple__kind=TripleKind.POINTWISE).select_related(
            "triple__rubric", "triple__criterion"
        )
        for estimate in estimates:
            rubric = estimate.triple.rubric
            if rubric is None:
                continue
            if estimate.triple.group == CriterionGroup.CRITICAL:
                score = rubric.best_value  # no demo answer violates a critical criterion
            else:
                draw = _draw(assignment.answer_id, estimate.triple_id, estimate.expert_id)
                score = _score(rubric.values, rubric.best_value, quality, draw)
            items.append(ScoreInput(triple_id=estimate.triple_id, score=score, rationale=RATIONALE))
        if not items:
            continue
        result = assignment_submit(
            assignment=assignment,
            items=items,
            user=assignment.expert.user,
            submission_key=f"demo-history-{assignment.pk}",
            time_spent_ms=180_000,
        )
        submitted += int(result.ok and not result.already_submitted)
    return submitted


def demo_leaderboard_ensure() -> str:
    """The panels' past work, the aggregation, and a public leaderboard with a snapshot."""
    submitted = demo_history_ensure()
    if submitted or not TripleAggregate.objects.exists():
        aggregation_run()
    board, _created = Leaderboard.objects.get_or_create(
        slug=DEMO_BOARD,
        defaults={
            "title": "POLLUX demo",
            "description": "Демо-модели на демо-инструкциях: оценки экспертов и судей.",
            "visibility": Visibility.PUBLIC,
        },
    )
    if board.judge_config_id is None:
        # Participants may submit: scored by the local test server (demo.judge_server), which
        # ./scripts/demo starts beside the web server.
        board.judge_config = config_save(
            name=DEMO_SERVER_JUDGE,
            backend="openai",
            endpoint=settings.DEMO_JUDGE_URL,
            endpoint_model="demo-judge",
            model_family="demo",
            batch_size=64,
        )
        board.accepts_submissions = True
        board.fixed_settings = {"temperature": 0, "max_new_tokens": 1024}
        board.submissions_per_day = 20
        board.save()
    example = _example_file(board)
    # Recomputed on every seed (a demo judge run may have finished since): a small snapshot.
    snapshot_store(board)
    return (
        f"/leaderboards/{board.slug}/ ({board.get_visibility_display()}), "
        f"{submitted} past demo assignments submitted; participants submit to it "
        f"(an example answers file: {example})"
    )


def _example_file(board: Leaderboard) -> Path:
    """A ready answers file for the demo participant: every instruction of the board answered
    (a demo model's answer with a participant's touch), as the upload page expects."""
    path = Path(settings.BASE_DIR) / "var" / "demo" / "submission-example.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    first: dict[int, str] = {}
    for instruction_id, text in (
        Answer.objects.filter(instruction__in=benchmark_instructions(board), reserved__isnull=True)
        .order_by("pk")
        .values_list("instruction_id", "text")
    ):
        first.setdefault(instruction_id, text)
    lines = [
        json.dumps(
            {"instruction_id": pk, "answer": f"{text}\n\n(Ответ участника демо.)"},
            ensure_ascii=False,
        )
        for pk, text in sorted(first.items())
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
