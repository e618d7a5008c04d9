"""Writes of the judging app: configuration versions, runs, batches and their execution.

A run is split into batches; each batch is one Celery task. A batch is claimed by
compare-and-set on its status (a claim whose heartbeat went stale may be taken over), its
results are written in one transaction with `bulk_create(ignore_conflicts=True)` against the
unique (run, triple), and triples already judged are skipped. So a worker killed mid-batch loses
only that batch's unfinished work, and a retried or duplicated task never judges a triple twice.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, Literal

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from judge_worker import JudgeBackend, JudgeItem, JudgeOutput, build_messages, render_rubrics
from judging.models import (
    BatchStatus,
    JudgeBatch,
    JudgeConfig,
    JudgeEstimate,
    JudgeReport,
    JudgeRun,
    RunStatus,
    default_prompt_template,
)
from judging.report import report_fingerprint, run_report
from judging.selectors import scope_triples
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
) -> JudgeRun:
    """Create a run over the scope's triples, plan its batches and (after commit) queue them."""
    run = JudgeRun.objects.create(
        config=config,
        backend=backend or config.backend,
        scope=clean_scope(scope),
        created_by=created_by,
        status=RunStatus.RUNNING,
        started_at=timezone.now(),
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
    ids = list(scope_triples(run.scope).values_list("pk", flat=True))
    if run.scope.get("limit"):
        ids = ids[: int(run.scope["limit"])]
    size = max(1, run.config.batch_size)
    JudgeBatch.objects.bulk_create(
        JudgeBatch(run=run, number=n, triple_ids=ids[start : start + size])
        for n, start in enumerate(range(0, len(ids), size))
    )
    JudgeRun.objects.filter(pk=run.pk).update(total=len(ids))
    run.total = len(ids)
    if not ids:
        JudgeRun.objects.filter(pk=run.pk).update(status=RunStatus.DONE, finished_at=timezone.now())
        run.status = RunStatus.DONE
    return (len(ids) + size - 1) // size


@transaction.atomic
def run_cancel(*, run: JudgeRun) -> None:
    """Stop a run: queued batches become no-ops; a batch being judged still saves its results."""
    JudgeRun.objects.filter(pk=run.pk).update(
        cancelled=True, status=RunStatus.CANCELLED, finished_at=timezone.now()
    )
    run.refresh_from_db()


@transaction.atomic
def run_resume(*, run: JudgeRun, stale: timedelta | None = None) -> int:
    """Resume a cancelled, failed or stalled run: re-queue every batch that is not done.

    This does not rely on the broker redelivering a dead worker's task (Redis does so only after
    its visibility timeout, hours later): failed batches and batches whose claim went stale are
    reset and queued again. A batch still being judged by a live worker is queued too; its task
    backs off while the claim is fresh. Returns the number of batches queued.
    """
    now = timezone.now()
    stale_before = now - (stale if stale is not None else stale_after())
    JudgeBatch.objects.filter(run=run).filter(
        Q(status=BatchStatus.FAILED) | Q(status=BatchStatus.RUNNING, heartbeat_at__lt=stale_before)
    ).update(status=BatchStatus.QUEUED, claim_token="")
    JudgeRun.objects.filter(pk=run.pk).update(
        cancelled=False,
        status=RunStatus.RUNNING,
        started_at=now,
        finished_at=None,
        done_at_start=F("done"),
        message="",
    )
    pending = list(
        JudgeBatch.objects.filter(run=run)
        .exclude(status=BatchStatus.DONE)
        .values_list("pk", flat=True)
    )
    if not pending:
        _run_finish_if_complete(run.pk)
    else:
        _enqueue_on_commit(run.pk)
    run.refresh_from_db()
    return len(pending)


def _enqueue_on_commit(run_id: int) -> None:
    def send() -> None:
        # judging.tasks imports this module: the task is named here, when it is sent.
        from judging.tasks import judge_batch

        for batch_id in (
            JudgeBatch.objects.filter(run_id=run_id)
            .exclude(status=BatchStatus.DONE)
            .values_list("pk", flat=True)
        ):
            judge_batch.delay(batch_id)

    transaction.on_commit(send)


# --- batches --------------------------------------------------------------------------------

ClaimResult = Literal["claimed", "busy", "gone"]


def batch_claim(*, batch_id: int, token: str) -> ClaimResult:
    """Compare-and-set: take a queued batch, or one whose claim went stale.

    "busy": another live worker holds it (try later); "gone": done, failed or cancelled.
    """
    now = timezone.now()
    claimed = (
        JudgeBatch.objects.filter(pk=batch_id, run__cancelled=False)
        .filter(
            Q(status=BatchStatus.QUEUED)
            | Q(status=BatchStatus.RUNNING, heartbeat_at__lt=now - stale_after())
        )
        .update(
            status=BatchStatus.RUNNING,
            claim_token=token,
            claimed_by=f"{socket.gethostname()}:{os.getpid()}",
            claimed_at=now,
            heartbeat_at=now,
            attempts=F("attempts") + 1,
            error="",
        )
    )
    if claimed:
        return "claimed"
    busy = JudgeBatch.objects.filter(
        pk=batch_id, run__cancelled=False, status=BatchStatus.RUNNING
    ).exists()
    return "busy" if busy else "gone"


@contextmanager
def _heartbeat(batch_id: int, token: str) -> Iterator[None]:
    """Refresh the claim's heartbeat from a thread while the backend works (a model call can
    take minutes, longer than the staleness limit).

    Skipped inside an open transaction (tests, inline runs): the thread's own connection would
    wait for the claim row's lock held by that transaction.
    """
    if connection.in_atomic_block:
        yield
        return
    stop = threading.Event()
    interval = heartbeat_seconds()

    def beat() -> None:
        try:
            while not stop.wait(interval):
                JudgeBatch.objects.filter(pk=batch_id, claim_token=token).update(
                    heartbeat_at=timezone.now()
                )
        finally:
            connection.close()

    thread = threading.Thread(target=beat, name=f"judge-heartbeat-{batch_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def build_items(config: JudgeConfig, triples: Sequence[Triple]) -> list[JudgeItem]:
    """Judge prompts for triples loaded with answer__instruction, criterion and rubric."""
    custom = config.prompt_template.strip() != default_prompt_template().strip()
    items = []
    for triple in triples:
        instruction = triple.answer.instruction
        criterion = triple.criterion
        levels = triple.rubric.levels
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
                allowed_scores=tuple(float(v) for v in triple.rubric.values),
                meta={"criterion": criterion.key},
            )
        )
    return items


