"""Participants' submissions: upload with metadata and row errors (nothing stored), the limits
(per day, size, the same answers twice), the settings flag, automatic scoring by the board's
designated judge (a real HTTP judge: the fake OpenAI-compatible server) checked against a plain
computation, the state machine, publication onto the board, sending to the panels, and who
sees what."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.test import Client
from django.urls import reverse

from judging.backends import clear_cache
from judging.models import JudgeConfig, JudgeEstimate, RunStatus
from judging.services import BatchIncomplete, config_save, run_execute_inline
from judging.tasks import _backend as judge_backend
from leaderboards.models import Leaderboard, LeaderboardSnapshot, Visibility
from leaderboards.services import snapshot_store
from material.models import Answer, Instruction, LanguageModel
from participants.models import Participant
from protocol.leaderboard import normalise
from submissions.models import State, Submission
from submissions.services import MAX_ERRORS, publication_decide, publication_request
from taxonomy.models import BestEnd, CriterionGroup
from tests.conftest import PASSWORD, Personas, make_user
from tests.judging.fake_openai import fake_openai
from work.assignments import assignments_build
from work.models import Assignment, ReservedAnswer, Triple

pytestmark = pytest.mark.django_db(transaction=False)

REFERENCE = "Эталонный ответ, который участники не видят"


def _reply(prompt: str) -> str:
    # A deterministic verdict per prompt: 0, 1 or 2 (a binary scale's parser refuses 2, so some
    # verdicts fail to parse, as with a real judge; those are left out).
    return f"[FEEDBACK] Оценка. [RESULT] {sum(map(ord, prompt)) % 3} [END]"


@dataclass
class Bench:
    board: Leaderboard
    instructions: list[Instruction]
    server: dict[str, Any]
    participant: Participant
    client: Client


@pytest.fixture
def bench(personas: Personas, make_answer: Callable[..., Answer]) -> Iterator[Bench]:
    answers = [make_answer(model="Base", reference=REFERENCE) for _ in range(3)]
    instructions = [a.instruction for a in answers]
    with fake_openai(reply_for=_reply) as server:
        clear_cache()
        config = config_save(name="designated", backend="openai", endpoint=server["url"])
        board = Leaderboard.objects.create(
            slug="bench",
            title="Bench",
            accepts_submissions=True,
            judge_config=config,
            fixed_settings={"temperature": 0},
            submissions_per_day=3,
            # Participants read internal boards (a private one is staff's only).
            visibility=Visibility.INTERNAL,
        )
        assert instructions[0].task is not None
        board.task_groups.set([instructions[0].task.group_id])
        user = make_user("pat")
        participant = Participant.objects.create(user=user, organisation="Team Pat", approved=True)
        client = Client()
        client.force_login(user)
        yield Bench(board, instructions, server, participant, client)
        clear_cache()


def _csv(rows: list[tuple[Any, str]], header: str = "instruction_id,answer") -> bytes:
    lines = [header] + [f'{i},"{t}"' for i, t in rows]
    return ("\n".join(lines) + "\n").encode()


def _answers(b: Bench, tag: str = "") -> list[tuple[Any, str]]:
    return [(i.pk, f"Ответ участника {tag}{i.pk}") for i in b.instructions]


def _meta(**extra: Any) -> dict[str, Any]:
    return {
        "model_name": "PatLM",
        "model_version": "1.0",
        "parameters": "7B",
        "inference_settings": json.dumps({"temperature": 0}),
        "gpus": "1× H100",
        "logs": "https://example.org/logs/1",
        **extra,
    }


def _upload(
    b: Bench, content: bytes, name: str = "answers.csv", client: Client | None = None, **meta: Any
) -> Any:
    upload = io.BytesIO(content)
    upload.name = name
    return (client or b.client).post(
        reverse("submission_new", args=[b.board.slug]), {"file": upload, **_meta(**meta)}
    )


def _submit(b: Bench, capture: Any, tag: str = "", **meta: Any) -> Submission:
    with capture(execute=True):
        response = _upload(b, _csv(_answers(b, tag)), **meta)
    assert response.status_code == 302, response.content.decode()[:2000]
    return Submission.objects.get(pk=int(response["Location"].rstrip("/").split("/")[-1]))


def _plain_mean(model_id: int) -> float:
    """The POLLUX leaderboard score computed plainly from the judge's stored verdicts under the
    board's gate rule, POLLUX's (the default): each non-critical verdict normalised on its
    rubric, an answer with a violated critical criterion (the top of its scale) left out, the
    mean over the verdicts left."""
    rows = list(
        JudgeEstimate.objects.filter(triple__answer__model_id=model_id, parse_ok=True)
        .select_related("triple__rubric")
        .values_list("triple__answer_id", "triple__group", "score", "triple__rubric")
    )
    from taxonomy.models import Rubric

    rubrics = {r.pk: r for r in Rubric.objects.all()}
    gated = {
        a
        for a, group, score, rubric in rows
        if group == CriterionGroup.CRITICAL and score == max(rubrics[rubric].values)
    }
    values = [
        normalise(
            float(score or 0),
            rubrics[rubric].values,
            best_is_lowest=rubrics[rubric].best_end == BestEnd.LOWEST,
        )
        for a, group, score, rubric in rows
        if group != CriterionGroup.CRITICAL and a not in gated
    ]
    return sum(values) / len(values)


def test_a_submission_is_scored_by_the_designated_judge_and_shown_only_to_its_owner(
    bench: Bench, django_capture_on_commit_callbacks: Any, personas: Personas
) -> None:
    s = _submit(bench, django_capture_on_commit_callbacks)
    assert s.state == State.SCORED, (s.state, s.message)
    assert s.judge_run is not None and s.judge_run.status == RunStatus.DONE
    # Every triple of the submission's answers was judged through the HTTP judge.
    triples = Triple.objects.filter(answer__model=s.model).count()
    assert triples > 0 and s.judge_run.total == triples == s.judge_run.done
    assert bench.server["requests"] >= triples
    assert s.model_id is not None
    assert s.result["mean"] == pytest.approx(_plain_mean(s.model_id))
    assert s.result["low"] <= s.result["mean"] <= s.result["high"]
    # The judge was given the private reference.
    assert s.answers == 3 and not s.settings_mismatch
    # The answers are reserved: no expert is assigned them.
    assert ReservedAnswer.objects.filter(answer__model=s.model).count() == 3
    assignments_build()
    assert not Assignment.objects.filter(answer__model=s.model).exists()
    # The owner reads his private score; another participant, an expert, a supervisor do not.
    page = bench.client.get(reverse("submission", args=[s.pk]))
    assert page.status_code == 200 and "submission-score" in page.content.decode()
    other = make_user("other")
    Participant.objects.create(user=other, approved=True)
    for user, status in [
        (other, 404),
        (personas.expert_a.user, 403),
        (personas.supervisor_a, 403),
    ]:
        c = Client()
        c.force_login(user)
        assert c.get(reverse("submission", args=[s.pk])).status_code == status, user
        assert c.get(reverse("submissions")).status_code == (200 if user == other else 403)
        if user == other:
            assert "PatLM" not in c.get(reverse("submissions")).content.decode()
    anonymous = Client().get(reverse("submission", args=[s.pk]))
    assert anonymous.status_code == 302 and "login" in anonymous["Location"]


def test_the_judge_prompt_carries_the_private_reference_and_inputs_do_not(
    bench: Bench, django_capture_on_commit_callbacks: Any
) -> None:
    seen: list[str] = []

    def reply(prompt: str) -> str:
        seen.append(prompt)
        return _reply(prompt)

    with fake_openai(reply_for=reply) as server:
        clear_cache()
        config = bench.board.judge_config
        assert config is not None
        bench.board.judge_config = config_save(
            name="designated", backend="openai", endpoint=server["url"]
        )
        bench.board.save()
        _submit(bench, django_capture_on_commit_callbacks)
    assert seen and all(REFERENCE in p for p in seen)
    for fmt in ("jsonl", "xlsx"):
        response = bench.client.get(reverse("submission_inputs", args=[bench.board.slug, fmt]))
        assert response.status_code == 200
        assert REFERENCE.encode() not in response.content
    lines = (
        bench.client.get(reverse("submission_inputs", args=[bench.board.slug, "jsonl"]))
        .content.decode()
        .splitlines()
    )
    assert sorted(int(json.loads(x)["instruction_id"]) for x in lines) == sorted(
        i.pk for i in bench.instructions
    )
    assert json.loads(lines[0])["instruction"] == bench.instructions[0].text


def test_a_bad_file_is_refused_whole_with_rows_and_columns_named(bench: Bench) -> None:
    before = (Submission.objects.count(), LanguageModel.objects.count(), Answer.objects.count())
    a, b, c = bench.instructions
    cases: list[tuple[bytes, str, list[tuple[Any, Any, str]]]] = [
        (
            _csv([(a.pk, "x"), (b.pk, "y")], header="id_of,answer"),
            "csv",
            [(1, "instruction_id", "missing_column")],
        ),
        (
            _csv([(a.pk, "x"), (999999, "y"), (a.pk, "z"), (c.pk, "")]),
            "csv",
            [
                (3, "instruction_id", "unknown_instruction"),
                (4, "instruction_id", "duplicate"),
                (5, "answer", "required"),
            ],
        ),
        (_csv([(a.pk, "x"), (b.pk, "y")]), "csv", [(None, "instruction_id", "missing_answers")]),
        (b"\xff\xfe\x00garbage", "csv", []),
        (b"{not json\n", "jsonl", []),
    ]
    for content, ext, expected in cases:
        response = _upload(bench, content, name=f"answers.{ext}")
        assert response.status_code == 422, response.content.decode()[:500]
        errors = response.context["errors"]
        assert errors
        got = [(e.row, e.column, e.code) for e in errors]
        for item in expected:
            assert item in got, (item, got)
    assert (
        Submission.objects.count(),
        LanguageModel.objects.count(),
        Answer.objects.count(),
    ) == before
    # Bad metadata: the field is named, nothing stored.
    response = _upload(bench, _csv(_answers(bench)), inference_settings="[1, 2]")
    assert response.status_code == 400 and "inference_settings" in response.context["form"].errors
    response = _upload(bench, _csv(_answers(bench)), logs="")
    assert response.status_code == 400 and "logs" in response.context["form"].errors
    assert Submission.objects.count() == before[0]


def test_too_many_errors_are_cut_at_the_limit(bench: Bench) -> None:
    rows = [(10_000_000 + n, "x") for n in range(MAX_ERRORS + 20)]
    response = _upload(bench, _csv(rows))
    assert response.status_code == 422 and len(response.context["errors"]) == MAX_ERRORS


def test_limits_per_day_size_and_the_same_answers_twice(
    bench: Bench, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    first = _submit(bench, django_capture_on_commit_callbacks, tag="a")
    # The same answers again, as JSON lines this time: a duplicate whatever the format.
    jsonl = "".join(
        json.dumps({"instruction_id": i, "answer": t}, ensure_ascii=False) + "\n"
        for i, t in _answers(bench, "a")
    ).encode()
    response = _upload(bench, jsonl, name="again.jsonl")
    assert response.status_code == 409
    assert f"submission {first.pk}" in response.context["errors"][0].message
    _submit(bench, django_capture_on_commit_callbacks, tag="b")
    _submit(bench, django_capture_on_commit_callbacks, tag="c")
    response = _upload(bench, _csv(_answers(bench, "d")))
    assert response.status_code == 429 and response.context["errors"][0].code == "daily_limit"
    assert Submission.objects.count() == 3
    # Size: refused before reading.
    bench.board.submissions_per_day = 10
    bench.board.save()
    settings.SUBMISSION_MAX_BYTES = 100
    response = _upload(bench, _csv(_answers(bench, "e")))
    assert response.status_code == 400 and "file" in response.context["form"].errors
    assert Submission.objects.count() == 3


def test_settings_that_differ_from_the_fixed_ones_are_flagged(
    bench: Bench, django_capture_on_commit_callbacks: Any
) -> None:
    s = _submit(
        bench,
        django_capture_on_commit_callbacks,
        inference_settings=json.dumps({"temperature": 0.7, "top_p": 0.9}),
    )
    assert s.settings_mismatch == [{"setting": "temperature", "expected": 0, "given": 0.7}]
    assert "settings-flag" in bench.client.get(reverse("submission", args=[s.pk])).content.decode()
    same = _submit(bench, django_capture_on_commit_callbacks, tag="z")
    assert same.settings_mismatch == []


def test_publication_state_machine_and_the_board(
    bench: Bench, django_capture_on_commit_callbacks: Any, personas: Personas
) -> None:
    s = _submit(bench, django_capture_on_commit_callbacks)
    admin = Client()
    admin.force_login(personas.admin)
    decide = reverse("submission_decide", args=[s.pk])
    request = reverse("submission_request", args=[s.pk])
    # Not requested yet: nothing to decide; the participant cannot decide.
    assert admin.post(decide, {"decision": "approve"}).status_code == 409
    assert bench.client.post(decide, {"decision": "approve"}).status_code == 403

    # The board does not show the scored, unpublished model.
    def board_models() -> set[int]:
        snap = snapshot_store(bench.board, rounds=50)
        return {int(m) for m in snap.data["models"]}

    assert s.model_id not in board_models()
    assert bench.client.post(request).status_code == 302
    s.refresh_from_db()
    assert s.state == State.REQUESTED
    assert bench.client.post(request).status_code == 409  # twice: refused
    # A rejection needs a reason.
    assert admin.post(decide, {"decision": "reject", "reason": ""}).status_code == 409
    with django_capture_on_commit_callbacks(execute=True):
        assert admin.post(decide, {"decision": "approve"}).status_code == 302
    s.refresh_from_db()
    assert s.state == State.PUBLISHED
    # Approval recomputed the board: the model is on it, with the participant's score.
    latest = LeaderboardSnapshot.objects.filter(leaderboard=bench.board).first()
    assert latest is not None
    source = next(x for x in latest.data["sources"] if x["key"] == f"judge:{s.judge_config_id}")
    row = next(m for m in source["models"] if m["model"] == s.model_id)
    assert row["mean"] == pytest.approx(s.result["mean"])
    assert [e.new for e in s.events.all()] == [
        State.UPLOADED,
        State.SCORING,
        State.SCORED,
        State.REQUESTED,
        State.PUBLISHED,
    ]
    # A second submission, rejected: never on the board, the reason shown to its owner.
    t = _submit(bench, django_capture_on_commit_callbacks, tag="r")
    bench.client.post(reverse("submission_request", args=[t.pk]))
    assert (
        admin.post(
            reverse("submission_decide", args=[t.pk]),
            {"decision": "reject", "reason": "Логи не приложены"},
        ).status_code
        == 302
    )
    t.refresh_from_db()
    assert t.state == State.REJECTED
    assert (
        "Логи не приложены" in bench.client.get(reverse("submission", args=[t.pk])).content.decode()
    )
    assert t.model_id not in board_models() and s.model_id in board_models()


def test_a_failed_scoring_is_scored_again_by_an_admin(
    bench: Bench, django_capture_on_commit_callbacks: Any, personas: Personas
) -> None:
    with fake_openai(fail_first=10_000) as down:
        clear_cache()
        bench.board.judge_config = config_save(
            name="designated",
            backend="openai",
            endpoint=down["url"],
            batch_size=64,
            # No client-side retries: the failures reach the batch at once.
            decoding={"do_sample": False, "max_new_tokens": 64, "max_retries": 0},
        )
        bench.board.save()
        # Eager tasks (the test settings) raise what a worker records on the batch's job.
        with pytest.raises(BatchIncomplete), django_capture_on_commit_callbacks(execute=True):
            _upload(bench, _csv(_answers(bench)))
        s = Submission.objects.get()
        assert s.state == State.SCORING and s.judge_run is not None
        # The other batches, as the workers would run them (each fails in turn).
        with django_capture_on_commit_callbacks(execute=True):
            run_execute_inline(run=s.judge_run, backend_factory=judge_backend)
    s.refresh_from_db()
    assert s.state == State.FAILED and s.message
    admin = Client()
    admin.force_login(personas.admin)
    # The participant cannot; the admin can, once the judge answers again.
    assert bench.client.post(reverse("submission_rescore", args=[s.pk])).status_code == 403
    with fake_openai(reply_for=_reply) as up:
        clear_cache()
        assert s.judge_config is not None
        JudgeConfig.objects.filter(pk=s.judge_config.pk).update(endpoint=up["url"])
        with django_capture_on_commit_callbacks(execute=True):
            assert admin.post(reverse("submission_rescore", args=[s.pk])).status_code == 302
    s.refresh_from_db()
    assert s.state == State.SCORED, s.message


def test_an_admin_sends_the_answers_to_the_panels(
    bench: Bench, django_capture_on_commit_callbacks: Any, personas: Personas
) -> None:
    s = _submit(bench, django_capture_on_commit_callbacks)
    admin = Client()
    admin.force_login(personas.admin)
    assert bench.client.post(reverse("submission_send", args=[s.pk])).status_code == 403
    assert admin.post(reverse("submission_send", args=[s.pk])).status_code == 302
    assert not ReservedAnswer.objects.filter(answer__model=s.model).exists()
    assert admin.post(reverse("submission_send", args=[s.pk])).status_code == 409
    assignments_build()
    assert Assignment.objects.filter(answer__model=s.model).exists()
    # Still unpublished: its expert and judge rows stay off the board.
    snap = snapshot_store(bench.board, rounds=50)
    assert str(s.model_id) not in snap.data["models"]


def test_registration_waits_for_an_admin_and_a_closed_board_refuses(
    bench: Bench, personas: Personas, django_capture_on_commit_callbacks: Any
) -> None:
    anonymous = Client()
    response = anonymous.post(
        reverse("participant_register"),
        {
            "username": "newteam",
            "email": "team@example.org",
            "organisation": "New Team",
            "password1": PASSWORD + "x9!",
            "password2": PASSWORD + "x9!",
        },
    )
    assert response.status_code == 200, response.content.decode()[:1000]
    participant = Participant.objects.get(user__username="newteam")
    assert not participant.approved
    # Inactive until approved: the account logs in to nothing (not even an internal board).
    assert not participant.user.is_active
    newcomer = Client()
    newcomer.force_login(participant.user)
    refused = newcomer.get(reverse("submission_new", args=[bench.board.slug]))
    assert refused.status_code == 302 and "/accounts/login/" in refused["Location"]
    assert newcomer.get(reverse("leaderboard", args=[bench.board.slug])).status_code == 302
    admin = Client()
    admin.force_login(personas.admin)
    assert (
        bench.client.post(reverse("participant_approve", args=[participant.pk])).status_code == 403
    )
    assert (
        admin.post(
            reverse("participant_approve", args=[participant.pk]), {"approved": "1"}
        ).status_code
        == 302
    )
    newcomer = Client()
    newcomer.force_login(participant.user)
    assert newcomer.get(reverse("submission_new", args=[bench.board.slug])).status_code == 200
    # A board that stops taking submissions: 404 for the page, 403-coded refusal in the service.
    Leaderboard.objects.filter(pk=bench.board.pk).update(accepts_submissions=False)
    assert newcomer.get(reverse("submission_new", args=[bench.board.slug])).status_code == 404
    assert (
        newcomer.get(reverse("submission_inputs", args=[bench.board.slug, "jsonl"])).status_code
        == 404
    )


def test_hostile_files_are_refused_unopened_or_by_column(bench: Bench) -> None:
    """A zip bomb posing as a workbook, Parquet with an answer column of numbers, a UTF-16
    file: 422 with the problem named, nothing stored."""
    from tests.security.test_uploads import _bomb

    buffer = io.BytesIO()
    pq.write_table(
        pa.table(
            {
                "instruction_id": [i.pk for i in bench.instructions],
                "answer": list(range(len(bench.instructions))),
            }
        ),
        buffer,
    )
    cases = [
        ("bomb.xlsx", _bomb(60), None),
        ("numbers.parquet", buffer.getvalue(), "answer"),
        ("utf16.csv", _csv(_answers(bench)).decode().encode("utf-16"), None),
    ]
    for name, content, column in cases:
        response = _upload(bench, content, name=name)
        assert response.status_code == 422, name
        errors = response.context["errors"]
        assert errors, name
        if column:
            assert any(e.column == column for e in errors), [e.as_dict() for e in errors]
    assert not Submission.objects.exists()


def test_a_private_board_is_not_open_to_participants_even_taking_submissions(
    bench: Bench,
) -> None:
    Leaderboard.objects.filter(pk=bench.board.pk).update(visibility=Visibility.PRIVATE)
    assert "Bench" not in bench.client.get(reverse("submissions")).content.decode()
    assert bench.client.get(reverse("submission_new", args=[bench.board.slug])).status_code == 404
    inputs = reverse("submission_inputs", args=[bench.board.slug, "jsonl"])
    assert bench.client.get(inputs).status_code == 404


def test_forged_ids_and_settings_are_refused_not_crashed(bench: Bench, personas: Personas) -> None:
    a, _b, c = bench.instructions
    # "²" passes str.isdigit but not int(); a 5,000-digit id passes neither limit.
    response = _upload(bench, _csv([(a.pk, "x"), ("²", "y"), ("9" * 5000, "z"), (c.pk, "w")]))
    assert response.status_code == 422
    codes = [(e.row, e.code) for e in response.context["errors"]]
    assert (3, "unknown_instruction") in codes and (4, "unknown_instruction") in codes
    for forged in ('{"temperature": NaN}', '{"t": Infinity}', '{"t": "a\\u0000b"}'):
        response = _upload(bench, _csv(_answers(bench)), inference_settings=forged)
        assert response.status_code == 400, forged
        assert "inference_settings" in response.context["form"].errors
    admin = Client()
    admin.force_login(personas.admin)
    response = admin.post(
        reverse("leaderboard_submission_settings", args=[bench.board.slug]),
        {
            "accepts_submissions": "on",
            "judge_config": str(bench.board.judge_config_id),
            "fixed_settings": '{"temperature": NaN}',
            "submissions_per_day": "3",
        },
    )
    assert response.status_code == 400 and "fixed_settings" in response.content.decode()
    assert not Submission.objects.exists()


def test_a_submission_is_published_on_its_own_board_only(
    bench: Bench, django_capture_on_commit_callbacks: Any, personas: Personas
) -> None:
    s = _submit(bench, django_capture_on_commit_callbacks)
    publication_request(s, actor=None)
    with django_capture_on_commit_callbacks(execute=True):
        publication_decide(s, approve=True, reason="", actor=personas.admin)
    other = Leaderboard.objects.create(slug="other", title="Other")
    other.task_groups.set(bench.board.task_groups.all())
    assert str(s.model_id) in snapshot_store(bench.board, rounds=0).data["models"]
    assert str(s.model_id) not in snapshot_store(other, rounds=0).data["models"]
    # The team's name is never taken for the human baseline's mark.
    assert s.model is not None and s.model.provider.startswith("participant: ")


def test_the_daily_limit_counts_stored_submissions_whatever_became_of_them(
    bench: Bench, django_capture_on_commit_callbacks: Any
) -> None:
    # As docs/submissions.md says: a file refused by the checks is not stored and does not
    # count; a stored one counts whatever its state (here: failed).
    for _ in range(4):
        refused = _upload(bench, _csv(_answers(bench, "x")[:1]))
        assert refused.status_code == 422
    first = _submit(bench, django_capture_on_commit_callbacks, tag="a")
    Submission.objects.filter(pk=first.pk).update(state=State.FAILED)
    _submit(bench, django_capture_on_commit_callbacks, tag="b")
    _submit(bench, django_capture_on_commit_callbacks, tag="c")
    response = _upload(bench, _csv(_answers(bench, "d")))
    assert response.status_code == 429 and response.context["errors"][0].code == "daily_limit"


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_answer_column_under_another_name_is_one_error_naming_what_was_found(
    bench: Bench, fmt: str
) -> None:
    rows = _answers(bench, "t")
    if fmt == "jsonl":
        content = "".join(
            json.dumps({"instruction_id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in rows
        ).encode()
    else:
        content = _csv(rows, header="instruction_id,text")
    response = _upload(bench, content, name=f"answers.{fmt}")
    assert response.status_code == 422
    errors = response.context["errors"]
    # One error, not "the answer is empty" per row: the column, and the columns the file has.
    assert [(e.column, e.code) for e in errors] == [("answer", "missing_column")]
    assert "instruction_id, text" in errors[0].message
    assert Submission.objects.count() == 0


def test_the_private_result_says_how_many_answers_a_critical_criterion_gated(
    bench: Bench, django_capture_on_commit_callbacks: Any
) -> None:
    # The demo's walk read "scored 1 answer" for a file of 12: the other 11 were gated by a
    # critical criterion under the board's rule, and the page did not say so.
    s = _submit(bench, django_capture_on_commit_callbacks)
    s.result = {**s.result, "answers": 1, "gated_answers": 2}
    s.save(update_fields=["result"])
    url = reverse("submission", args=[s.pk])
    english = bench.client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "2 more answers were gated by a critical criterion" in english
    bench.client.cookies["django_language"] = "ru"
    russian = bench.client.get(url).content.decode()
    assert "Ещё 2 ответа отсечены критическим критерием" in russian
    s.result = {**s.result, "gated_answers": 0}
    s.save(update_fields=["result"])
    assert "submission-gated" not in bench.client.get(url).content.decode()
