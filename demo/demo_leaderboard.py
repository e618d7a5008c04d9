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
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from comparison.services import RankingParams, latest_ranking, ranking_store
from dataset.aggregation import aggregation_run
from dataset.models import TripleAggregate
from demo.demo_data import DEMO_ADMIN, DEMO_EXPERT, DEMO_EXPERTS
from demo.demo_markup import DEMO_PARTICIPANT
from demo.demo_material import DEMO_MODELS
from demo.demo_pairs import PAST_PREFIX
from demo.judge_server import verdict
from judge_worker import JudgeItem, JudgeOutput, parse_judge_output
from judging.models import JudgeRun
from judging.services import config_save, run_create, run_execute_inline
from leaderboards.models import BoardVersion, Leaderboard, Visibility
from leaderboards.services import snapshot_store
from leaderboards.versions import version_current, version_cut
from material.models import Answer
from protocol.pairwise import Label, unplace
from submissions.models import State, Submission
from submissions.services import (
    Metadata,
    publication_decide,
    publication_request,
    submission_refresh,
    submission_score,
    submission_upload,
    version_instruction_ids,
)
from taxonomy.models import CriterionGroup
from work.comparisons import ComparisonInput, comparison_submit
from work.models import Assignment, AssignmentKind, AssignmentStatus, TripleKind
from work.services import ScoreInput, assignment_submit

DEMO_BOARD = "pollux-demo"
# The demo's closed test: the same instructions, judge and settings, its version 1 closed (its
# inputs never downloadable); the participant enters with the demo's test server as his
# endpoint (DEMO_JUDGE_URL: it answers a generation prompt with a demo answer). A board of its
# own, so the open board's file walk and published rows stay as the README tells them.
DEMO_CLOSED_BOARD = "pollux-demo-closed"
DEMO_SERVER_JUDGE = "demo-judge-server"
# The chance a verdict is the scale's best, per demo model (by name): a visible ranking.
QUALITY = {m.name: q for m, q in zip(DEMO_MODELS, (0.55, 0.7, 0.4, 0.85), strict=True)}
RATIONALE = "Демо: оценка из истории панели, ответ проверен по критерию."


def draw(*parts: Any) -> float:
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
                chance = draw(assignment.answer_id, estimate.triple_id, estimate.expert_id)
                score = _score(rubric.values, rubric.best_value, quality, chance)
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


def _pair_label(quality_a: float, quality_b: float, chance: float) -> Label:
    """A scripted REPA label: a tie now and then, else the better model wins more often."""
    if chance < 0.12:
        return Label.BOTH_GOOD
    if chance < 0.2:
        return Label.BOTH_BAD
    share_a = quality_a / (quality_a + quality_b)
    return Label.A if (chance - 0.2) / 0.8 < share_a else Label.B


def demo_pairs_history_ensure() -> int:
    """Label every open assignment on the panel's past pairs (demo.demo_pairs, PAST_PREFIX),
    the login expert's included (they are her history, not her queue); returns how many."""
    open_work = (
        Assignment.objects.filter(
            kind=AssignmentKind.WORK, pair__external_id__startswith=PAST_PREFIX
        )
        .exclude(status=AssignmentStatus.SUBMITTED)
        .select_related("pair__answer_a__model", "pair__answer_b__model", "expert__user")
        .order_by("pk")
    )
    submitted = 0
    for assignment in open_work:
        pair = assignment.pair
        assert pair is not None
        labels = {}
        for estimate in assignment.estimates.select_related("triple__comparison_criterion"):
            criterion = estimate.triple.comparison_criterion
            assert criterion is not None
            label = _pair_label(
                QUALITY.get(pair.answer_a.model.name, 0.5),
                QUALITY.get(pair.answer_b.model.name, 0.5),
                draw(pair.pk, criterion.key, assignment.expert_id),
            )
            # The service takes the label as this expert's page showed it.
            labels[criterion.key] = unplace(label, swapped=assignment.swapped).value
        result = comparison_submit(
            assignment=assignment,
            data=ComparisonInput(labels=labels),
            user=assignment.expert.user,
            submission_key=f"demo-pairs-history-{assignment.pk}",
            time_spent_ms=240_000,
        )
        submitted += int(result.ok)
    return submitted