def batch_execute(
    *, batch_id: int, backend_factory: Callable[[JudgeRun], JudgeBackend], token: str | None = None
) -> ClaimResult:
    """Claim a batch, judge its triples not yet judged, and write the results in one go.

    The backend is only asked for when there is work, so a duplicate task never loads a model.
    """
    token = token or uuid.uuid4().hex
    claim = batch_claim(batch_id=batch_id, token=token)
    if claim != "claimed":
        return claim
    batch = JudgeBatch.objects.select_related("run__config").get(pk=batch_id)
    run = batch.run
    judged = set(
        JudgeEstimate.objects.filter(run=run, triple_id__in=batch.triple_ids).values_list(
            "triple_id", flat=True
        )
    )
    todo = [tid for tid in batch.triple_ids if tid not in judged]
    started = time.monotonic()
    outputs: list[JudgeOutput] = []
    try:
        if todo:
            triples = list(
                Triple.objects.filter(pk__in=todo)
                .select_related("answer__instruction", "criterion", "rubric")
                .order_by("answer_id", "position", "id")
            )
            items = build_items(run.config, triples)
            with _heartbeat(batch_id, token):
                outputs = list(backend_factory(run).judge(items))
    except Exception as exc:
        JudgeBatch.objects.filter(pk=batch_id, claim_token=token).update(
            status=BatchStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000]
        )
        _run_finish_if_complete(run.pk)
        raise
    error = _batch_write(batch, run, token, todo, outputs, time.monotonic() - started)
    if error:
        raise BatchIncomplete(error)
    return "claimed"


