"""Writes of the judging app: configuration versions, runs, batches and their execution.

A run is split into batches; each batch is a Job of kind "judge_batch" (jobs.services: one
claim by compare-and-set, a heartbeat column that a stale claim may be taken over by, retries,
the stale-job sweeper). Its results are written in one transaction with
`bulk_create(ignore_conflicts=True)` against the unique (run, triple), and triples already
judged are skipped. So a worker killed mid-batch loses only that batch's unfinished work, and a
retried or duplicated task never judges a triple twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import partial
from typing import Any, Literal

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from jobs.models import Job, JobKind, JobStatus
from jobs.services import JobContext, enqueue, enqueue_many, job_run, job_send
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


def heartbeat_seconds() -> float:
    return float(getattr(settings, "JUDGE_HEARTBEAT_SECONDS", 30))


def stale_after() -> timedelta:
    """A claim whose heartbeat is older than this belongs to a dead worker."""
    return timedelta(seconds=float(getattr(settings, "JUDGE_CLAIM_STALE_SECONDS", 120)))


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
        _enqueue_on_commit(run.pk)
    return run


@transaction.atomic
def run_plan_batches(*, run: JudgeRun) -> int:
    """Split the run's triples into batches (idempotent: an already planned run is left alone)."""
    if run.batches.exists():
        return int(run.batches.count())
    ids = list(scope_triples(run.scope, run.kind).values_list("pk", flat=True))
    if run.scope.get("limit"):
        ids = ids[: int(run.scope["limit"])]
    size = max(1, run.config.batch_size)
    starts = range(0, len(ids), size)
    # Sent by run_create / run_resume once the run commits, not here.
    jobs = enqueue_many(
        JobKind.JUDGE_BATCH,
        [{"run": run.pk, "number": n} for n in range(len(starts))],
        user=run.created_by,
        send=False,
    )
    JudgeBatch.objects.bulk_create(
        JudgeBatch(run=run, job=job, number=n, triple_ids=ids[start : start + size])
        for n, (start, job) in enumerate(zip(starts, jobs, strict=True))
    )
    # A pairwise run's unit of work is a call: one per (triple, template).
    total = len(ids) * (len(run.templates) if run.is_pairwise else 1)
    JudgeRun.objects.filter(pk=run.pk).update(total=total)
    run.total = total
    if not ids:
        JudgeRun.objects.filter(pk=run.pk).update(status=RunStatus.DONE, finished_at=timezone.now())
        run.status = RunStatus.DONE
    return (len(ids) + size - 1) // size


def _batch_jobs(run_id: int) -> Any:
    return Job.objects.filter(kind=JobKind.JUDGE_BATCH, judge_batch__run_id=run_id)


@transaction.atomic
def run_cancel(*, run: JudgeRun) -> None:
    """Stop a run: queued batches are cancelled; a batch being judged still saves its results."""
    JudgeRun.objects.filter(pk=run.pk).update(
        cancelled=True, status=RunStatus.CANCELLED, finished_at=timezone.now()
    )
    _batch_jobs(run.pk).filter(status=JobStatus.QUEUED).update(status=JobStatus.CANCELLED)
    run.refresh_from_db()


@transaction.atomic
def run_resume(*, run: JudgeRun, stale: timedelta | None = None) -> int:
    """Resume a cancelled, failed or stalled run: re-queue every batch that is not done.

    Failed and cancelled batches, and batches whose claim went stale, are reset and queued again
    at once (not left to the beat's sweeper, which runs every few minutes). A batch still being
    judged by a live worker is sent too; its task does nothing while the claim is fresh, and the
    sweeper re-sends it should that worker die. Returns the number of batches queued.
    """
    now = timezone.now()
    stale_before = now - (stale if stale is not None else stale_after())
    jobs = _batch_jobs(run.pk)
    jobs.filter(
        Q(status__in=[JobStatus.FAILED, JobStatus.CANCELLED])
        | Q(status=JobStatus.RUNNING, heartbeat_at__lt=stale_before)
    ).update(status=JobStatus.QUEUED, heartbeat_at=None)
    JudgeRun.objects.filter(pk=run.pk).update(
        cancelled=False,
        status=RunStatus.RUNNING,
        started_at=now,
        finished_at=None,
        done_at_start=F("done"),
        message="",
    )
    pending = list(jobs.exclude(status=JobStatus.DONE).values_list("pk", flat=True))
    if not pending:
        _run_finish_if_complete(run.pk)
    else:
        _enqueue_on_commit(run.pk)
    run.refresh_from_db()
    return len(pending)


