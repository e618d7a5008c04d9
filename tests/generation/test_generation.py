"""Answer generation runs: configuration versions and their checks, routing by task group,
batches through the job system against a real HTTP server (the demo's OpenAI-compatible test
server), truncated and failed outputs marked and kept out of the material, resume after a
killed worker with no duplicate answer, cancel, and admins only."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from demo.judge_server import serve
from generation import services
from generation.backends import build_generator
from generation.models import Generation, GenerationConfig, GenerationRun, RunStatus
from jobs.models import Job, JobStatus
from jobs.services import job_claim
from judge_worker.backends.openai_compat import OpenAIBackend
from material.models import Answer, Instruction
from taxonomy.models import Task
from tests.conftest import PASSWORD, Personas
from tests.ports import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def server() -> Iterator[str]:
    port = free_port()
    httpd = serve(port)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _factory(run: GenerationRun) -> Any:
    return build_generator(run.config)


def _no_retries(run: GenerationRun) -> Any:
    # A refused connection fails the same way on the first try as after five backoffs (15 s).
    generator = build_generator(run.config)
    assert isinstance(generator, OpenAIBackend)
    generator.max_retries = 0
    return generator


@pytest.fixture
def instructions(make_answer: Callable[..., Answer]) -> list[Instruction]:
    # Three instructions of "Original Text Generation / Scientific text" and two of "Editing".
    out = [make_answer().instruction for _ in range(3)]
    for _ in range(2):
        out.append(make_answer(task="Editing").instruction)
    return out


def _config(server: str, **fields: Any) -> GenerationConfig:
    values: dict[str, Any] = {
        "name": "demo-model",
        "model_name": "Demo-LM",
        "model_version": "1",
        "backend": "openai",
        "endpoint": server,
        "endpoint_model": "demo",
        "batch_size": 2,
        "max_new_tokens": 512,
        "temperature": 0.7,
        "seed": 11,
    }
    values.update(fields)
    return services.config_save(**values)


def test_configurations_are_versioned_and_checked(server: str) -> None:
    first = _config(server)
    assert _config(server) == first  # the same values: no copy
    second = _config(server, temperature=0.2)
    assert second.version == 2 and first.temperature == 0.7
    for field, value in [
        ("temperature", 9.0),
        ("top_p", 0.0),
        ("max_new_tokens", 0),
        ("batch_size", 10_000),
        ("backend", "gguf"),
    ]:
        with pytest.raises(services.GenerationError) as bad:
            _config(server, **{field: value})
        assert bad.value.field == field
    with pytest.raises(services.GenerationError) as no_endpoint:
        _config(server, endpoint="")
    assert no_endpoint.value.field == "endpoint"


def test_a_run_answers_every_instruction_once(server: str, instructions: list[Instruction]) -> None:
    config = _config(server)
    run = services.run_create(config=config, scope={"all": True}, enqueue=False)
    assert run.total == len(instructions) and run.batches.count() == 3
    services.run_execute_inline(run=run, generator_factory=_factory)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.done == run.total
    answers = Answer.objects.filter(model=config.model)
    assert answers.count() == len(instructions)
    meta = answers.first().generation_meta  # type: ignore[union-attr]
    assert meta["config_version"] == config.version and meta["parameters"]["temperature"] == 0.7
    assert meta["finish_reason"] == "stop" and meta["generated_tokens"] > 0
    # The same seed per (config, instruction): a second configuration version with the same
    # seed answers the same instruction with the same text.
    assert meta["seed"] == 11 + answers.first().instruction_id  # type: ignore[union-attr]
    # A second run over the same scope has nothing left: no duplicate answers.
    again = services.run_create(config=config, scope={"all": True}, enqueue=False)
    assert again.total == 0 and again.status == RunStatus.DONE


def test_task_groups_route_which_model_answers_what(
    server: str, instructions: list[Instruction]
) -> None:
    editing = Task.objects.get(level=0, name_en="Editing")
    config = _config(server, task_groups=[editing.pk])
    run = services.run_create(config=config, scope={"all": True}, enqueue=False)
    assert run.total == 2
    scoped = services.run_create(
        config=_config(server, name="other", task_groups=[]),
        scope={"group": editing.pk},
        enqueue=False,
    )
    assert scoped.total == 2


def test_truncated_and_failed_outputs_are_marked_and_kept_out(
    server: str, instructions: list[Instruction]
) -> None:
    config = _config(server, max_new_tokens=3)  # the demo answer is longer: "length"
    run = services.run_create(config=config, scope={"all": True}, enqueue=False)
    services.run_execute_inline(run=run, generator_factory=_factory)
    run.refresh_from_db()
    assert run.truncated == len(instructions) and run.done == len(instructions)
    assert not Answer.objects.filter(model=config.model).exists()
    assert set(Generation.objects.filter(run=run).values_list("outcome", flat=True)) == {
        "truncated"
    }
    # An endpoint that never answers: every output failed, with its error, no answer.
    dead = _config(server, name="dead", endpoint=f"http://127.0.0.1:{free_port()}/v1")
    run2 = services.run_create(config=dead, scope={"all": True, "limit": 2}, enqueue=False)
    services.run_execute_inline(run=run2, generator_factory=_no_retries)
    run2.refresh_from_db()
    failed = Generation.objects.filter(run=run2)
    assert failed.count() == 2 and all(g.outcome == "failed" and g.error for g in failed)
    assert not Answer.objects.filter(model=dead.model).exists()


def test_resume_after_a_killed_worker_answers_each_instruction_once(
    server: str, instructions: list[Instruction]
) -> None:
    config = _config(server)
    run = services.run_create(config=config, scope={"all": True}, enqueue=False)
    first = run.batches.order_by("number").first()
    assert first is not None
    # A worker claims the first batch and dies: its job stays running, its heartbeat goes stale.
    assert job_claim(first.job_id, stale_after=timedelta(seconds=60)) is not None
    Job.objects.filter(pk=first.job_id).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    # The other batches are done by another worker meanwhile.
    for batch in run.batches.exclude(pk=first.pk):
        services.batch_execute(batch_id=batch.pk, generator_factory=_factory)
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.done == run.total - len(first.instruction_ids)
    queued = services.run_resume(run=run, stale=timedelta(seconds=60))
    assert queued == 1
    services.run_execute_inline(run=run, generator_factory=_factory)
    # Running it once more (a duplicated task) changes nothing.
    services.batch_execute(batch_id=first.pk, generator_factory=_factory)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.done == run.total
    per_instruction = Answer.objects.filter(model=config.model).values_list(
        "instruction_id", flat=True
    )
    assert sorted(per_instruction) == sorted(i.pk for i in instructions)


def test_cancel_stops_queued_batches(server: str, instructions: list[Instruction]) -> None:
    config = _config(server)
    run = services.run_create(config=config, scope={"all": True}, enqueue=False)
    services.run_cancel(run=run)
    assert set(Job.objects.filter(run_batch__run=run).values_list("status", flat=True)) == {
        JobStatus.CANCELLED
    }
    services.run_execute_inline(run=run, generator_factory=_factory)
    assert not Generation.objects.filter(run=run).exists()


def test_pages_are_for_admins_only(
    server: str, personas: Personas, instructions: list[Instruction]
) -> None:
    config = _config(server)
    run = services.run_create(config=config, scope={"all": True}, enqueue=False)
    for user, status in [
        (personas.expert_a.user, 403),
        (personas.supervisor_a, 403),
        (personas.admin, 200),
    ]:
        client = Client()
        assert client.login(username=user.get_username(), password=PASSWORD)
        assert client.get(reverse("generation_runs")).status_code == status
        assert client.get(reverse("generation_run", args=[run.pk])).status_code == status
    admin = Client()
    admin.login(username=personas.admin.get_username(), password=PASSWORD)
    bad = admin.post(
        reverse("generation_config_create"),
        {"name": "x", "model_name": "m", "backend": "openai", "endpoint": server, "top_p": "abc"},
    )
    assert bad.status_code == 400 and b"top_p" in bad.content


def test_written_instructions_scope_and_answers_reach_the_builder(
    server: str, instructions: list[Instruction], personas: Personas
) -> None:
    from work.assignments import assignments_build
    from work.models import Assignment

    written = Instruction.objects.create(
        text="Напишите инструкцию к кофемашине.",
        task=instructions[0].task,
        style=instructions[0].style,
        complexity="easy",
        source="authoring: POLLUX-2",
        external_id="authored-99",
    )
    config = _config(server)
    run = services.run_create(config=config, scope={"authored": True}, enqueue=False)
    assert run.total == 1
    services.run_execute_inline(run=run, generator_factory=_factory)
    answer = Answer.objects.get(model=config.model)
    assert answer.instruction == written
    # The ordinary builder routes the generated answer to experts like an imported one.
    assignments_build(answer_ids=[answer.pk])
    assert Assignment.objects.filter(answer=answer).exists()
    with pytest.raises(services.GenerationError) as no_scope:
        services.run_create(config=config, scope={}, enqueue=False)
    assert no_scope.value.field == "scope"