@transaction.atomic
def _batch_write(
    batch: JudgeBatch,
    run: JudgeRun,
    token: str,
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
    missing = wanted - {r.triple_id for r in rows}
    status = BatchStatus.FAILED if missing else BatchStatus.DONE
    error = ""
    if missing:
        error = f"no verdict for {len(missing)} triples"
        if transport_errors:
            error += f" ({transport_errors[0][:500]})"
    JudgeBatch.objects.filter(pk=batch.pk, claim_token=token).update(
        status=status, finished_at=timezone.now(), seconds=seconds, error=error
    )
    _run_finish_if_complete(run.pk)
    return error


def _run_refresh_counters(run_id: int) -> None:
    """Counters are recounted from the estimates, never incremented: a retried or duplicated
    batch cannot count twice."""
    agg = JudgeEstimate.objects.filter(run_id=run_id).aggregate(
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
    open_batches = JudgeBatch.objects.filter(
        run_id=run_id, status__in=[BatchStatus.QUEUED, BatchStatus.RUNNING]
    ).exists()
    if open_batches:
        return
    failed = JudgeBatch.objects.filter(run_id=run_id, status=BatchStatus.FAILED).count()
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


def batch_requeue(*, batch_id: int) -> None:
    """Put a failed batch back in the queue (its task is about to be retried)."""
    JudgeBatch.objects.filter(pk=batch_id, status=BatchStatus.FAILED).update(
        status=BatchStatus.QUEUED
    )


def batch_give_up(*, batch_id: int, error: str) -> None:
    """Retries exhausted: the batch stays failed until the run is resumed."""
    JudgeBatch.objects.filter(pk=batch_id).exclude(status=BatchStatus.DONE).update(
        status=BatchStatus.FAILED, error=error[:2000]
    )
    run_id = JudgeBatch.objects.values_list("run_id", flat=True).get(pk=batch_id)
    _run_finish_if_complete(run_id)


def run_execute_inline(
    *, run: JudgeRun, backend_factory: Callable[[JudgeRun], JudgeBackend]
) -> JudgeRun:
    """Judge every open batch in this process (management command --wait, demo, tests)."""
    for batch_id in (
        JudgeBatch.objects.filter(run=run)
        .exclude(status=BatchStatus.DONE)
        .order_by("number")
        .values_list("pk", flat=True)
    ):
        JudgeBatch.objects.filter(pk=batch_id, status=BatchStatus.FAILED).update(
            status=BatchStatus.QUEUED
        )
        if JudgeRun.objects.filter(pk=run.pk, cancelled=True).exists():
            break
        try:
            batch_execute(batch_id=batch_id, backend_factory=backend_factory)
        except BatchIncomplete:
            continue  # recorded on the batch; the run ends failed and can be resumed
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


def report_claim_stale_after() -> timedelta:
    """A computation claimed longer ago than this belonged to a worker that died."""
    return timedelta(seconds=float(getattr(settings, "JUDGE_REPORT_CLAIM_STALE_SECONDS", 900)))


def report_request(run_id: int) -> bool:
    """Ask for the run's report to be (re)computed; at most one computation runs at a time.

    The claim is a compare-and-set on `computing_since` (nothing is locked across a request):
    the caller that sets it queues the Celery task once its transaction commits; a request
    while a computation runs is recorded in `requested_at` and honoured when it ends. Returns
    whether this call queued a computation.
    """
    now = timezone.now()
    JudgeReport.objects.get_or_create(run_id=run_id)
    JudgeReport.objects.filter(run_id=run_id).update(requested_at=now)
    claimed = (
        JudgeReport.objects.filter(run_id=run_id)
        .filter(
            Q(computing_since__isnull=True)
            | Q(computing_since__lt=now - report_claim_stale_after())
        )
        .update(computing_since=now)
    )
    if not claimed:
        return False

    def send() -> None:
        # judging.tasks imports this module: the task is named here, when it is sent.
        from judging.tasks import compute_report

        compute_report.delay(run_id)

    transaction.on_commit(send)
    return True


def report_compute(*, run_id: int, keep_claim_on_error: bool = False) -> JudgeReport:
    """Compute the run's report (numpy, judging.report) and store it with its inputs'
    fingerprint, then release the claim. Idempotent: computing again from the same data writes
    the same report; a task retried or duplicated costs a computation, never a wrong report.
    If a request came while it computed, the next computation is queued. On an error the
    claim is released (so a later page load asks again), or kept when the caller retries.
    """

    run = JudgeRun.objects.select_related("config").get(pk=run_id)
    report, _ = JudgeReport.objects.get_or_create(run=run)
    started = timezone.now()
    if report.computing_since is None:
        # Called directly (not through report_request): claim it for the duration.
        JudgeReport.objects.filter(pk=report.pk).update(computing_since=started)
    claim = JudgeReport.objects.values_list("computing_since", flat=True).get(pk=report.pk)
    clock = time.monotonic()
    try:
        data, fingerprint = run_report(run)
    except Exception as exc:
        JudgeReport.objects.filter(pk=report.pk).update(error=f"{type(exc).__name__}: {exc}"[:2000])
        if not keep_claim_on_error:
            JudgeReport.objects.filter(pk=report.pk, computing_since=claim).update(
                computing_since=None
            )
        raise
    JudgeReport.objects.filter(pk=report.pk).update(
        data=data,
        fingerprint=fingerprint,
        computed_at=timezone.now(),
        seconds=time.monotonic() - clock,
        error="",
    )
    released = JudgeReport.objects.filter(pk=report.pk, computing_since=claim).update(
        computing_since=None
    )
    report.refresh_from_db()
    if released and report.requested_at and claim and report.requested_at > claim:
        # Asked for again while computing: once more, unless nothing changed meanwhile.

        run.refresh_from_db()
        if report_fingerprint(run) != fingerprint:
            report_request(run_id)
    return report