def _enqueue_on_commit(run_id: int) -> None:
    def send() -> None:
        for job_id in (
            _batch_jobs(run_id).exclude(status=JobStatus.DONE).values_list("pk", flat=True)
        ):
            job_send(job_id, JobKind.JUDGE_BATCH)

    transaction.on_commit(send)


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


def batch_judge(ctx: JobContext, *, backend_factory: Callable[[JudgeRun], JudgeBackend]) -> None:
    """The body of a judge batch's job: judge its triples not yet judged and write the results
    in one go. The backend is only asked for when there is work, so a duplicate never loads a
    model. Raises BatchIncomplete when some triples got no verdict (the job retries or fails)."""
    batch = JudgeBatch.objects.select_related("run__config").get(job_id=ctx.job.pk)
    run = batch.run
    if run.cancelled:
        # Claimed in the moment the run was cancelled: give the job up as cancelled.
        Job.objects.filter(pk=ctx.job.pk, attempts=ctx.attempt).update(status=JobStatus.CANCELLED)
        return
    if run.is_pairwise:
        _batch_judge_pairwise(ctx, batch, run, backend_factory)
        return
    judged = set(
        JudgeEstimate.objects.filter(run=run, triple_id__in=batch.triple_ids).values_list(
            "triple_id", flat=True
        )
    )
    todo = [tid for tid in batch.triple_ids if tid not in judged]
    started = time.monotonic()
    outputs: list[JudgeOutput] = []
    if todo:
        triples = list(
            Triple.objects.filter(pk__in=todo)
            .select_related("answer__instruction", "criterion", "rubric")
            .order_by("answer_id", "position", "id")
        )
        items = build_items(run.config, triples)
        # A model call can take minutes, longer than the staleness limit: beat from a thread.
        with ctx.heartbeat(heartbeat_seconds()):
            outputs = list(backend_factory(run).judge(items))
    error = _batch_write(batch, run, todo, outputs, time.monotonic() - started)
    if error:
        raise BatchIncomplete(error)


def _batch_judge_pairwise(
    ctx: JobContext,
    batch: JudgeBatch,
    run: JudgeRun,
    backend_factory: Callable[[JudgeRun], JudgeBackend],
) -> None:
    """batch_judge for a side-by-side run: one call per (triple, template) not yet answered,
    written in one transaction (unique per run, triple and template)."""
    calls = pairwise.todo_items(run, batch.triple_ids)
    started = time.monotonic()
    outputs: list[JudgeOutput] = []
    items: dict[str, JudgeItem] = {}
    if calls:
        items = {it.item_id: it for it in pairwise.build_items(run, calls)}
        with ctx.heartbeat(heartbeat_seconds()):
            outputs = list(backend_factory(run).judge(list(items.values())))
    rows, transport_errors = [], []
    for out in outputs:
        item = items.get(out.item_id)
        if item is None:
            continue
        if not out.raw_text and (out.parse.error or "").startswith(REQUEST_FAILED):
            transport_errors.append(out.parse.error or "")  # not an answer: asked again later
            continue
        # The backend's own parse is POLLUX's; the label is read by the REPA parser.
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
    with transaction.atomic():
        PairwiseJudgeEstimate.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
        JudgeBatch.objects.filter(pk=batch.pk).update(seconds=time.monotonic() - started)
        _run_refresh_counters(run.pk)
    missing = len(calls) - len(rows)
    if missing:
        error = f"no answer for {missing} calls"
        if transport_errors:
            error += f" ({transport_errors[0][:500]})"
        raise BatchIncomplete(error)


