"""Writes of answer generation: configuration versions, runs and what a generation batch does.

A run's life (batches as jobs of kind "generation" sent to the GPU queue, claims, counters,
finishing, cancel, resume, inline execution) is runs.batched.BatchedRuns; this module gives it
generation's part (_Generation): the instructions a batch has not answered yet, their prompts,
and the outputs written in one transaction against the unique (run, instruction), so a retried
or duplicated task never answers twice; an instruction the model already answered (in any run)
is not planned again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Q, QuerySet, Sum
from django.utils.translation import gettext as _

from generation import hooks
from generation.models import (
    Backend,
    Generation,
    GenerationBatch,
    GenerationConfig,
    GenerationRun,
)
from jobs.models import Job, JobKind
from jobs.services import JobContext
from judge_worker import GenerationItem, GenerationOutput, Generator
from material.import_common import sha256_hex
from material.models import Answer, Instruction, LanguageModel
from runs.batched import BatchedRuns
from runs.batched import stale_after as stale_after  # the batch task's staleness
from runs.models import RunConfig
from runs.services import config_latest, config_next_version, config_unchanged
from taxonomy.models import Task
from work.models import ReservedAnswer

logger = logging.getLogger(__name__)

CONFIG_FIELDS = (
    "backend",
    "model_path",
    "endpoint",
    "endpoint_model",
    "api_key_env",
    "system_prompt",
    "temperature",
    "top_p",
    "top_k",
    "max_new_tokens",
    "seed",
    "batch_size",
    "guarded",
)
MAX_NEW_TOKENS = 32_768
# The source of the instructions a writing campaign accepted ("authoring: <campaign>").
AUTHORED_SOURCE = "authoring: "
MAX_BATCH = 512


class GenerationError(Exception):
    def __init__(self, message: str, field: str = "", status: int = 400) -> None:
        super().__init__(message)
        self.field = field
        self.status = status


class BatchIncomplete(GenerationError):
    """Some instructions of a batch got no output at all (the endpoint never answered)."""


# --- configurations -------------------------------------------------------------------------


def _check_config(fields: dict[str, Any]) -> None:
    backend = fields.get("backend")
    if backend not in Backend.values:
        raise GenerationError(
            _("one of %(join_backend_values)s")
            % {"join_backend_values": ", ".join(Backend.values)},
            "backend",
        )
    if backend == Backend.OPENAI and not fields.get("endpoint"):
        raise GenerationError(_("an OpenAI-compatible backend needs its endpoint"), "endpoint")
    checks: list[tuple[str, float, float]] = [
        ("temperature", 0, 5),
        ("top_p", 1e-9, 1),
        ("top_k", 0, 100_000),
        ("max_new_tokens", 1, MAX_NEW_TOKENS),
        ("batch_size", 1, MAX_BATCH),
    ]
    for name, low, high in checks:
        value = fields.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            raise GenerationError(_("must be a number"), name)
        if not low <= value <= high:
            raise GenerationError(
                _("must be between %(low)s and %(high)s")
                % {"low": format(low, "g"), "high": format(high, "g")},
                name,
            )
    seed = fields.get("seed")
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63
    ):
        raise GenerationError(_("a whole number from 0"), "seed")


@transaction.atomic
def config_save(
    *,
    name: str,
    model_name: str,
    model_version: str = "",
    task_groups: Iterable[int] = (),
    created_by: Any = None,
    **fields: Any,
) -> GenerationConfig:
    """Save a configuration as a new version (the same values again return the current one)."""
    unknown = set(fields) - set(CONFIG_FIELDS)
    if unknown:
        raise GenerationError(
            _("unknown configuration fields: %(sorted_unknown)s")
            % {"sorted_unknown": sorted(unknown)}
        )
    name, model_name = name.strip(), model_name.strip()
    if not name:
        raise GenerationError(_("a configuration needs a name"), "name")
    if not model_name:
        raise GenerationError(_("name the model that answers"), "model_name")
    groups = sorted(set(task_groups))
    if Task.objects.filter(pk__in=groups, level=0).count() != len(groups):
        raise GenerationError(_("task groups must be top-level tasks"), "task_groups")
    current = config_latest(GenerationConfig, name)
    values = {
        f: fields.get(f, getattr(current, f)) if current else fields.get(f) for f in CONFIG_FIELDS
    }
    values = {k: v for k, v in values.items() if v is not None or k == "seed"}
    _check_config(values)
    model, _created = LanguageModel.objects.get_or_create(
        name=model_name[:200], version=model_version.strip()[:100]
    )
    # The task groups last: a query, asked only when everything else is the same.
    if (
        current is not None
        and config_unchanged(current, {**values, "model_id": model.pk})
        and sorted(current.task_groups.values_list("pk", flat=True)) == groups
    ):
        return current
    config = GenerationConfig(
        name=name,
        version=config_next_version(current),
        model=model,
        created_by=created_by,
        **values,
    )
    config.full_clean(exclude=["model"])
    config.save()
    config.task_groups.set(groups)
    return config


# --- runs -----------------------------------------------------------------------------------


def _group_filter(groups: Sequence[Task]) -> Q:
    q = Q()
    for group in groups:
        q |= Q(task__path=group.path) | Q(task__path__startswith=group.path + " / ")
    return q


def scope_instructions(config: GenerationConfig, scope: dict[str, Any]) -> QuerySet[Instruction]:
    """The instructions a run over `scope` answers: the scope's (a task group, a source such as
    a writing campaign, or all), within the configuration's task groups, minus those the
    configuration's model has answered already (no duplicate answers)."""
    qs = Instruction.objects.filter(task__isnull=False)
    if "instructions" in scope:
        # A benchmark version's items (a submission's run): exactly those, whatever their task.
        qs = Instruction.objects.filter(pk__in=scope["instructions"])
    elif "group" in scope:
        group = Task.objects.filter(pk=scope["group"], level=0).first()
        if group is None:
            raise GenerationError(_("unknown task group"), "group")
        qs = qs.filter(_group_filter([group]))
    elif "source" in scope:
        qs = qs.filter(source=scope["source"])
    elif scope.get("authored"):
        # Every instruction the writing campaigns accepted (authoring sets this source).
        qs = qs.filter(source__startswith=AUTHORED_SOURCE)
    elif not scope.get("all"):
        raise GenerationError(
            _("a run needs a scope: a task group, a source, the written instructions, or all"),
            "scope",
        )
    groups = list(config.task_groups.all())
    if groups and "instructions" not in scope:
        qs = qs.filter(_group_filter(groups))
    answered = Answer.objects.filter(model_id=config.model_id).values("instruction_id")
    return qs.exclude(pk__in=answered).order_by("pk")


