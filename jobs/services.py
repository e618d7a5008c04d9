"""The one job system: every long Celery task runs as a Job row (jobs.models.Job).

- `enqueue(kind, params, user=...)` creates the row and sends its task once the row is committed.
- `job_claim` gives the job to one attempt by compare-and-set on (status, attempts, heartbeat):
  a queued job, or a running one whose heartbeat went stale (its worker died). A redelivered or
  re-sent task of a job that is done, or held by a live worker, gets nothing.
- The owner proves it is alive through `heartbeat_at`: the progress writer refreshes it with
  every report, and `job_heartbeat` from a thread while one long call (a model) blocks.
- `job_finish` ends the job only if this attempt still owns it.
- `jobs_requeue_stale` (beat) re-sends running jobs of every kind whose heartbeat went stale:
  Redis redelivers an unacknowledged task only after its visibility timeout (hours).
- `@job_task(kind)` is the task skeleton written once: claim, run the body with a progress
  writer, finish or fail; a redelivery of a finished job does nothing.

A task module registers its kinds by decorating its tasks; every app's AppConfig.ready imports its
task module, so `enqueue` and the sweeper find every kind in any process, with no import of an
upper app from here.

Choices:
- A judge batch keeps its own row (JudgeBatch: the run, the triples, the seconds) with a `job`
  one-to-one; the claim, heartbeat, attempts, status and error live on the Job only. The run
  page and the judging tests read the batch; the sweeper and the skeleton see a job.
- A run's report is a job too (JudgeReport.job: one active computation per run).
- A reassign and a reopen are build jobs of the panel (params["action"]): their synchronous part
  touches one expert's open work or one triple; the build, which may touch many rows, is the job.
- The panels' control-item distribution, exam grading and stats refresh stay plain idempotent
  tasks: they are short, have no progress page, and a retry redoes them harmlessly.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, OperationalError, connection, connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from jobs.models import Job, JobStatus

logger = logging.getLogger(__name__)

# Default staleness; settings.JOB_STALE_SECONDS overrides it (tests use seconds).
STALE_AFTER = timedelta(minutes=10)
FINISHED = (JobStatus.DONE, JobStatus.CANCELLED, JobStatus.FAILED)


def stale_after_default() -> timedelta:
    return timedelta(seconds=getattr(settings, "JOB_STALE_SECONDS", STALE_AFTER.total_seconds()))


# --------------------------------------------------------------------------------------------
# The registry: which Celery task runs each kind of job.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobKindEntry:
    task: Any  # the Celery task; it takes (job_id, stale_after_s=None)
    # The kind's staleness: a judge batch beats from a thread every half minute and may be taken
    # over sooner than a build, which beats only when it reports progress.
    stale_after: Callable[[], timedelta] = stale_after_default


JOB_TASKS: dict[str, JobKindEntry] = {}


def job_kind_register(kind: str, task: Any, stale_after: Callable[[], timedelta] | None) -> None:
    JOB_TASKS[str(kind)] = JobKindEntry(task=task, stale_after=stale_after or stale_after_default)


def job_stale_after(kind: str) -> timedelta:
    entry = JOB_TASKS.get(str(kind))
    return entry.stale_after() if entry else stale_after_default()


def _entry(kind: str) -> JobKindEntry:
    try:
        return JOB_TASKS[str(kind)]
    except KeyError:
        raise LookupError(f"no task registered for jobs of kind {kind!r}") from None


# --------------------------------------------------------------------------------------------
# Create and send.
# --------------------------------------------------------------------------------------------


def job_send(
    job_id: int, kind: str, *, then: Any = None, stale_after_s: float | None = None
) -> None:
    """Send the kind's task for an existing job now (`then`: a Celery signature run after it)."""
    kwargs = {"stale_after_s": stale_after_s} if stale_after_s is not None else {}
    _entry(kind).task.apply_async(args=(job_id,), kwargs=kwargs, link=then)


def enqueue(
    kind: str,
    params: dict[str, Any] | None = None,
    *,
    user: Any = None,
    then: Any = None,
    **fields: Any,
) -> Job:
    """Create a job and send its task once the caller's transaction commits (the worker must
    find the row). `then` is a Celery signature run after the task succeeds; `fields` are
    further Job columns (a known progress_total, say)."""
    _entry(kind)  # an unknown kind fails here, in the request, not later in a worker
    if getattr(user, "pk", None):  # an anonymous user (or none) is not recorded
        fields["created_by"] = user
    job = Job.objects.create(kind=kind, params=params or {}, **fields)
    job_id = job.pk
    transaction.on_commit(lambda: job_send(job_id, kind, then=then))
    return job


