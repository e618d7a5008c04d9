"""`run_judge` and the Celery task, through the real OpenAI-compatible HTTP backend."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from judging import services
from judging.backends import build_backend, clear_cache
from judging.models import JudgeEstimate, JudgeRun, RunStatus
from tests.judging.fake_openai import fake_openai

pytestmark = pytest.mark.django_db


def test_run_judge_waits_and_judges_a_panel_inline(material: Any) -> None:
    m = material(n_answers=2)
    with fake_openai() as server:
        services.config_save(name="remote", backend="openai", endpoint=server["url"])
        out = StringIO()
        call_command(
            "run_judge", "--config", "remote", "--panel", str(m.panel.pk), "--wait", stdout=out
        )
        assert server["requests"] == 6
    run = JudgeRun.objects.get()
    assert (run.status, run.done, run.total, run.parse_failures) == (RunStatus.DONE, 6, 6, 0)
    assert "6/6 judged" in out.getvalue()
    assert set(JudgeEstimate.objects.values_list("score", flat=True)) == {1.0}


def test_run_judge_honours_limit_and_refuses_an_unknown_config(material: Any) -> None:
    material(n_answers=2)
    with pytest.raises(CommandError):
        call_command("run_judge", "--config", "nope", "--all")
    with fake_openai() as server:
        services.config_save(name="remote", backend="openai", endpoint=server["url"])
        call_command("run_judge", "--config", "remote", "--all", "--limit", "4", "--wait")
    assert JudgeRun.objects.get().done == 4


def test_the_celery_task_loads_the_backend_once_per_process(material: Any) -> None:
    from judge_worker.backends import factory as backends
    from judging.tasks import judge_batch

    m = material(n_answers=2)
    clear_cache()
    with fake_openai() as server:
        config = services.config_save(
            name="remote", backend="openai", endpoint=server["url"], batch_size=2
        )
        run = services.run_create(config=config, scope={"panel": m.panel.pk}, enqueue=False)
        loaded = []
        for batch in run.batches.order_by("number"):
            # Eager here (test settings); a worker runs the same function.
            assert judge_batch.apply(args=(batch.job_id,)).get() == "done"
            loaded.append(id(next(iter(backends._CACHE.values()))))
    assert len(set(loaded)) == 1
    run.refresh_from_db()
    assert (run.status, run.done) == (RunStatus.DONE, 6)
    # A duplicated task for a finished batch does nothing.
    first = run.batches.get(number=0)
    assert judge_batch.apply(args=(first.job_id,)).get() == "gone"
    clear_cache()


def test_an_endpoint_failure_is_not_stored_as_a_verdict_and_resume_asks_again(
    material: Any,
) -> None:
    m = material(n_answers=1)
    with fake_openai(fail_first=2) as server:
        config = services.config_save(
            name="remote",
            backend="openai",
            endpoint=server["url"],
            # No client-side retries: the failures reach the batch.
            decoding={"do_sample": False, "max_new_tokens": 64, "max_retries": 0},
        )
        run = services.run_create(config=config, scope={"panel": m.panel.pk}, enqueue=False)
        backend = build_backend(config)
        run = services.run_execute_inline(run=run, backend_factory=lambda r: backend)
        assert (run.status, run.done, run.parse_failures) == (RunStatus.FAILED, 1, 0)
        batch = run.batches.get()
        assert batch.status == "failed" and "HTTP 500" in batch.error
        services.run_resume(run=run)
        run = services.run_execute_inline(run=run, backend_factory=lambda r: backend)
    assert (run.status, run.done, run.parse_failures) == (RunStatus.DONE, 3, 0)
