"""Migrations judging 0003-0004, runs 0001, generation 0002-0004: judge and generation
configurations, runs and batches become rows of one run model with a purpose, and a database
with data keeps all of it: judge rows keep their ids, generation rows get new ones, and every
reference follows (estimates, reports, leaderboards, batches' jobs, outputs, answers' meta)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from generation.models import Generation, GenerationBatch, GenerationConfig, GenerationRun
from jobs.models import Job
from judging.models import JudgeBatch, JudgeConfig, JudgeEstimate, JudgeReport, JudgeRun
from leaderboards.models import Leaderboard
from material.models import Answer
from panels.models import Panel
from runs.models import Purpose
from taxonomy.models import Criterion, Task
from tests.conftest import make_user
from work.models import Triple

BEFORE = [("judging", "0002_pairwise_runs"), ("generation", "0001_initial")]
THEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _migrate(targets: list[tuple[str, str]] | None = None) -> Any:
    """Migrate to `targets` (the latest when None); returns the historical models there."""
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    executor.migrate(targets or leaves)
    if not targets:
        return None
    # The other apps stay at their latest, but for those whose latest state builds on the moved
    # models (runs; submissions: a closed test's generation run), which migrate back with them.
    moved = {app for app, _ in targets} | {"runs", "submissions"}
    others = [node for node in leaves if node[0] not in moved]
    return executor.loader.project_state([*targets, *others]).apps


@pytest.mark.django_db(transaction=True)
def test_judge_and_generation_rows_move_into_the_run_tables(make_answer: Any) -> None:
    answer = make_answer()
    user = make_user("mover")
    criterion = Criterion.objects.filter(rubric__isnull=False).select_related("rubric").first()
    assert criterion is not None
    triple = Triple.objects.create(
        answer=answer,
        criterion=criterion,
        rubric=criterion.rubric,
        group=criterion.group,
        panel=Panel.objects.get(key="science"),
        required_overlap=3,
    )
    group = Task.objects.filter(level=0).first()
    assert group is not None
    try:
        old = _migrate(BEFORE)
        model = old.get_model
        old_job = model("jobs", "Job")
        jc = model("judging", "JudgeConfig").objects.create(
            name="judge",
            backend="openai",
            endpoint="http://judge.test",
            decoding={"do_sample": False, "max_new_tokens": 77},
            prompt_template="P {answer}",
            model_family="qwen",
            created_by_id=user.pk,
        )
        jr = model("judging", "JudgeRun").objects.create(
            config=jc, backend="openai", scope={"all": True}, status="done", total=1, done=1
        )
        twin = model("judging", "JudgeRun").objects.create(
            config=jc,
            backend="openai",
            scope={"all": True},
            kind="pairwise",
            templates=["repa_1"],
            shots=1,
            swapped=True,
            swap_of=jr,
        )
        jjob = old_job.objects.create(kind="judge_batch", params={"run": jr.pk, "number": 0})
        jb = model("judging", "JudgeBatch").objects.create(
            run=jr, job=jjob, number=0, triple_ids=[triple.pk], seconds=1.5
        )
        estimate = model("judging", "JudgeEstimate").objects.create(
            run=jr, triple_id=triple.pk, config=jc, score=1.0, parse_ok=True
        )
        report = model("judging", "JudgeReport").objects.create(run=jr, data={"n": 1})
        board = model("leaderboards", "Leaderboard").objects.create(
            slug="moved", title="Moved", judge_config=jc
        )
        # The generation rows take the judge rows' ids: the move must remap them.
        gc = model("generation", "GenerationConfig").objects.create(
            pk=jc.pk,
            name="writer",
            model_id=answer.model_id,
            backend="openai",
            endpoint="http://writer.test",
            system_prompt="Be brief.",
            temperature=0.5,
            top_p=0.9,
            top_k=40,
            max_new_tokens=99,
            seed=7,
            batch_size=4,
        )
        gc.task_groups.set([group.pk])
        gr = model("generation", "GenerationRun").objects.create(
            pk=jr.pk, config=gc, scope={"group": group.pk}, total=2, done=1, truncated=1
        )
        gjob = old_job.objects.create(kind="generation", params={"run": gr.pk, "number": 0})
        model("generation", "GenerationBatch").objects.create(
            pk=jb.pk, run=gr, job=gjob, number=0, instruction_ids=[answer.instruction_id]
        )
        made = model("material", "Answer").objects.create(
            instruction_id=answer.instruction_id,
            model_id=answer.model_id,
            text="generated",
            text_hash="generated",
            generation_meta={"config": "writer", "config_id": gc.pk, "run": gr.pk},
        )
        output = model("generation", "Generation").objects.create(
            run=gr, instruction_id=answer.instruction_id, outcome="ok", text="t", answer=made
        )
        for name in ("JudgeConfig", "JudgeRun"):
            model("judging", name).objects.update(created_at=THEN)
        for name in ("GenerationConfig", "GenerationRun"):
            model("generation", name).objects.update(created_at=THEN)

        _migrate()

        # Judge rows: the same ids, and everything pointing at them still does.
        config = JudgeConfig.objects.get(pk=jc.pk)
        assert (config.purpose, config.name, config.backend, config.model_family) == (
            Purpose.JUDGE,
            "judge",
            "openai",
            "qwen",
        )
        assert (config.prompt_template, config.max_new_tokens) == ("P {answer}", 77)
        assert config.created_by_id == user.pk and config.created_at == THEN
        run = JudgeRun.objects.get(pk=jr.pk)
        assert (run.config_id, run.status, run.total, run.kind) == (jc.pk, "done", 1, "pointwise")
        mirror = JudgeRun.objects.get(pk=twin.pk)
        assert (mirror.kind, mirror.templates, mirror.swap_of_id) == ("pairwise", ["repa_1"], jr.pk)
        batch = JudgeBatch.objects.get(pk=jb.pk)
        assert (batch.run_id, batch.job_id, batch.triple_ids) == (jr.pk, jjob.pk, [triple.pk])
        assert Job.objects.get(pk=jjob.pk).params == {"run": jr.pk, "number": 0}
        assert JudgeEstimate.objects.get(pk=estimate.pk).run_id == jr.pk
        assert JudgeReport.objects.get(pk=report.pk).run.pk == jr.pk
        assert Leaderboard.objects.get(pk=board.pk).judge_config_id == jc.pk

        # Generation rows: new ids, their links and every field kept.
        gconfig = GenerationConfig.objects.get()
        assert gconfig.pk != jc.pk and gconfig.purpose == Purpose.GENERATE
        assert (gconfig.name, gconfig.model_id, gconfig.endpoint) == (
            "writer",
            answer.model_id,
            "http://writer.test",
        )
        assert gconfig.parameters() == {
            "temperature": 0.5,
            "top_p": 0.9,
            "top_k": 40,
            "max_new_tokens": 99,
            "seed": 7,
            "system_prompt": True,
        }
        assert (gconfig.batch_size, gconfig.created_at) == (4, THEN)
        assert list(gconfig.task_groups.values_list("pk", flat=True)) == [group.pk]
        grun = GenerationRun.objects.get()
        assert grun.pk not in (jr.pk, twin.pk)
        assert (grun.config_id, grun.backend, grun.scope, grun.created_at) == (
            gconfig.pk,
            "openai",
            {"group": group.pk},
            THEN,
        )
        assert (grun.status, grun.total, grun.done, grun.truncated) == ("running", 2, 1, 1)
        gbatch = GenerationBatch.objects.get()
        assert (gbatch.run_id, gbatch.job_id, gbatch.instruction_ids) == (
            grun.pk,
            gjob.pk,
            [answer.instruction_id],
        )
        assert Job.objects.get(pk=gjob.pk).params == {"run": grun.pk, "number": 0}
        assert Generation.objects.get(pk=output.pk).run_id == grun.pk
        meta = Answer.objects.get(pk=made.pk).generation_meta
        assert (meta["run"], meta["config_id"]) == (grun.pk, gconfig.pk)
        # One purpose never sees the other's rows.
        assert set(JudgeRun.objects.values_list("pk", flat=True)) == {jr.pk, twin.pk}
        assert JudgeBatch.objects.count() == 1 and GenerationBatch.objects.count() == 1

        # Backwards, the generation rows go back to their own tables.
        old = _migrate(BEFORE)
        back = old.get_model("generation", "GenerationRun").objects.get()
        assert (back.config.name, back.total, back.truncated) == ("writer", 2, 1)
        assert old.get_model("generation", "Generation").objects.get().run_id == back.pk
        assert old.get_model("generation", "GenerationBatch").objects.get().job_id == gjob.pk
        assert old.get_model("judging", "JudgeRun").objects.count() == 2
        assert old.get_model("judging", "JudgeBatch").objects.get().triple_ids == [triple.pk]
    finally:
        _migrate()
