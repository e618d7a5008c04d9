"""Writes of the judging app: configuration versions, runs and what a judge batch does.

A run's life (batches as jobs, sending on commit, claims, counters, finishing, cancel, resume,
inline execution) is jobs.batched.BatchedRuns; this module gives it judging's part (_Judging):
the triples, or (triple, template) calls, a batch has not judged yet, their prompts, and the
estimates written with `bulk_create(ignore_conflicts=True)` against the unique (run, triple)
or (run, triple, template), so a retried or duplicated task never judges anything twice.
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

from jobs.batched import BatchedRuns
from jobs.batched import stale_after as stale_after  # the batch task's staleness
from jobs.models import Job, JobKind, JobStatus
from jobs.services import JobContext, enqueue
from judge_worker import (
    PAIRWISE_TEMPLATES,
    JudgeBackend,
    JudgeItem,
    JudgeOutput,
    build_messages,
    render_rubrics,
)
from judging import hooks, pairwise
from judging.models import (
    JudgeBatch,
    JudgeConfig,
    JudgeEstimate,
    JudgeReport,
    JudgeRun,
    PairwiseJudgeEstimate,
    RunKind,
    RunStatus,
    default_prompt_template,
)
from judging.pairwise import DEFAULT_SHOTS, DEFAULT_TEMPLATES
from judging.report import report_fingerprint, run_report
from judging.selectors import report_job_active, scope_triples
from work.models import Triple

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


# At most this many gold examples in a pairwise prompt (REPA's few-shot setting gives one).
MAX_SHOTS = 5

# How judge_worker's HTTP backend marks an item whose request failed after its retries.
REQUEST_FAILED = "request failed"


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
    # Lock the name's versions so two admins saving at once get versions n+1 and n+2.
    current = JudgeConfig.objects.select_for_update().filter(name=name).order_by("-version").first()
    if current is not None:
        values = {f: fields.get(f, getattr(current, f)) for f in CONFIG_FIELDS}
        if all(getattr(current, f) == v for f, v in values.items()):
            return current
        version = current.version + 1
    else:
        values = dict(fields)
        version = 1
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
    config: JudgeConfig,
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
    if swap_of is not None:
        if swap_of.kind != RunKind.PAIRWISE:
            raise JudgingError("only a side-by-side run has a swapped twin")
        kind, templates, shots, scope = (
            RunKind.PAIRWISE,
            swap_of.templates,
            swap_of.shots,
            swap_of.scope,
        )
    fields: dict[str, Any] = {}
    if kind == RunKind.PAIRWISE:
        chosen = list(templates if templates is not None else DEFAULT_TEMPLATES)
        unknown = [t for t in chosen if t not in PAIRWISE_TEMPLATES]
        if not chosen or unknown or len(set(chosen)) != len(chosen):
            raise JudgingError(
                f"templates must be distinct names of {sorted(PAIRWISE_TEMPLATES)}, got {chosen}"
            )
        k = DEFAULT_SHOTS if shots is None else int(shots)
        if not 0 <= k <= MAX_SHOTS:
            raise JudgingError(f"shots must be between 0 and {MAX_SHOTS}, got {k}")
        fields = {
            "templates": chosen,
            "shots": k,
            "swapped": swap_of is not None and not swap_of.swapped,
            "swap_of": swap_of,
        }
    elif kind != RunKind.POINTWISE:
        raise JudgingError(f"unknown run kind {kind!r}")
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
    # A pairwise run's unit of work is a call: one per (triple, template).
    total = len(ids) * (len(run.templates) if run.is_pairwise else 1)
    # Sent by run_create / run_resume once the run commits, not here.
    return RUNS.plan(run, ids, size=run.config.batch_size, total=total)


def run_cancel(*, run: JudgeRun) -> None:
    """Stop a run: queued batches are cancelled; a batch being judged still saves its results."""
    RUNS.cancel(run=run)


def run_resume(*, run: JudgeRun, stale: timedelta | None = None) -> int:
    """Resume a cancelled, failed or stalled run: re-queue every batch that is not done
    (jobs.batched.BatchedRuns.resume). Returns the number of batches queued."""
    return RUNS.resume(run=run, stale=stale)


# --- batches --------------------------------------------------------------------------------

ClaimResult = Literal["claimed", "busy", "gone"]


def build_items(config: JudgeConfig, triples: Sequence[Triple]) -> list[JudgeItem]:
    """Judge prompts for triples loaded with answer__instruction, criterion and rubric."""
    custom = config.prompt_template.strip() != default_prompt_template().strip()
    items = []
    for triple in triples:
        instruction = triple.answer.instruction
        criterion, rubric = triple.criterion, triple.rubric
        # A run's triples come from scope_triples, which keeps to rubric (pointwise) triples,
        # and those always have both (the check constraint triple_fields_of_kind).
        assert criterion is not None and rubric is not None, f"triple {triple.pk} is not rubric"
        levels = rubric.levels
        rubrics = render_rubrics(
            [(str(lv["value"]), str(lv.get("ru") or lv.get("en") or "")) for lv in levels]
        )
        criterion_name = criterion.name_ru or criterion.name_en
        reference = instruction.reference_answer or None
        if custom:
            # An admin-edited template: plain str.format over the POLLUX placeholders.
            prompt = config.prompt_template.format_map(
                {
                    "instruction": instruction.text,
                    "answer": triple.answer.text,
                    "criteria_name": criterion_name,
                    "rubrics": rubrics,
                    "reference_answer": reference or "",
                }
            )
            messages = [{"role": "user", "content": prompt}]
        else:
            messages = build_messages(
                instruction=instruction.text,
                answer=triple.answer.text,
                criterion_name=criterion_name,
                rubrics=rubrics,
                reference_answer=reference,
            )
        items.append(
            JudgeItem(
                item_id=str(triple.pk),
                prefix_key=str(triple.answer_id),
                messages=messages,
                allowed_scores=tuple(float(v) for v in rubric.values),
                meta={"criterion": criterion.key},
            )
        )
    return items


class _Judging:
    """Judging's part of a batched run (jobs.batched): a pointwise run judges each triple once,
    a side-by-side run asks each (triple, template) once."""

    job_kind = JobKind.JUDGE_BATCH
    run_model = JudgeRun
    batch_model = JudgeBatch
    ids_field = "triple_ids"
    job_related = "judge_batch"
    incomplete = BatchIncomplete

    def todo(self, run: JudgeRun, batch: JudgeBatch) -> list[Any]:
        if run.is_pairwise:
            return list(pairwise.todo_items(run, batch.triple_ids))
        judged = set(
            JudgeEstimate.objects.filter(run=run, triple_id__in=batch.triple_ids).values_list(
                "triple_id", flat=True
            )
        )
        return [tid for tid in batch.triple_ids if tid not in judged]

    def build_items(self, run: JudgeRun, todo: list[Any]) -> list[JudgeItem]:
        if run.is_pairwise:
            return list(pairwise.build_items(run, todo))
        triples = list(
            Triple.objects.filter(pk__in=todo)
            .select_related("answer__instruction", "criterion", "rubric")
            .order_by("answer_id", "position", "id")
        )
        return build_items(run.config, triples)

    def answer(self, backend: JudgeBackend, items: list[JudgeItem]) -> list[JudgeOutput]:
        return list(backend.judge(items))

    def write(
        self, run: JudgeRun, todo: list[Any], items: list[JudgeItem], outputs: list[JudgeOutput]
    ) -> str:
        if run.is_pairwise:
            return _write_pairwise(run, todo, items, outputs)
        return _write_pointwise(run, todo, outputs)

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


def _transport_error(out: JudgeOutput) -> bool:
    """The endpoint never answered: not a verdict, so not stored; the batch fails and a retry
    or resume asks again (a stored failure would be skipped forever)."""
    return not out.raw_text and (out.parse.error or "").startswith(REQUEST_FAILED)


def _with_cause(error: str, transport_errors: list[str]) -> str:
    """A batch's error, with the first transport error as its cause."""
    if error and transport_errors:
        error += f" ({transport_errors[0][:500]})"
    return error