# --------------------------------------------------------------------------------------------
# Claim, heartbeat, finish.
# --------------------------------------------------------------------------------------------


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def job_claimable(now: Any, stale_after: timedelta) -> Q:
    """Jobs an attempt may take: queued, or running with a stale heartbeat (a dead worker)."""
    return Q(status=JobStatus.QUEUED) | Q(status=JobStatus.RUNNING) & (
        Q(heartbeat_at__lt=now - stale_after) | Q(heartbeat_at__isnull=True)
    )


def job_claim(job_id: int, *, stale_after: timedelta | None = None) -> int | None:
    """Take the job for a new attempt; returns the attempt number, or None when not ours.

    One UPDATE compares and sets: it matches only if the job is still claimable and nobody
    claimed it since we read `attempts`, so of two claimers exactly one wins.
    """
    row = Job.objects.filter(pk=job_id).values("kind", "attempts").first()
    if row is None:
        return None
    now = timezone.now()
    stale = stale_after if stale_after is not None else job_stale_after(row["kind"])
    attempt = int(row["attempts"]) + 1
    won = Job.objects.filter(job_claimable(now, stale), pk=job_id, attempts=row["attempts"]).update(
        status=JobStatus.RUNNING,
        attempts=attempt,
        started_at=now,
        heartbeat_at=now,
        finished_at=None,
        claimed_by=worker_name()[:200],
        progress_done=0,
        message="",
        result={},
    )
    return attempt if won == 1 else None


def job_beat(job_id: int, attempt: int) -> bool:
    """Refresh the heartbeat if this attempt still owns the running job."""
    return bool(
        Job.objects.filter(pk=job_id, attempts=attempt, status=JobStatus.RUNNING).update(
            heartbeat_at=timezone.now()
        )
    )


@contextmanager
def job_heartbeat(job_id: int, attempt: int, interval: float) -> Iterator[None]:
    """Beat from a thread while the body blocks in one long call (a model judging a batch can
    take longer than the staleness limit, with no progress to report meanwhile).

    Skipped inside an open transaction (tests, inline runs): the thread's own connection would
    wait for the job row's lock held by that transaction.
    """
    if connection.in_atomic_block:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(interval):
                job_beat(job_id, attempt)
        finally:
            connection.close()

    thread = threading.Thread(target=beat, name=f"job-heartbeat-{job_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def job_finish(
    job_id: int,
    attempt: int,
    *,
    result: dict[str, Any] | None = None,
    error: str = "",
    **fields: Any,
) -> bool:
    """Finish the job (failed when there is an error) only if this attempt still owns it;
    `fields` are further columns (a file path). Returns whether it did."""
    values: dict[str, Any] = {
        "status": JobStatus.FAILED if error else JobStatus.DONE,
        "message": error[:2000],
        "result": result or {},
        "finished_at": timezone.now(),
        **fields,
    }
    return (
        Job.objects.filter(pk=job_id, attempts=attempt, status=JobStatus.RUNNING).update(**values)
        == 1
    )


def job_release(job_id: int, attempt: int, *, status: str = JobStatus.QUEUED) -> bool:
    """Give a running job back (queued for a retry, or cancelled) if this attempt owns it."""
    return bool(
        Job.objects.filter(pk=job_id, attempts=attempt, status=JobStatus.RUNNING).update(
            status=status
        )
    )


def job_is_active(job: Job, stale_after: timedelta) -> bool:
    """Whether the job will still run or finish by itself: queued lately (or put back for a
    retry lately), or running with a fresh heartbeat. A caller that wants one job at a time
    (a run's report) starts another only when this is False."""
    last = job.heartbeat_at or job.created_at
    fresh = last is not None and last > timezone.now() - stale_after
    return job.status in (JobStatus.QUEUED, JobStatus.RUNNING) and fresh


# --------------------------------------------------------------------------------------------
# Progress.
# --------------------------------------------------------------------------------------------