# What a submission's run adds to its scope (set by code, never by a form): its answers are
# reserved (never expert work unless an admin sends them), a truncated output is its answer too
# (cut at the version's fixed max_new_tokens, and reported so), its batches go one at a time
# (runs.batched: the participant's endpoint sees one batch's concurrency), and its limits.
RUN_LIMITS = ("reserve", "keep_truncated", "sequential", "max_requests", "max_tokens")


def clean_scope(scope: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "instructions" in scope:
        ids = scope["instructions"]
        if not isinstance(ids, list) or not all(
            isinstance(pk, int) and not isinstance(pk, bool) for pk in ids
        ):
            raise GenerationError(_("a list of instruction ids is expected"), "instructions")
        out["instructions"] = sorted(set(ids))
        for name in RUN_LIMITS:
            if scope.get(name) not in (None, False):
                out[name] = scope[name]
        return out
    if scope.get("group") not in (None, ""):
        try:
            out["group"] = int(scope["group"])
        except (TypeError, ValueError):
            raise GenerationError(_("unknown task group"), "group") from None
    elif scope.get("source"):
        out["source"] = str(scope["source"])[:200]
    elif scope.get("authored"):
        out["authored"] = True
    elif scope.get("all"):
        out["all"] = True
    if scope.get("limit") not in (None, "", 0):
        try:
            out["limit"] = max(1, int(scope["limit"]))
        except (TypeError, ValueError):
            raise GenerationError(_("must be a whole number"), "limit") from None
    return out


@transaction.atomic
def run_create(
    *, config: GenerationConfig, scope: dict[str, Any], created_by: Any = None, enqueue: bool = True
) -> GenerationRun:
    scope = clean_scope(scope)
    ids = list(scope_instructions(config, scope).values_list("pk", flat=True))
    if scope.get("limit"):
        ids = ids[: scope["limit"]]
    run = GenerationRun.objects.create(
        config=config, backend=config.backend, scope=scope, created_by=created_by
    )
    RUNS.plan(run, ids, size=config.batch_size, total=len(ids))
    if ids and enqueue:
        RUNS.send_on_commit(run.pk)
    return run


def run_cancel(*, run: GenerationRun) -> None:
    """Stop a run: queued batches are cancelled; a batch being generated still saves."""
    RUNS.cancel(run=run)


def run_resume(*, run: GenerationRun, stale: timedelta | None = None) -> int:
    """Re-queue every batch not done: failed, cancelled, and those whose claim went stale (a
    killed worker). Their instructions already answered are skipped by the batch itself."""
    return RUNS.resume(run=run, stale=stale)


# --- batches --------------------------------------------------------------------------------


def frozen_texts(config: RunConfig, ids: Sequence[int]) -> dict[int, str]:
    """The instructions' texts as a benchmark version froze them for the configuration's model
    (generation.hooks.frozen_texts); the others are not named."""
    out: dict[int, str] = {}
    if config.model_id is None:
        return out
    for source in hooks.frozen_texts:
        out.update(source(config.model_id, ids))
    return out


def build_items(config: RunConfig, instructions: Sequence[Instruction]) -> list[GenerationItem]:
    items = []
    frozen = frozen_texts(config, [i.pk for i in instructions])
    for instruction in instructions:
        messages = []
        if config.system_prompt.strip():
            messages.append({"role": "system", "content": config.system_prompt})
        messages.append({"role": "user", "content": frozen.get(instruction.pk, instruction.text)})
        items.append(
            GenerationItem(
                item_id=str(instruction.pk),
                messages=messages,
                max_new_tokens=config.max_new_tokens,
                temperature=config.temperature,
                top_p=config.top_p,
                top_k=config.top_k,
                # One seed per (configuration, instruction): the same answer on a retry.
                seed=None if config.seed is None else (config.seed + instruction.pk) % 2**63,
            )
        )
    return items


class _Generation:
    """Generation's part of a batched run (runs.batched): each instruction answered once."""

    job_kind = JobKind.GENERATION_BATCH
    run_model = GenerationRun
    batch_model = GenerationBatch
    incomplete = BatchIncomplete

    def todo(self, run: GenerationRun, batch: GenerationBatch) -> list[Any]:
        done = set(
            Generation.objects.filter(
                run=run, instruction_id__in=batch.instruction_ids
            ).values_list("instruction_id", flat=True)
        )
        return [pk for pk in batch.instruction_ids if pk not in done]

    def build_items(self, run: GenerationRun, todo: list[Any]) -> list[GenerationItem]:
        return build_items(run.config, list(Instruction.objects.filter(pk__in=todo).order_by("pk")))

    def answer(self, backend: Generator, items: list[GenerationItem]) -> list[GenerationOutput]:
        return list(backend.generate(items))

    def write(
        self,
        run: GenerationRun,
        todo: list[Any],
        items: list[GenerationItem],
        outputs: list[GenerationOutput],
    ) -> str:
        return _write(run, todo, outputs)

    def refresh_counters(self, run_id: int) -> None:
        _refresh_counters(run_id)

    def resume_fields(self) -> dict[str, Any]:
        return {}

    def finished(self, run_id: int) -> None:
        for finished_hook in hooks.run_finished:
            # The run's end is committed; a hook's failure must not fail the last batch (a
            # submission's page finishes it later).
            try:
                finished_hook(run_id)
            except Exception:
                logger.exception("run %s: the run_finished hook %r failed", run_id, finished_hook)


RUNS: BatchedRuns[GenerationRun, GenerationBatch, Generator, GenerationItem, GenerationOutput] = (
    BatchedRuns(_Generation())
)


def batch_generate(
    ctx: JobContext, *, generator_factory: Callable[[GenerationRun], Generator]
) -> None:
    """The body of a generation batch's job (runs.batched.BatchedRuns.batch_body): answer its
    instructions not yet answered in this run, then write every output in one transaction."""
    RUNS.batch_body(ctx, backend_factory=generator_factory)


def _outcome(out: GenerationOutput) -> str:
    if out.finish_reason == "stop" and out.text.strip():
        return Generation.Outcome.OK
    if out.finish_reason == "length":
        return Generation.Outcome.TRUNCATED
    return Generation.Outcome.FAILED


def _is_answer(outcome: str, out: GenerationOutput, scope: dict[str, Any]) -> bool:
    """Only a complete output becomes an answer of the material; a submission's run keeps a
    truncated one too (the version's fixed token limit cut the model's answer)."""
    if outcome == Generation.Outcome.OK:
        return True
    return (
        outcome == Generation.Outcome.TRUNCATED
        and bool(scope.get("keep_truncated"))
        and bool(out.text.strip())
    )


def _write(run: GenerationRun, todo: list[int], outputs: list[GenerationOutput]) -> str:
    """Store the outputs; complete ones become answers of the material. Returns the error
    ("" when every instruction got an output)."""
    wanted = set(todo)
    config = run.config
    rows: list[Generation] = []
    answers: list[Answer] = []
    assert config.model_id is not None, "a generation configuration names its model"
    for out in outputs:
        try:
            pk = int(out.item_id)
        except ValueError:
            continue
        if pk not in wanted:
            continue
        outcome = _outcome(out)
        rows.append(
            Generation(
                run=run,
                instruction_id=pk,
                outcome=outcome,
                text=out.text,
                finish_reason=out.finish_reason,
                error=out.error or ("empty answer" if outcome == Generation.Outcome.FAILED else ""),
                prompt_tokens=out.prompt_tokens,
                generated_tokens=out.generated_tokens,
                attempts=min(getattr(out, "attempts", 1), 32_767),
                seconds=out.seconds,
            )
        )
        if _is_answer(outcome, out, run.scope or {}):
            answers.append(
                Answer(
                    instruction_id=pk,
                    model_id=config.model_id,
                    text=out.text,
                    text_hash=sha256_hex(out.text),
                    generation_meta={
                        "config": config.name,
                        "config_version": config.version,
                        "config_id": config.pk,
                        "run": run.pk,
                        "parameters": config.parameters(),
                        "seed": None if config.seed is None else (config.seed + pk) % 2**63,
                        "seconds": round(out.seconds, 3),
                        "prompt_tokens": out.prompt_tokens,
                        "generated_tokens": out.generated_tokens,
                        "finish_reason": out.finish_reason,
                    },
                )
            )
    # A stale claim taken over while the first worker still finished: the answer's natural key
    # keeps one answer, and the unique (run, instruction) keeps the first output. The answers go
    # first, so each output is written with its answer in one insert.
    Answer.objects.bulk_create(answers, ignore_conflicts=True)
    if (run.scope or {}).get("reserve") and answers:
        # In the same transaction as the answers: no assignment build sees them unreserved.
        ReservedAnswer.objects.bulk_create(
            [
                ReservedAnswer(answer_id=pk, purpose=ReservedAnswer.Purpose.SUBMISSION)
                for pk in Answer.objects.filter(
                    model_id=config.model_id, instruction_id__in=[a.instruction_id for a in answers]
                ).values_list("pk", flat=True)
            ],
            ignore_conflicts=True,
        )
    stored = {
        (instruction_id, text_hash): pk
        for pk, instruction_id, text_hash in Answer.objects.filter(
            model_id=config.model_id, instruction_id__in=[a.instruction_id for a in answers]
        ).values_list("pk", "instruction_id", "text_hash")
    }
    hashes = {a.instruction_id: a.text_hash for a in answers}
    for row in rows:
        if row.instruction_id in hashes:
            row.answer_id = stored.get((row.instruction_id, hashes[row.instruction_id]))
    Generation.objects.bulk_create(rows, ignore_conflicts=True)
    missing = wanted - {r.instruction_id for r in rows}
    return f"no output for {len(missing)} instructions" if missing else ""


def _refresh_counters(run_id: int) -> None:
    """Recounted from the outputs, never incremented: a duplicate batch cannot count twice."""
    agg = Generation.objects.filter(run_id=run_id).aggregate(
        done=Count("pk"),
        failed=Count("pk", filter=Q(outcome=Generation.Outcome.FAILED)),
        truncated=Count("pk", filter=Q(outcome=Generation.Outcome.TRUNCATED)),
        prompt=Sum("prompt_tokens"),
        generated=Sum("generated_tokens"),
    )
    seconds = GenerationBatch.objects.filter(run_id=run_id).aggregate(s=Sum("seconds"))["s"]
    GenerationRun.objects.filter(pk=run_id).update(
        done=agg["done"],
        failed=agg["failed"],
        truncated=agg["truncated"],
        prompt_tokens=agg["prompt"] or 0,
        generated_tokens=agg["generated"] or 0,
        seconds=seconds or 0,
    )


def batch_after(job: Job) -> None:
    """A batch's job finished (done or failed): its run may be complete."""
    RUNS.batch_after(job)


def batch_execute(*, batch_id: int, generator_factory: Callable[[GenerationRun], Generator]) -> str:
    """Run one batch's job in this process, through the job skeleton (inline runs, tests)."""
    return RUNS.batch_execute(batch_id=batch_id, backend_factory=generator_factory)


def run_execute_inline(
    *, run: GenerationRun, generator_factory: Callable[[GenerationRun], Generator]
) -> GenerationRun:
    """Generate every open batch here (the demo, the management command's --wait, tests)."""
    return RUNS.execute_inline(run=run, backend_factory=generator_factory)