def _write_pointwise(run: JudgeRun, todo: list[int], outputs: list[JudgeOutput]) -> str:
    """Save the verdicts; returns the batch's error ("" when every triple got a verdict)."""
    wanted = set(todo)
    rows = []
    transport_errors: list[str] = []
    for out in outputs:
        triple_id = int(out.item_id)
        if triple_id not in wanted:
            continue
        parse = out.parse
        if _transport_error(out):
            transport_errors.append(parse.error or "")
            continue
        ok = bool(parse.ok and parse.score is not None)
        rows.append(
            JudgeEstimate(
                run=run,
                triple_id=triple_id,
                config_id=run.config_id,
                score=float(parse.score) if ok and parse.score is not None else None,
                parse_ok=ok,
                error="" if ok else (parse.error or "no score"),
                raw_text=out.raw_text,
                feedback=parse.feedback or "",
                prompt_tokens=out.prompt_tokens,
                generated_tokens=out.generated_tokens,
                seconds=out.seconds,
            )
        )
    # ignore_conflicts: a stale claim taken over while the first worker still finished writes
    # the same triples; the unique (run, triple) keeps the first estimate.
    JudgeEstimate.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    missing = wanted - {r.triple_id for r in rows}
    return _with_cause(
        f"no verdict for {len(missing)} triples" if missing else "", transport_errors
    )


def _write_pairwise(
    run: JudgeRun, calls: list[Any], items: list[JudgeItem], outputs: list[JudgeOutput]
) -> str:
    """Save a side-by-side batch's labels (unique per run, triple and template); the label is
    read by the REPA parser, not the backend's POLLUX parse."""
    by_id = {it.item_id: it for it in items}
    rows, transport_errors = [], []
    for out in outputs:
        item = by_id.get(out.item_id)
        if item is None:
            continue
        if _transport_error(out):
            transport_errors.append(out.parse.error or "")  # not an answer: asked again later
            continue
        rows.append(
            pairwise.estimate_from_output(
                run,
                item,
                out.raw_text,
                prompt_tokens=out.prompt_tokens,
                generated_tokens=out.generated_tokens,
                seconds=out.seconds,
            )
        )
    PairwiseJudgeEstimate.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    missing = len(calls) - len(rows)
    return _with_cause(f"no answer for {missing} calls" if missing else "", transport_errors)


def batch_judge(ctx: JobContext, *, backend_factory: Callable[[JudgeRun], JudgeBackend]) -> None:
    """The body of a judge batch's job (jobs.batched.BatchedRuns.batch_body): judge what the
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
    batch cannot count twice. A pairwise run counts calls (triple, template)."""
    kind = JudgeRun.objects.values_list("kind", flat=True).get(pk=run_id)
    model = PairwiseJudgeEstimate if kind == RunKind.PAIRWISE else JudgeEstimate
    agg = model.objects.filter(run_id=run_id).aggregate(
        done=Count("id"),
        failures=Count("id", filter=Q(parse_ok=False)),
        prompt=Sum("prompt_tokens"),
        generated=Sum("generated_tokens"),
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