class JobProgressWriter:
    """A progress callback ``(done, total[, message])`` that also proves the worker is alive.

    Long jobs run inside one transaction (a build, an import) or a read-only snapshot (the
    aggregation, an export), and writes made through the task's own connection stay invisible
    until it ends: the job page would show nothing, and the stale sweeper would see no
    heartbeat. On PostgreSQL the callback therefore writes through a side connection in
    autocommit while the caller is inside a transaction. (SQLite, the local default, allows one
    writer at a time: there the writes go through the task's connection.) With
    ``caller_writes=False`` (a read-only snapshot, or a connection busy streaming a COPY) the
    task's connection is never used on PostgreSQL: a report the side connection cannot make is
    dropped. A ``total`` of 0 keeps
    the known total (a streamed read does not know it yet); a job that is no longer running is
    never moved; without a job id (a management command) nothing is written.
    """

    def __init__(self, job_id: int | None, *, caller_writes: bool = True) -> None:
        self.job_id = job_id
        self.caller_writes = caller_writes
        self._side: Any = None
        self._side_blocked = False

    def __call__(self, done: int, total: int, message: str | None = None) -> None:
        if self.job_id is None:
            return
        postgres = connection.vendor == "postgresql"
        if postgres and not self.caller_writes:
            if not self._side_blocked:
                self._side_update(done, total, message)
            return
        if (
            not postgres
            or not connection.in_atomic_block
            or self._side_blocked
            or not self._side_update(done, total, message)
        ):
            # Also when the side session cannot see the job (it was created in the caller's own
            # transaction, a test's say) or cannot lock it (the caller's transaction holds it):
            # then only the caller can update it, visible when it commits.
            fields: dict[str, Any] = {"progress_done": done, "heartbeat_at": timezone.now()}
            if total:
                fields["progress_total"] = total
            if message is not None:
                fields["message"] = message
            Job.objects.filter(pk=self.job_id, status=JobStatus.RUNNING).update(**fields)

    def _side_update(self, done: int, total: int, message: str | None) -> bool:
        """Write through the side connection; False when it updated no row."""
        if self._side is None:
            self._side = connections.create_connection(DEFAULT_DB_ALIAS)
            with self._side.cursor() as cursor:
                # Should the caller's transaction hold the job's row, waiting for it would
                # deadlock this thread against itself.
                cursor.execute("SET lock_timeout = '2s'")
        try:
            with self._side.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {Job._meta.db_table} SET progress_done = %s, "  # noqa: S608 (the model's own table name)
                    "progress_total = CASE WHEN %s > 0 THEN %s ELSE progress_total END, "
                    "message = COALESCE(%s, message), heartbeat_at = %s "
                    "WHERE id = %s AND status = %s",
                    [
                        done,
                        total,
                        total,
                        message,
                        timezone.now(),
                        self.job_id,
                        JobStatus.RUNNING,
                    ],
                )
                return bool(cursor.rowcount)
        except OperationalError:
            logger.warning("job %s: progress row locked by the caller's transaction", self.job_id)
            self._side_blocked = True
            return False

    def close(self) -> None:
        if self._side is not None:
            self._side.close()
            self._side = None

    def __enter__(self) -> JobProgressWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def job_progress(job_id: int | None, *, caller_writes: bool = True) -> JobProgressWriter:
    """The job's progress callback; use it as a context manager (it may hold a connection)."""
    return JobProgressWriter(job_id, caller_writes=caller_writes)


# --------------------------------------------------------------------------------------------
# The sweeper.
# --------------------------------------------------------------------------------------------


def jobs_requeue_stale(*, stale_after: timedelta | None = None) -> list[int]:
    """Re-send running jobs of every registered kind whose heartbeat went stale (their worker
    died). Duplicates are harmless: job_claim lets one attempt own the job. `stale_after`
    overrides every kind's staleness (tests) and is handed to the re-sent task's claim."""
    now = timezone.now()
    sent: list[int] = []
    for kind, entry in sorted(JOB_TASKS.items()):
        stale = stale_after if stale_after is not None else entry.stale_after()
        running = Job.objects.filter(job_claimable(now, stale), kind=kind).filter(
            status=JobStatus.RUNNING
        )
        for job_id in running.order_by("pk").values_list("pk", flat=True):
            job_send(
                job_id,
                kind,
                stale_after_s=stale_after.total_seconds() if stale_after is not None else None,
            )
            sent.append(job_id)
    return sent


@shared_task(name="jobs.requeue_stale")
def requeue_stale_jobs() -> list[int]:
    """Beat: re-send every kind of job whose worker died (builds, imports, exports, the
    aggregation, judge batches and reports)."""
    return jobs_requeue_stale()


# --------------------------------------------------------------------------------------------
# The task skeleton.
# --------------------------------------------------------------------------------------------


@dataclass
class JobOutcome:
    """What a job body returns when a plain result dict is not enough."""

    result: dict[str, Any] = field(default_factory=dict)
    # A domain failure (an import with invalid rows): the job fails with this message.
    error: str = ""
    # Further Job columns written with the finish (a published file's path).
    fields: dict[str, Any] = field(default_factory=dict)
    # Called when the finish found the job taken over by another attempt (ours is not the
    # outcome that counts: remove what only we made).
    on_lost: Callable[[], None] | None = None


@dataclass
class JobContext:
    """What a job body gets besides the job: its attempt and its progress callback."""

    job: Job
    attempt: int
    progress: JobProgressWriter

    def heartbeat(self, interval: float) -> Any:
        """A context manager beating from a thread around one long blocking call."""
        return job_heartbeat(self.job.pk, self.attempt, interval)


JobBody = Callable[[JobContext], "dict[str, Any] | JobOutcome | None"]