def batch_after(job: Job) -> None:
    """A batch's job finished (done or failed): its run may be complete."""
    run_id = JudgeBatch.objects.values_list("run_id", flat=True).filter(job_id=job.pk).first()
    if run_id is not None:
        _run_finish_if_complete(run_id)


def batch_execute(
    *, batch_id: int, backend_factory: Callable[[JudgeRun], JudgeBackend]
) -> ClaimResult:
    """Run one batch's job here, through the job skeleton (inline runs, tests): "claimed" when
    this call judged it, "busy" when a live worker holds it, "gone" when it is finished or
    cancelled."""
    job_id = JudgeBatch.objects.values_list("job_id", flat=True).get(pk=batch_id)
    outcome = job_run(
        job_id,
        partial(batch_judge, backend_factory=backend_factory),
        stale_after=stale_after(),
        after=batch_after,
    )
    return outcome if outcome in ("busy", "gone") else "claimed"  # type: ignore[return-value]


@transaction.atomic
def _batch_write(
    batch: JudgeBatch,
    run: JudgeRun,
    todo: list[int],
    outputs: list[JudgeOutput],
    seconds: float,
) -> str:
    """Save the verdicts; returns the batch's error ("" when every triple got a verdict)."""
    wanted = set(todo)
    rows = []
    transport_errors: list[str] = []
    for out in outputs:
        triple_id = int(out.item_id)
        if triple_id not in wanted:
            continue
        parse = out.parse
        if not out.raw_text and (parse.error or "").startswith(REQUEST_FAILED):
            # The endpoint never answered: not a verdict, so not stored; the batch fails and
            # a retry or resume asks again (a stored failure would be skipped forever).
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
    JudgeBatch.objects.filter(pk=batch.pk).update(seconds=seconds)
    missing = wanted - {r.triple_id for r in rows}
    error = ""
    if missing:
        error = f"no verdict for {len(missing)} triples"
        if transport_errors:
            error += f" ({transport_errors[0][:500]})"
    _run_refresh_counters(run.pk)
    return error


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


def _run_finish_if_complete(run_id: int) -> None:
    _run_refresh_counters(run_id)
    jobs = _batch_jobs(run_id)
    if jobs.filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).exists():
        return
    failed = jobs.filter(status=JobStatus.FAILED).count()
    # Only a running run is finished here: a cancelled one stays cancelled.
    finished = JudgeRun.objects.filter(pk=run_id, status=RunStatus.RUNNING).update(
        status=RunStatus.FAILED if failed else RunStatus.DONE,
        finished_at=timezone.now(),
        message=f"{failed} batches failed; resume the run to retry them" if failed else "",
    )
    if finished:
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


def run_execute_inline(
    *, run: JudgeRun, backend_factory: Callable[[JudgeRun], JudgeBackend]
) -> JudgeRun:
    """Judge every open batch in this process (management command --wait, demo, tests)."""
    for batch_id, job_id in (
        JudgeBatch.objects.filter(run=run)
        .exclude(job__status=JobStatus.DONE)
        .order_by("number")
        .values_list("pk", "job_id")
    ):
        Job.objects.filter(pk=job_id, status=JobStatus.FAILED).update(status=JobStatus.QUEUED)
        if JudgeRun.objects.filter(pk=run.pk, cancelled=True).exists():
            break
        try:
            batch_execute(batch_id=batch_id, backend_factory=backend_factory)
        except BatchIncomplete:
            continue  # recorded on the batch's job; the run ends failed and can be resumed
    run.refresh_from_db()
    return run


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
