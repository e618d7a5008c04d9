"""Batched runs, written once: the life of a judge run and of a generation run.

A run (runs.models.Run, of either purpose) is split into batches; each batch is a Job
(jobs.services: one claim by compare-and-set, a heartbeat that a stale claim may be taken over
by, retries, the stale-job sweeper) and a RunBatch naming the run, its number and the ids it
covers. A batch does
only what it has not done yet and writes its results in one transaction against the purpose's
unique keys, so a worker killed mid-batch loses only that batch's unfinished work and a retried
or duplicated task never does anything twice. Counters are recounted from the results, never
incremented.

What differs between judging and generation is a :class:`BatchWork`: which job kind the
batches use and which proxy reads the run, what a batch still has to do, the items it sends to
the backend, how the backend is called and how its outputs are written. :class:`BatchedRuns` is
the rest: planning, sending on commit, the batch's body, finishing, cancelling, resuming,
inline execution.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import partial
from typing import Any, Generic, Protocol, TypeVar, cast

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from jobs.models import Job, JobStatus
from jobs.services import JobContext, enqueue_many, job_run, job_send
from runs.models import Run, RunBatch, RunStatus

RUNNING, DONE, CANCELLED, FAILED = (
    RunStatus.RUNNING,
    RunStatus.DONE,
    RunStatus.CANCELLED,
    RunStatus.FAILED,
)

RunT = TypeVar("RunT", bound=Run)
BatchT = TypeVar("BatchT", bound=RunBatch)
BackendT = TypeVar("BackendT")
BackendT_contra = TypeVar("BackendT_contra", contravariant=True)
ItemT = TypeVar("ItemT")
OutputT = TypeVar("OutputT")


def heartbeat_seconds() -> float:
    """How often a batch's owner beats while the backend works."""
    return float(getattr(settings, "JUDGE_HEARTBEAT_SECONDS", 30))


def stale_after() -> timedelta:
    """A claim whose heartbeat is older than this belongs to a dead worker."""
    return timedelta(seconds=float(getattr(settings, "JUDGE_CLAIM_STALE_SECONDS", 120)))


class BatchWork(Protocol[RunT, BatchT, BackendT_contra, ItemT, OutputT]):
    """What judging or generation adds to a batched run."""

    @property
    def job_kind(self) -> str:
        """The JobKind of its batches."""
        ...

    @property
    def run_model(self) -> type[RunT]:
        """The purpose's proxy of Run (its runs are read through it)."""
        ...

    @property
    def batch_model(self) -> type[BatchT]:
        """The purpose's proxy of RunBatch."""
        ...

    @property
    def incomplete(self) -> type[Exception]:
        """Raised when some of a batch got no result (the job retries, then fails)."""
        ...

    def todo(self, run: RunT, batch: BatchT) -> list[Any]:
        """What the batch has still to do (its ids, or calls, with no result in the run)."""
        ...

    def build_items(self, run: RunT, todo: list[Any]) -> list[ItemT]:
        """The backend's items for `todo`."""
        ...

    def answer(self, backend: BackendT_contra, items: list[ItemT]) -> list[OutputT]:
        """Ask the backend (judge or generate)."""
        ...

    def write(self, run: RunT, todo: list[Any], items: list[ItemT], outputs: list[OutputT]) -> str:
        """Store the outputs (inside the batch's transaction); returns the batch's error, ""
        when everything in `todo` got a result."""
        ...

    def refresh_counters(self, run_id: int) -> None:
        """Recount the run's counters from its results."""
        ...

    def resume_fields(self) -> dict[str, Any]:
        """The run's fields to set when it is resumed, besides its status."""
        ...

    def finished(self, run_id: int) -> None:
        """The run has just finished (done or failed), committed."""
        ...