def job_run(
    job_id: int,
    body: JobBody,
    *,
    caller_writes: bool = True,
    stale_after: timedelta | None = None,
    reraise: bool = True,
    retry: Callable[[Exception], Any] | None = None,
    after: Callable[[Job], None] | None = None,
) -> str:
    """The skeleton of every job, written once: claim → run the body → finish or fail.

    Returns "busy" (a live worker holds the job) or "gone" (finished, cancelled or deleted)
    when the claim fails, so a redelivery does nothing; else "done", "failed", or "lost" (another
    attempt took the job over meanwhile, or the body gave it up itself). On a crash the job
    fails with the error, unless `retry` is given: then the job goes back to the queue and
    `retry(exc)` (Celery's self.retry) is called. `after(job)` runs once the job is finished,
    done or failed (a judge batch's run may be complete).
    """
    attempt = job_claim(job_id, stale_after=stale_after)
    if attempt is None:
        running = Job.objects.filter(pk=job_id, status=JobStatus.RUNNING).exists()
        return "busy" if running else "gone"
    job = Job.objects.get(pk=job_id)
    try:
        with job_progress(job_id, caller_writes=caller_writes) as progress:
            outcome = body(JobContext(job=job, attempt=attempt, progress=progress))
    except Exception as exc:
        logger.exception("%s job %s failed (attempt %s)", job.kind, job_id, attempt)
        error = f"{type(exc).__name__}: {exc}"[:2000]
        if retry is not None and job_release(job_id, attempt):
            Job.objects.filter(pk=job_id).update(message=error)
            retry(exc)  # raises Celery's Retry
        failed = job_finish(job_id, attempt, error=error)
        if failed and after is not None:
            after(job)
        if reraise:
            raise
        return "failed"
    if not isinstance(outcome, JobOutcome):
        outcome = JobOutcome(result=outcome or {})
    fields = dict(outcome.fields)
    if not outcome.error:
        fields.setdefault("progress_done", F("progress_total"))
    finished = job_finish(job_id, attempt, result=outcome.result, error=outcome.error, **fields)
    if not finished:
        if outcome.on_lost is not None:
            outcome.on_lost()
        return "lost"
    if after is not None:
        after(job)
    return "failed" if outcome.error else "done"


def job_task(
    kind: str,
    *,
    name: str,
    caller_writes: bool = True,
    reraise: bool = True,
    stale_after: Callable[[], timedelta] | None = None,
    retry_countdown: Callable[[int], float] | None = None,
    after: Callable[[Job], None] | None = None,
    **task_options: Any,
) -> Callable[[JobBody], Any]:
    """Make `body(ctx)` the Celery task of jobs of `kind` (see job_run for the skeleton).

    The task takes the job id (and the sweeper's staleness); `name` is the Celery name (routing:
    "judging.*" goes to the GPU queue). `caller_writes=False`: the body's connection is busy (a
    COPY, a snapshot), progress goes through the side connection only. `reraise=False`: a crash
    is recorded on the job and not raised (the page shows it). `retry_countdown(retries)`: a
    crash puts the job back in the queue and the task is retried after that many seconds, up to
    the task's `max_retries`, before the job fails.
    """

    def wrap(body: JobBody) -> Any:
        task_options.setdefault("acks_late", True)

        @shared_task(bind=True, name=name, **task_options)
        def run(self: Any, job_id: int, stale_after_s: float | None = None) -> str:
            retries = int(self.request.retries or 0)
            retry = None
            if (
                retry_countdown is not None
                and not self.request.is_eager
                and retries < int(self.max_retries or 0)
            ):

                def retry(exc: Exception) -> Any:
                    assert retry_countdown is not None
                    raise self.retry(exc=exc, countdown=retry_countdown(retries))

            return job_run(
                job_id,
                body,
                caller_writes=caller_writes,
                stale_after=timedelta(seconds=stale_after_s) if stale_after_s is not None else None,
                reraise=reraise,
                retry=retry,
                after=after,
            )

        run.__doc__ = body.__doc__
        job_kind_register(kind, run, stale_after)
        return run

    return wrap


def enqueue_many(
    kind: str, params: list[dict[str, Any]], *, user: Any = None, send: bool = True
) -> list[Job]:
    """`enqueue` for many jobs of one kind at once (a judge run's batches): one INSERT, and one
    callback that sends every task after the commit (`send=False`: the caller runs them inline,
    or later)."""
    _entry(kind)
    fields = {"created_by": user} if getattr(user, "pk", None) else {}
    jobs = Job.objects.bulk_create(Job(kind=kind, params=p, **fields) for p in params)
    ids = [job.pk for job in jobs]

    def send_all() -> None:
        for job_id in ids:
            job_send(job_id, kind)

    if send:
        transaction.on_commit(send_all)
    return jobs


def job_kinds() -> list[str]:
    """The kinds with a registered task (each app's tasks module registers its own)."""
    return sorted(JOB_TASKS)
