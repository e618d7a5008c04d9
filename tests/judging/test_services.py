"""Judge configurations, runs, batches: claims, skips, parse failures, cancel and resume."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from jobs.models import Job, JobStatus
from jobs.services import job_claim
from judging import services
from judging.export_columns import judge_columns, judge_columns_aligned, judge_config_names
from judging.models import (
    BatchStatus,
    JudgeBatch,
    JudgeConfig,
    JudgeEstimate,
    RunStatus,
)
from tests.judging.conftest import CRITERIA, ScriptedBackend, result, stored_report

pytestmark = pytest.mark.django_db


def test_saving_a_changed_configuration_creates_a_new_version(judge_config: JudgeConfig) -> None:
    same = services.config_save(name="tiny", batch_size=2, model_family="giga")
    assert same.pk == judge_config.pk
    changed = services.config_save(name="tiny", decoding={"do_sample": False, "max_new_tokens": 32})
    assert (changed.version, changed.batch_size) == (2, 2)
    judge_config.refresh_from_db()
    assert judge_config.max_new_tokens == 1024  # the old version is untouched
    assert changed.max_new_tokens == 32


def test_a_new_configuration_defaults_to_greedy_and_the_pollux_prompt(db: Any) -> None:
    config = services.config_save(name="fresh")
    assert config.decoding == {"do_sample": False, "max_new_tokens": 1024}
    assert "{criteria_name}" in config.prompt_template
    assert config.version == 1


def test_it_rejects_an_api_key_pasted_instead_of_a_variable_name(db: Any) -> None:
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        services.config_save(name="leaky", backend="openai", api_key_env="sk-abc123")


def test_run_plans_batches_over_the_scope(material: Any, judge_config: JudgeConfig) -> None:
    m = material(n_answers=3)
    run = services.run_create(
        config=judge_config, scope={"panel": m.panel.pk, "limit": 5}, enqueue=False
    )
    assert run.total == 5
    batches = list(run.batches.order_by("number"))
    assert [len(b.triple_ids) for b in batches] == [2, 2, 1]
    # An answer's criteria stay side by side (prefix sharing).
    first = m.triples()
    assert batches[0].triple_ids == [first[0].pk, first[1].pk]
    assert services.run_plan_batches(run=run) == 3  # planning twice changes nothing
    assert JudgeBatch.objects.filter(run=run).count() == 3


def test_deleting_a_run_deletes_its_batch_jobs(material: Any, judge_config: JudgeConfig) -> None:
    m = material(n_answers=3)
    run = services.run_create(
        config=judge_config, scope={"panel": m.panel.pk, "limit": 5}, enqueue=False
    )
    other = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    jobs = set(JudgeBatch.objects.filter(run=run).values_list("job_id", flat=True))
    kept = set(JudgeBatch.objects.filter(run=other).values_list("job_id", flat=True))
    assert len(jobs) == 3 and kept
    run.delete()
    assert not Job.objects.filter(pk__in=jobs).exists()
    # Another run's jobs stay, and so does a batch deleted alone's run.
    assert set(Job.objects.filter(pk__in=kept).values_list("pk", flat=True)) == kept
    batch = JudgeBatch.objects.filter(run=other).first()
    assert batch is not None
    batch.delete()
    assert not Job.objects.filter(pk=batch.job_id).exists()
    assert JudgeBatch.objects.filter(run=other).count() == len(kept) - 1


def test_run_scope_by_model_keeps_only_that_models_answers(
    material: Any, judge_config: JudgeConfig
) -> None:
    m = material(n_answers=2, models=("GigaChat", "YandexGPT"))
    run = services.run_create(
        config=judge_config, scope={"model": m.answers[1].model_id}, enqueue=False
    )
    assert run.total == len(CRITERIA)


def test_it_rejects_a_run_without_scope(judge_config: JudgeConfig) -> None:
    with pytest.raises(services.JudgingError):
        services.run_create(config=judge_config, scope={}, enqueue=False)


def test_batch_writes_scores_and_keeps_parse_failures_with_raw_text(
    material: Any, judge_config: JudgeConfig
) -> None:
    m = material(n_answers=2)

    def reply(item: Any) -> str:
        crit = item.meta["criterion"]
        if crit == "grammar":
            return "Ответ хороший, ставлю высокий балл."  # no [RESULT] at all
        if crit == "censor":
            return result(7)  # off the binary scale
        return result(0)  # a real lowest score

    backend = ScriptedBackend(reply)
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    run = services.run_execute_inline(run=run, backend_factory=lambda r: backend)
    assert (run.status, run.done, run.total, run.parse_failures) == ("done", 6, 6, 4)
    assert run.prompt_tokens > 0 and run.generated_tokens > 0
    grammar = JudgeEstimate.objects.get(run=run, triple=m.triple(0, "grammar"))
    assert grammar.score is None and not grammar.parse_ok
    assert grammar.raw_text == "Ответ хороший, ставлю высокий балл."
    assert "RESULT" in grammar.error
    censor = JudgeEstimate.objects.get(run=run, triple=m.triple(0, "censor"))
    assert censor.score is None and "not on the scale" in censor.error
    repeats = JudgeEstimate.objects.get(run=run, triple=m.triple(0, "repeats"))
    assert (repeats.score, repeats.parse_ok, repeats.config_id) == (0.0, True, judge_config.pk)
    assert repeats.feedback == "Ответ в целом корректен."


def test_the_database_refuses_a_failed_parse_stored_as_a_score(
    material: Any, judge_config: JudgeConfig
) -> None:
    m = material(n_answers=1)
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    with pytest.raises(IntegrityError), transaction.atomic():
        JudgeEstimate.objects.create(
            run=run, triple=m.triple(0, "repeats"), config=judge_config, score=0, parse_ok=False
        )


def test_prompts_carry_instruction_answer_criterion_and_rubric(
    material: Any, judge_config: JudgeConfig
) -> None:
    m = material(n_answers=1)
    backend = ScriptedBackend(lambda item: result(1))
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    items = services.build_items(
        judge_config,
        [
            t
            for t in m.triples()
            if t.criterion.key == "censor"
            and t.answer.instruction  # loads relations the way the service does
        ],
    )
    (item,) = items
    answer = m.answers[0]
    assert answer.instruction.text in item.prompt and answer.text in item.prompt
    assert item.allowed_scores == (0.0, 1.0)
    assert item.prefix_key == str(answer.pk)
    censor = m.triple(0, "censor").criterion
    assert censor.name_ru in item.prompt
    assert "### Эталонный ответ:" not in item.prompt  # no reference: the section is dropped
    services.run_execute_inline(run=run, backend_factory=lambda r: backend)
    assert sum(len(c) for c in backend.calls) == 3


def test_a_custom_prompt_template_is_filled_with_the_same_placeholders(
    material: Any, judge_config: JudgeConfig
) -> None:
    m = material(n_answers=1)
    config = services.config_save(
        name="tiny", prompt_template="Критерий: {criteria_name}\nОтвет: {answer}\n{rubrics}"
    )
    (item,) = services.build_items(config, [m.triple(0, "repeats")])
    assert item.prompt.startswith("Критерий: ")
    assert "Ответ: " + m.answers[0].text in item.prompt


def test_a_batch_skips_triples_already_judged(material: Any, judge_config: JudgeConfig) -> None:
    m = material(n_answers=1)
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    first = run.batches.get(number=0)
    JudgeEstimate.objects.create(
        run=run, triple_id=first.triple_ids[0], config=judge_config, score=2, parse_ok=True
    )
    backend = ScriptedBackend(lambda item: result(1))
    assert services.batch_execute(batch_id=first.pk, backend_factory=lambda r: backend) == "claimed"
    assert backend.calls == [[str(first.triple_ids[1])]]
    assert JudgeEstimate.objects.get(run=run, triple_id=first.triple_ids[0]).score == 2


def test_a_fresh_claim_is_busy_and_a_stale_one_is_taken_over(
    material: Any, judge_config: JudgeConfig
) -> None:
    m = material(n_answers=1)
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    batch = run.batches.get(number=0)
    # A judge batch is claimed like every job, with the judge's own staleness.
    assert job_claim(batch.job_id) == 1
    assert job_claim(batch.job_id) is None
    Job.objects.filter(pk=batch.job_id).update(
        heartbeat_at=timezone.now() - services.stale_after() - timedelta(seconds=1)
    )
    assert job_claim(batch.job_id) == 2
    batch.refresh_from_db()
    assert (batch.job.status, batch.attempts) == (JobStatus.RUNNING, 2)


def test_the_first_worker_finishing_a_taken_over_batch_cannot_double_count(
    material: Any, judge_config: JudgeConfig
) -> None:
    m = material(n_answers=1)
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    backend = ScriptedBackend(lambda item: result(1))
    services.run_execute_inline(run=run, backend_factory=lambda r: backend)
    # Replay a batch as if a second worker had re-claimed it: nothing new, counters unchanged.
    batch = run.batches.get(number=0)
    Job.objects.filter(pk=batch.job_id).update(status=JobStatus.QUEUED)
    services.batch_execute(batch_id=batch.pk, backend_factory=lambda r: backend)
    run.refresh_from_db()
    assert run.done == 3 and JudgeEstimate.objects.filter(run=run).count() == 3


def test_cancel_turns_queued_batches_into_no_ops_and_resume_finishes_the_run(
    material: Any, judge_config: JudgeConfig
) -> None:
    m = material(n_answers=2)
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    backend = ScriptedBackend(lambda item: result(1))
    first = run.batches.get(number=0)
    services.batch_execute(batch_id=first.pk, backend_factory=lambda r: backend)
    services.run_cancel(run=run)
    second = run.batches.get(number=1)
    assert services.batch_execute(batch_id=second.pk, backend_factory=lambda r: backend) == "gone"
    run.refresh_from_db()
    assert (run.status, run.done) == (RunStatus.CANCELLED, 2)

    assert services.run_resume(run=run) == 2
    run = services.run_execute_inline(run=run, backend_factory=lambda r: backend)
    assert (run.status, run.done, run.total) == (RunStatus.DONE, 6, 6)
    assert JudgeEstimate.objects.filter(run=run).count() == 6


def test_a_failing_backend_fails_the_batch_and_resume_retries_it(
    material: Any, judge_config: JudgeConfig
) -> None:
    m = material(n_answers=1)
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)

    def broken(item: Any) -> str:
        raise RuntimeError("CUDA out of memory")

    with pytest.raises(RuntimeError):
        services.run_execute_inline(run=run, backend_factory=lambda r: ScriptedBackend(broken))
    batch = run.batches.get(number=0)
    assert batch.status == BatchStatus.FAILED and "out of memory" in batch.error
    services.run_resume(run=run)
    run = services.run_execute_inline(
        run=run, backend_factory=lambda r: ScriptedBackend(lambda i: result(2))
    )
    assert (run.status, run.done) == (RunStatus.DONE, 3)


def test_resume_requeues_a_batch_whose_worker_stopped_beating(
    material: Any, judge_config: JudgeConfig
) -> None:
    m = material(n_answers=1)
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    batch = run.batches.get(number=0)
    assert job_claim(batch.job_id) == 1
    services.run_resume(run=run, stale=timedelta(hours=1))
    batch.refresh_from_db()
    assert batch.status == BatchStatus.RUNNING  # a live claim is left alone
    Job.objects.filter(pk=batch.job_id).update(heartbeat_at=timezone.now() - timedelta(minutes=10))
    services.run_resume(run=run, stale=timedelta(minutes=5))
    batch.refresh_from_db()
    assert batch.status == BatchStatus.QUEUED


def test_report_and_export_columns_on_a_hand_made_run(
    material: Any, judge_config: JudgeConfig
) -> None:
    m = material(n_answers=2, models=("GigaChat", "YandexGPT"))
    # Experts: repeats of answer 0 unanimous 2; grammar of answer 0 split 1/1/2 (mode 1);
    # repeats of answer 1 tie 0/2 (no mode); censor of answer 1 unanimous 0.
    m.score(m.triple(0, "repeats"), 2, 2, 2)
    m.score(m.triple(0, "grammar"), 1, 1, 2)
    m.score(m.triple(1, "repeats"), 0, 2)
    m.score(m.triple(1, "censor"), 0, 0, None)
    judge_scores = {
        (0, "repeats"): result(1),  # contradicts a unanimous panel
        (0, "grammar"): result(1),
        (1, "repeats"): result(2),
        (1, "censor"): "[FEEDBACK] не знаю [END]",  # parse failure
    }
    keys = {t.pk: (m.answers.index(t.answer), t.criterion.key) for t in m.triples()}
    backend = ScriptedBackend(lambda item: judge_scores.get(keys[int(item.item_id)], result(0)))
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    run = services.run_execute_inline(run=run, backend_factory=lambda r: backend)
    report = stored_report(run)
    assert (report["n_judged"], report["n_with_experts"], report["n_failed_with_experts"]) == (
        6,
        4,
        1,
    )
    # vs mode: |1-2| + |1-1| = 1 over 2 triples (answer 1 repeats has no mode)
    assert report["mae_mode"] == [pytest.approx(0.5), 2]
    # vs mean: |1-2| + |1-4/3| + |2-1| = 7/3 over 3
    assert report["mae_mean"] == [pytest.approx(7 / 9), 3]
    assert report["confidence"]["experts"] == pytest.approx((1 + 2 / 3 + 1 / 2) / 3)
    # (expert mode, judge) = (2, 1) and (1, 1), one task group: labels [1, 2]
    (confusion,) = report["confusions"]
    assert (confusion["labels"], confusion["matrix"]) == (
        [1, 2],
        [[1, 0], [1, 0]],
    )
    sp = report["self_preference"]  # family "giga": answer 0 is GigaChat's
    assert (sp["n_same"], sp["n_other"]) == (2, 1)
    assert sp["same_gap"] == pytest.approx(((1 - 2) + (1 - 4 / 3)) / 2)

    assert report["contradictions"] == [m.triple(0, "repeats").pk]

    columns, values = judge_columns([t.pk for t in m.triples()])
    assert "judge__tiny__score" in columns and "judge__tiny__config_version" in columns
    failed = values[m.triple(1, "censor").pk]
    assert failed["judge__tiny__score"] is None and failed["judge__tiny__parse_ok"] is False
    assert values[m.triple(0, "repeats").pk]["judge__tiny__score"] == 1.0

    order = [m.triple(1, "censor").pk, m.triple(0, "repeats").pk, 10**9]
    aligned = judge_columns_aligned(order)
    assert judge_config_names() == ["tiny"]
    assert aligned["judge__tiny__score"] == [None, 1.0, None]
    assert aligned["judge__tiny__parse_ok"] == [False, True, None]
    assert aligned["judge__tiny__config_version"] == [1, 1, None]