def demo_leaderboard_ensure() -> str:
    """The panels' past work, the aggregation, the experts' model rankings of the side-by-side
    pairs, and a public leaderboard with a snapshot."""
    submitted = demo_history_ensure()
    labelled = demo_pairs_history_ensure()
    if submitted or labelled or not TripleAggregate.objects.exists():
        aggregation_run()
    if labelled or latest_ranking() is None:
        ranking_store(RankingParams())
    board, _created = Leaderboard.objects.get_or_create(
        slug=DEMO_BOARD,
        defaults={
            "title": "POLLUX demo",
            "description": "Демо-модели на демо-инструкциях: оценки экспертов и судей.",
            "visibility": Visibility.PUBLIC,
        },
    )
    # Participants may submit: scored by the local test server (demo.judge_server), which
    # ./scripts/demo starts beside the web server; its address follows DEMO_JUDGE_URL on every
    # seed (a new configuration version when it moved). A judge an admin designated is kept.
    current = board.judge_config
    if current is None or current.name == DEMO_SERVER_JUDGE:
        board.judge_config = config_save(
            name=DEMO_SERVER_JUDGE,
            backend="openai",
            endpoint=settings.DEMO_JUDGE_URL,
            endpoint_model="demo-judge",
            model_family="demo",
            batch_size=64,
            # An unreachable server fails the upload's scoring at once instead of retrying.
            decoding={"do_sample": False, "max_new_tokens": 64, "max_retries": 0},
        )
        if current is None:
            board.accepts_submissions = True
            board.fixed_settings = {"temperature": 0, "max_new_tokens": 1024}
            board.submissions_per_day = 20
        board.save()
    closed = _closed_board_ensure(board)
    if board.judge_config is not None and board.judge_config.name == DEMO_SERVER_JUDGE:
        # The demo server's judge at its new address is the same judge: a version frozen with
        # it follows the address (a real judge change is a new version, cut by an admin).
        BoardVersion.objects.filter(
            leaderboard__in=[board, closed], judge_config__name=DEMO_SERVER_JUDGE
        ).update(judge_config=board.judge_config)
    # Version 1: the demo's instructions as the seed wrote them; an instruction accepted later
    # (the README's writing walk-through) is not in it until an admin cuts version 2.
    version_current(board)
    example = _example_file(board)
    judged = _demo_server_run(board)
    published = _demo_submission_ensure(board)
    # Recomputed on every seed (a demo judge run may have finished since): a small snapshot.
    snapshot_store(board)
    snapshot_store(closed)
    return (
        f"/leaderboards/{board.slug}/ ({board.get_visibility_display()}), "
        f"{submitted} past demo assignments submitted, {labelled} past pairs labelled; "
        f"judge rows of the demo test server: "
        f"{judged}; {published}; participants submit to it (an example answers file: {example})"
        f"; its closed test /leaderboards/{closed.slug}/ takes the endpoint "
        f"{settings.DEMO_JUDGE_URL}"
    )


def _closed_board_ensure(board: Leaderboard) -> Leaderboard:
    """The demo's closed test: the open board's judge, settings and task types, its version 1
    closed."""
    closed, created = Leaderboard.objects.get_or_create(
        slug=DEMO_CLOSED_BOARD,
        defaults={
            "title": "POLLUX demo · closed test",
            "description": (
                "Закрытый тест демо: входные данные не выдаются; участник указывает эндпоинт "
                "своей модели, ответы генерирует платформа."
            ),
            "visibility": Visibility.PUBLIC,
            "accepts_submissions": True,
            "fixed_settings": dict(board.fixed_settings or {}),
            "submissions_per_day": board.submissions_per_day,
        },
    )
    if created or closed.judge_config is None or closed.judge_config.name == DEMO_SERVER_JUDGE:
        closed.judge_config = board.judge_config
        closed.save(update_fields=["judge_config"])
    if created:
        closed.task_groups.set(board.task_groups.all())
    if not closed.versions.exists():
        version_cut(
            closed,
            actor=None,
            closed=True,
            note="Закрытый тест: входные данные не публикуются и не попадут в обучение моделей.",
        )
    return closed