class BatchedRuns(Generic[RunT, BatchT, BackendT, ItemT, OutputT]):
    """The life cycle of the runs of one BatchWork."""

    def __init__(self, work: BatchWork[RunT, BatchT, BackendT, ItemT, OutputT]) -> None:
        self.work = work

    # --- planning and sending ---------------------------------------------------------------

    def plan(self, run: RunT, ids: Sequence[int], *, size: int, total: int) -> int:
        """Create the run's batches of `size` ids (a job each, sent by `send_on_commit`) and
        record its total; a run with nothing to do is done at once. Returns the batch count."""
        work = self.work
        size = max(1, size)
        starts = range(0, len(ids), size)
        jobs = enqueue_many(
            work.job_kind,
            [{"run": run.pk, "number": n} for n in range(len(starts))],
            user=getattr(run, "created_by", None),
            send=False,
        )
        RunBatch.objects.bulk_create(
            RunBatch(run=run, job=job, number=n, item_ids=list(ids[s : s + size]))
            for n, (s, job) in enumerate(zip(starts, jobs, strict=True))
        )
        fields: dict[str, Any] = {"total": total}
        if not ids:
            fields.update(status=DONE, finished_at=timezone.now())
        Run.objects.filter(pk=run.pk).update(**fields)
        for name, value in fields.items():
            setattr(run, name, value)
        return len(starts)

    def batch_jobs(self, run_id: int) -> QuerySet[Job]:
        return Job.objects.filter(kind=self.work.job_kind, run_batch__run_id=run_id)

    def send_on_commit(self, run_id: int) -> None:
        """Send the run's batches that are not done once the current transaction commits (a
        sequential run's first queued one only, unless one of its batches is being worked on:
        that one's end sends the next)."""

        def send() -> None:
            pending = self.batch_jobs(run_id).exclude(status=JobStatus.DONE)
            if self.sequential(run_id):
                if pending.filter(status=JobStatus.RUNNING).exists():
                    return
                pending = pending.filter(status=JobStatus.QUEUED).order_by("run_batch__number")[:1]
            for job_id in pending.values_list("pk", flat=True):
                job_send(job_id, self.work.job_kind)

        transaction.on_commit(send)

    def resend_stalled(self) -> list[int]:
        """Sequential runs whose chain broke (a worker died after its batch ended and before it
        sent the next): the first queued batch of each, sent again, unless one of its batches is
        being worked on (the stale-job sweeper sees to that one). The beat asks every few
        minutes; a batch sent twice is done once (the job's claim). Returns the jobs sent."""
        sent: list[int] = []
        running = self.work.run_model._default_manager.filter(
            status=RUNNING, cancelled=False, scope__sequential=True
        )
        for run_id in running.values_list("pk", flat=True):
            jobs = self.batch_jobs(run_id)
            if jobs.filter(status=JobStatus.RUNNING).exists():
                continue
            first = jobs.filter(status=JobStatus.QUEUED).order_by("run_batch__number").first()
            if first is not None:
                job_send(first.pk, self.work.job_kind)
                sent.append(first.pk)
        return sent

    def sequential(self, run_id: int) -> bool:
        """A run whose scope says "sequential" works one batch at a time (a participant's
        endpoint: its concurrency is one batch's)."""
        scope = Run.objects.values_list("scope", flat=True).filter(pk=run_id).first() or {}
        return bool(scope.get("sequential"))

    # --- cancel and resume ------------------------------------------------------------------

    def cancel(self, *, run: RunT) -> None:
        """Stop a run: queued batches are cancelled; a batch being worked on still saves."""
        with transaction.atomic():
            Run.objects.filter(pk=run.pk).update(
                cancelled=True, status=CANCELLED, finished_at=timezone.now()
            )
            self.batch_jobs(run.pk).filter(status=JobStatus.QUEUED).update(
                status=JobStatus.CANCELLED
            )
            run.refresh_from_db()

    def resume(self, *, run: RunT, stale: timedelta | None = None) -> int:
        """Resume a cancelled, failed or stalled run: re-queue every batch that is not done.

        Failed and cancelled batches, and batches whose claim went stale, are reset and queued
        again at once (not left to the beat's sweeper, which runs every few minutes). A batch
        still held by a live worker is sent too; its task does nothing while the claim is
        fresh, and the sweeper re-sends it should that worker die. Returns the number of
        batches queued.
        """
        with transaction.atomic():
            stale_before = timezone.now() - (stale if stale is not None else stale_after())
            jobs = self.batch_jobs(run.pk)
            jobs.filter(
                Q(status__in=[JobStatus.FAILED, JobStatus.CANCELLED])
                | Q(status=JobStatus.RUNNING, heartbeat_at__lt=stale_before)
            ).update(status=JobStatus.QUEUED, heartbeat_at=None)
            Run.objects.filter(pk=run.pk).update(
                cancelled=False,
                status=RUNNING,
                finished_at=None,
                message="",
                **self.work.resume_fields(),
            )
            pending = list(jobs.exclude(status=JobStatus.DONE).values_list("pk", flat=True))
            if pending:
                self.send_on_commit(run.pk)
            else:
                self.finish_if_complete(run.pk)
            run.refresh_from_db()
            return len(pending)

    # --- a batch ----------------------------------------------------------------------------

    def batch_body(self, ctx: JobContext, *, backend_factory: Callable[[RunT], BackendT]) -> None:
        """The body of a batch's job: do what the batch has not done yet and write the results
        in one transaction. The backend is asked for only when there is work, so a duplicate
        never loads a model. Raises the work's `incomplete` when something got no result."""
        work = self.work
        batch = cast(BatchT, work.batch_model._default_manager.get(job_id=ctx.job.pk))
        # Through the purpose's proxy: the work reads its own relations of the run.
        run = cast(
            RunT, work.run_model._default_manager.select_related("config").get(pk=batch.run_id)
        )
        if run.cancelled:
            # Claimed in the moment the run was cancelled: give the job up as cancelled.
            Job.objects.filter(pk=ctx.job.pk, attempts=ctx.attempt).update(
                status=JobStatus.CANCELLED
            )
            return
        todo = work.todo(run, batch)
        started = time.monotonic()
        items: list[ItemT] = []
        outputs: list[OutputT] = []
        if todo:
            items = work.build_items(run, todo)
            # A model call can take minutes, longer than the staleness limit: beat from a thread.
            with ctx.heartbeat(heartbeat_seconds()):
                outputs = work.answer(backend_factory(run), items)
        seconds = time.monotonic() - started
        with transaction.atomic():
            error = work.write(run, todo, items, outputs)
            RunBatch.objects.filter(pk=batch.pk).update(seconds=seconds)
            work.refresh_counters(run.pk)
        if error:
            raise work.incomplete(error)

    def batch_after(self, job: Job) -> None:
        """A batch's job finished (done or failed): its run may be complete."""
        run_id = RunBatch.objects.values_list("run_id", flat=True).filter(job_id=job.pk).first()
        if run_id is not None:
            self.finish_if_complete(run_id)
            if self.sequential(run_id) and Run.objects.filter(pk=run_id, status=RUNNING).exists():
                self.send_on_commit(run_id)

    def batch_execute(self, *, batch_id: int, backend_factory: Callable[[RunT], BackendT]) -> str:
        """Run one batch's job here, through the job skeleton (inline runs, tests); returns
        job_run's outcome ("busy" when a live worker holds it, "gone" when it is finished)."""
        job_id = RunBatch.objects.values_list("job_id", flat=True).get(pk=batch_id)
        return job_run(
            job_id,
            partial(self.batch_body, backend_factory=backend_factory),
            stale_after=stale_after(),
            after=self.batch_after,
        )

    # --- the run's end ----------------------------------------------------------------------

    def finish_if_complete(self, run_id: int) -> None:
        """Recount; when no batch is queued or running, a running run ends done, or failed
        when some batch failed (resuming retries those)."""
        self.work.refresh_counters(run_id)
        jobs = self.batch_jobs(run_id)
        if jobs.filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).exists():
            return
        failed = jobs.filter(status=JobStatus.FAILED).count()
        # Only a running run is finished here: a cancelled one stays cancelled.
        finished = Run.objects.filter(pk=run_id, status=RUNNING).update(
            status=FAILED if failed else DONE,
            finished_at=timezone.now(),
            message=f"{failed} batches failed; resume the run to retry them" if failed else "",
        )
        if finished:
            self.work.finished(run_id)

    def execute_inline(self, *, run: RunT, backend_factory: Callable[[RunT], BackendT]) -> RunT:
        """Do every open batch in this process (management commands' --wait, the demo, tests)."""
        batches = (
            RunBatch.objects.filter(run=run)
            .exclude(job__status=JobStatus.DONE)
            .order_by("number")
            .values_list("pk", "job_id")
        )
        for batch_id, job_id in batches:
            Job.objects.filter(pk=job_id, status=JobStatus.FAILED).update(status=JobStatus.QUEUED)
            if Run.objects.filter(pk=run.pk, cancelled=True).exists():
                break
            try:
                self.batch_execute(batch_id=batch_id, backend_factory=backend_factory)
            except self.work.incomplete:
                continue  # recorded on the batch's job; the run ends failed and can be resumed
        run.refresh_from_db()
        return run
