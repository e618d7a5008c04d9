"""Writes of the judging app: configuration versions, runs and what a judge batch does.

A run's life (batches as jobs, sending on commit, claims, counters, finishing, cancel, resume,
inline execution) is runs.batched.BatchedRuns; this module gives it judging's part (_Judging),
which asks the run's kind (judging.kinds: pointwise, pairwise) for what a batch has not judged
yet, its prompts and the estimates it writes, with `bulk_create(ignore_conflicts=True)` against
the kind's unique key, so a retried or duplicated task never judges anything twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, Literal

from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from jobs.models import Job, JobKind, JobStatus
from jobs.services import JobContext, enqueue
from judge_worker import JudgeBackend, JudgeItem, JudgeOutput
from judging import hooks, kinds
from judging.kinds import REQUEST_FAILED as REQUEST_FAILED
from judging.models import JudgeBatch, JudgeConfig, JudgeReport, JudgeRun, RunKind, RunStatus
from judging.pairwise import MAX_SHOTS as MAX_SHOTS
from judging.prompts import build_items as build_items
from judging.report import report_fingerprint, run_report
from judging.selectors import report_job_active, scope_triples
from runs.batched import BatchedRuns
from runs.batched import stale_after as stale_after  # the batch task's staleness
from runs.models import RunConfig
from runs.services import config_latest, config_next_version, config_unchanged

logger = logging.getLogger(__name__)

SCOPE_KEYS = ("model", "task", "panel", "all", "limit")
CONFIG_FIELDS = (
    "backend",
    "model_path",
    "endpoint",
    "endpoint_model",
    "api_key_env",
    "model_family",
    "prompt_template",
    "decoding",
    "batch_size",
)


class JudgingError(Exception):
    pass


class BatchIncomplete(JudgingError):
    """Some triples of a batch got no verdict (the endpoint failed); the rest were saved."""


# --- configurations -------------------------------------------------------------------------


@transaction.atomic
def config_save(*, name: str, created_by: Any = None, **fields: Any) -> JudgeConfig:
    """Save a configuration as a new version (version 1 for a new name).

    Nothing is ever updated in place, so old estimates keep the settings they were made with;
    saving the same values again returns the current version instead of a copy.
    """
    unknown = set(fields) - set(CONFIG_FIELDS)
    if unknown:
        raise JudgingError(f"unknown configuration fields: {sorted(unknown)}")
    current = config_latest(JudgeConfig, name)
    if current is not None:
        values = {f: fields.get(f, getattr(current, f)) for f in CONFIG_FIELDS}
        if config_unchanged(current, values):
            return current
    else:
        values = dict(fields)
    version = config_next_version(current)
    config = JudgeConfig(name=name, version=version, created_by=created_by, **values)
    config.full_clean()
    config.save()
    return config


# --- runs -----------------------------------------------------------------------------------


def clean_scope(scope: dict[str, Any]) -> dict[str, Any]:
    unknown = set(scope) - set(SCOPE_KEYS)
    if unknown:
        raise JudgingError(f"unknown scope keys: {sorted(unknown)}")
    cleaned = {k: int(v) for k, v in scope.items() if k != "all" and v not in (None, "", 0)}
    if scope.get("all"):
        cleaned = {"all": True, **({"limit": cleaned["limit"]} if "limit" in cleaned else {})}
    if not {"model", "task", "panel", "all"} & set(cleaned):
        raise JudgingError("a run needs a scope: a model, a task, a panel, or all")
    return cleaned


@transaction.atomic
def run_create(
    *,
    config: RunConfig,
    scope: dict[str, Any],
    created_by: Any = None,
    backend: str | None = None,
    enqueue: bool = True,
    kind: str = RunKind.POINTWISE,
    templates: Sequence[str] | None = None,
    shots: int | None = None,
    swap_of: JudgeRun | None = None,
) -> JudgeRun:
    """Create a run over the scope's triples, plan its batches and (after commit) queue them.

    A pairwise run (kind "pairwise") asks each of `templates` (default: REPA's three) with
    `shots` gold examples (default 1, REPA's few-shot setting; 0 is zero-shot). With `swap_of`
    it is that run's position-bias twin: the same scope, templates and shots, A and B swapped.
    """
    try:
        if swap_of is not None:
            # The twin's kind, scope and options are its original's.
            kind, scope, templates, shots = kinds.of(swap_of).twin_options(swap_of)
        run_kind = kinds.kinds.get(kind)
        if run_kind is None:
            raise ValueError(f"unknown run kind {kind!r}")
        fields = run_kind.run_fields(templates=templates, shots=shots, swap_of=swap_of)
    except ValueError as exc:
        raise JudgingError(str(exc)) from None
    run = JudgeRun.objects.create(
        config=config,
        backend=backend or config.backend,
        scope=clean_scope(scope),
        created_by=created_by,
        status=RunStatus.RUNNING,
        started_at=timezone.now(),
        kind=kind,
        **fields,
    )
    run_plan_batches(run=run)
    if enqueue:
        RUNS.send_on_commit(run.pk)
    return run


@transaction.atomic
def run_plan_batches(*, run: JudgeRun) -> int:
    """Split the run's triples into batches (idempotent: an already planned run is left alone)."""
    if run.batches.exists():
        return int(run.batches.count())
    ids = list(scope_triples(run.scope, run.kind).values_list("pk", flat=True))
    if run.scope.get("limit"):
        ids = ids[: int(run.scope["limit"])]
    total = kinds.of(run).total(run, len(ids))
    # Sent by run_create / run_resume once the run commits, not here.
    return RUNS.plan(run, ids, size=run.config.batch_size, total=total)


def run_cancel(*, run: JudgeRun) -> None:
    """Stop a run: queued batches are cancelled; a batch being judged still saves its results."""
    RUNS.cancel(run=run)


def run_resume(*, run: JudgeRun, stale: timedelta | None = None) -> int:
    """Resume a cancelled, failed or stalled run: re-queue every batch that is not done
    (runs.batched.BatchedRuns.resume). Returns the number of batches queued."""
    return RUNS.resume(run=run, stale=stale)


# --- batches --------------------------------------------------------------------------------

ClaimResult = Literal["claimed", "busy", "gone"]


class _Judging:
    """Judging's part of a batched run (runs.batched): the run's kind (judging.kinds) says what
    a batch still has to do, its prompts and how its outputs are written."""

    job_kind = JobKind.JUDGE_BATCH
    run_model = JudgeRun
    batch_model = JudgeBatch
    incomplete = BatchIncomplete

    def todo(self, run: JudgeRun, batch: JudgeBatch) -> list[Any]:
        return kinds.of(run).todo(run, batch.triple_ids)

    def build_items(self, run: JudgeRun, todo: list[Any]) -> list[JudgeItem]:
        return kinds.of(run).build_items(run, todo)

    def answer(self, backend: JudgeBackend, items: list[JudgeItem]) -> list[JudgeOutput]:
        return list(backend.judge(items))

    def write(
        self, run: JudgeRun, todo: list[Any], items: list[JudgeItem], outputs: list[JudgeOutput]
    ) -> str:
        return kinds.of(run).write(run, todo, items, outputs)

    def refresh_counters(self, run_id: int) -> None:
        _run_refresh_counters(run_id)

    def resume_fields(self) -> dict[str, Any]:
        # Throughput is measured from the restart.
        return {"started_at": timezone.now(), "done_at_start": F("done")}

    def finished(self, run_id: int) -> None:
        # The run's judging is over (done, or failed with what it judged): its report is
        # computed now, once the finishing transaction has committed.
        report_request(run_id)
        for finished_hook in hooks.run_finished:
            # The run's end is committed (autocommit here): a hook reads it. A hook's failure
            # must not fail the batch that happened to be last; its owner can finish later
            # (a submission's page does).
            try:
                finished_hook(run_id)
            except Exception:
                logger.exception("run %s: the run_finished hook %r failed", run_id, finished_hook)


RUNS: BatchedRuns[JudgeRun, JudgeBatch, JudgeBackend, JudgeItem, JudgeOutput] = BatchedRuns(
    _Judging()
)


def batch_judge(ctx: JobContext, *, backend_factory: Callable[[JudgeRun], JudgeBackend]) -> None:
    """The body of a judge batch's job (runs.batched.BatchedRuns.batch_body): judge what the
    batch has not judged yet; raises BatchIncomplete when some got no verdict."""
    RUNS.batch_body(ctx, backend_factory=backend_factory)


def batch_after(job: Job) -> None:
    """A batch's job finished (done or failed): its run may be complete."""
    RUNS.batch_after(job)


def batch_execute(
    *, batch_id: int, backend_factory: Callable[[JudgeRun], JudgeBackend]
) -> ClaimResult:
    """Run one batch's job here, through the job skeleton (inline runs, tests): "claimed" when
    this call judged it, "busy" when a live worker holds it, "gone" when it is finished or
    cancelled."""
    outcome = RUNS.batch_execute(batch_id=batch_id, backend_factory=backend_factory)
    return outcome if outcome in ("busy", "gone") else "claimed"  # type: ignore[return-value]


def _run_refresh_counters(run_id: int) -> None:
    """Counters are recounted from the estimates, never incremented: a retried or duplicated
    batch cannot count twice. Each kind counts its own estimates (a pairwise run: calls)."""
    kind = JudgeRun.objects.values_list("kind", flat=True).get(pk=run_id)
    agg = (
        kinds.kinds[kind]
        .estimate_model._default_manager.filter(run_id=run_id)
        .aggregate(
            done=Count("id"),
            failures=Count("id", filter=Q(parse_ok=False)),
            prompt=Sum("prompt_tokens"),
            generated=Sum("generated_tokens"),
        )
    )
    JudgeRun.objects.filter(pk=run_id).update(
        done=agg["done"],
        parse_failures=agg["failures"],
        prompt_tokens=agg["prompt"] or 0,
        generated_tokens=agg["generated"] or 0,
    )


def run_execute_inline(
    *, run: JudgeRun, backend_factory: Callable[[JudgeRun], JudgeBackend]
) -> JudgeRun:
    """Judge every open batch in this process (management command --wait, demo, tests)."""
    return RUNS.execute_inline(run=run, backend_factory=backend_factory)


def run_throughput(run: JudgeRun) -> float | None:
    """Triples per second since the run was (re)started."""
    if not run.started_at:
        return None
    end = run.finished_at or timezone.now()
    elapsed = (end - run.started_at).total_seconds()
    judged = run.done - run.done_at_start
    if elapsed <= 0 or judged <= 0:
        return None
    return judged / elapsed


# --- the stored judge-vs-experts report ---------------------------------------------------------


class _RequestLost(Exception):
    """Another request set the report's job first."""


def report_request(run_id: int) -> bool:
    """Ask for the run's report to be (re)computed, as a job of kind "judge_report"; at most one
    computation is active per run.

    The report's `job` is set by compare-and-set (nothing is locked across a request): the
    caller that sets it queues the job once its transaction commits; a request while a
    computation is active is recorded in `requested_at` and honoured when it ends. Returns
    whether this call queued a computation.
    """
    now = timezone.now()
    report, _ = JudgeReport.objects.select_related("job").get_or_create(run_id=run_id)
    JudgeReport.objects.filter(pk=report.pk).update(requested_at=now)
    if report_job_active(report):
        return False
    try:
        with transaction.atomic():
            job = enqueue(JobKind.JUDGE_REPORT, {"run": run_id})
            # Compare-and-set: only if the report still names the job we saw (or none).
            seen = Q(job__isnull=True) if report.job_id is None else Q(job_id=report.job_id)
            if not JudgeReport.objects.filter(seen, pk=report.pk).update(job=job):
                # Rolling the savepoint back drops the job and the callback that would send it.
                raise _RequestLost
    except _RequestLost:
        return False
    return True


def report_compute(*, run_id: int) -> JudgeReport:
    """Compute the run's report (numpy, judging.report) and store it with its inputs'
    fingerprint. Idempotent: computing again from the same data writes the same report; a job
    retried or duplicated costs a computation, never a wrong report. The job's body
    (judging.tasks.compute_report), and on demand (a command, a benchmark)."""

    run = JudgeRun.objects.select_related("config").get(pk=run_id)
    report, _ = JudgeReport.objects.get_or_create(run=run)
    clock = time.monotonic()
    try:
        data, fingerprint = run_report(run)
    except Exception as exc:
        JudgeReport.objects.filter(pk=report.pk).update(error=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    JudgeReport.objects.filter(pk=report.pk).update(
        data=data,
        fingerprint=fingerprint,
        computed_at=timezone.now(),
        seconds=time.monotonic() - clock,
        error="",
    )
    report.refresh_from_db()
    return report


def report_after(job: Job) -> None:
    """A report job finished: if a request came while it computed and the inputs changed since,
    the next computation is queued."""
    if not Job.objects.filter(pk=job.pk, status=JobStatus.DONE).exists():
        return  # failed: the error is on the report; a later page load asks again
    run_id = job.params.get("run")
    report = JudgeReport.objects.filter(run_id=run_id, job_id=job.pk).first()
    if report is None or not report.requested_at or not job.started_at:
        return
    if report.requested_at > job.started_at:
        run = JudgeRun.objects.get(pk=run_id)
        if report_fingerprint(run) != report.fingerprint:
            report_request(run.pk)