class _ServerBackend:
    """The demo test server's verdicts (demo.judge_server.verdict) computed in this process:
    the seed scores without a server running (./scripts/demo starts one for the web server)."""

    def judge(self, items: Sequence[JudgeItem]) -> list[JudgeOutput]:
        outputs = []
        for item in items:
            prompt = "\n".join(m.get("content", "") for m in item.messages)
            text = verdict(prompt)
            outputs.append(
                JudgeOutput(
                    item_id=item.item_id,
                    raw_text=text,
                    parse=parse_judge_output(text, item.allowed_scores),
                    prompt_tokens=len(prompt) // 4,
                    generated_tokens=16,
                    seconds=0.0,
                )
            )
        return outputs


def _demo_server_run(board: Leaderboard) -> str:
    """The demo test server's verdicts on every demo answer, once: the public board's judge-based
    rows (named after the server: its numbers are not a model's)."""
    config = board.judge_config
    assert config is not None
    if JudgeRun.objects.filter(config__name=DEMO_SERVER_JUDGE, scope={"all": True}).exists():
        return "already there"
    run = run_create(config=config, scope={"all": True}, enqueue=False)
    run = run_execute_inline(run=run, backend_factory=lambda _run: _ServerBackend())
    return f"run {run.pk} {run.status}, {run.done} verdicts"


def _demo_submission_ensure(board: Leaderboard) -> str:
    """A published submission of the demo participant, scored in-process: the board shows a
    participant's row, his page a history. Not the example file's answers, so the newcomer's
    upload of that file is not a duplicate."""
    user = get_user_model().objects.filter(username=DEMO_PARTICIPANT.username).first()
    participant = getattr(user, "participant", None)
    if participant is None:
        return "no demo participant"
    if Submission.objects.filter(participant=participant, leaderboard=board).exists():
        return "the demo participant's submission: already there"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "answers.jsonl"
        lines = _example_lines(board, "(Сабмит команды из демо.)")
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        submission = submission_upload(
            participant=participant,
            board=board,
            path=path,
            file_name="orfograf-answers.jsonl",
            meta=Metadata(
                model_name="Orfograf-LM",
                model_version="0.5",
                parameters="1.7B",
                gpus="1× A100 40GB",
                logs="Демо: логи генерации команды «Орфограф».",
                inference_settings={"temperature": 0, "max_new_tokens": 1024},
            ),
            actor=user,
            queue_scoring=False,
        )
    run = submission_score(submission.pk, enqueue_run=False)
    if run is not None:
        run_execute_inline(run=run, backend_factory=lambda _run: _ServerBackend())
    # Finished here too: the judging hook runs after a commit, which an enclosing transaction
    # (a test's) would hold back.
    submission.refresh_from_db()
    submission_refresh(submission)
    if submission.state == State.SCORED:
        publication_request(submission, actor=user)
        admin = get_user_model().objects.filter(username=DEMO_ADMIN.username).first()
        publication_decide(submission, approve=True, reason="", actor=admin)
        submission.refresh_from_db()
    return f"the demo participant's submission {submission.pk}: {submission.state}"


def _example_file(board: Leaderboard) -> Path:
    """A ready answers file for the demo participant: every instruction of the board answered
    (a demo model's answer with a participant's touch), as the upload page expects."""
    path = Path(settings.DEMO_DIR) / "submission-example.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = _example_lines(board, "(Ответ участника демо.)")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _example_lines(board: Leaderboard, touch: str) -> list[str]:
    """JSON lines answering every instruction of the board's current version: the first demo
    answer to it, with `touch` added (so two files made with different touches are different
    answers)."""
    first: dict[int, str] = {}
    ids = version_instruction_ids(version_current(board))
    for instruction_id, text in (
        Answer.objects.filter(instruction_id__in=ids, reserved__isnull=True)
        .order_by("pk")
        .values_list("instruction_id", "text")
    ):
        first.setdefault(instruction_id, text)
    return [
        json.dumps({"instruction_id": pk, "answer": f"{text}\n\n{touch}"}, ensure_ascii=False)
        for pk, text in sorted(first.items())
    ]
