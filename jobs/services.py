"""Job bookkeeping shared by every long Celery task: claim, progress with heartbeat, finish.

A job is claimed by compare-and-set on (status, attempts): a redelivered or re-sent task either
takes over a job whose worker died (running, stale heartbeat) or does nothing (the job is
done or another worker holds it). Only the attempt that still owns the job may finish it.
Redis redelivers an unacknowledged task only after the broker's visibility timeout (hours), so
`jobs_requeue_stale` (run by beat) re-sends jobs whose worker died within minutes.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, OperationalError, connection, connections
from django.db.models import Q
from django.utils import timezone

from jobs.models import Job, JobKind, JobStatus

logger = logging.getLogger(__name__)

# Default staleness; settings.JOB_STALE_SECONDS overrides it (tests use seconds).
STALE_AFTER = timedelta(minutes=10)


def stale_after_default() -> timedelta:
    return timedelta(seconds=getattr(settings, "JOB_STALE_SECONDS", STALE_AFTER.total_seconds()))


# The Celery task that runs each kind of job (by name: no import cycle with the task modules).
TASKS = {
    JobKind.ASSIGNMENTS: "work.tasks.build_assignments",
    JobKind.IMPORT: "material.tasks.import_material",
    JobKind.AGGREGATE: "dataset.tasks.aggregate_job",
    JobKind.EXPORT: "dataset.tasks.export_dataset_job",
}


def _heartbeat() -> dict[str, str]:
    return {"heartbeat": timezone.now().isoformat()}


def job_is_stale(job: dict[str, Any], stale_after: timedelta | None = None) -> bool:
    stale_after = stale_after or stale_after_default()
    beat = (job.get("result") or {}).get("heartbeat")
    last = datetime.fromisoformat(beat) if beat else job.get("started_at")
    return last is None or timezone.now() - last > stale_after


def job_claim(job_id: int, *, stale_after: timedelta | None = None) -> int | None:
    """Take the job for this attempt; returns the attempt number, or None when not ours."""
    job = Job.objects.filter(pk=job_id).values("status", "attempts", "result", "started_at").first()
    if job is None or job["status"] in (JobStatus.DONE, JobStatus.CANCELLED, JobStatus.FAILED):
        return None
    if job["status"] == JobStatus.RUNNING and not job_is_stale(dict(job), stale_after):
        return None
    attempt = int(job["attempts"]) + 1
    won = Job.objects.filter(pk=job_id, status=job["status"], attempts=job["attempts"]).update(
        status=JobStatus.RUNNING,
        attempts=attempt,
        started_at=timezone.now(),
        progress_done=0,
        message="",
        result=_heartbeat(),
    )
    return attempt if won == 1 else None


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
            fields: dict[str, Any] = {"progress_done": done, "result": _heartbeat()}
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
                    "message = COALESCE(%s, message), result = %s::jsonb "
                    "WHERE id = %s AND status = %s",
                    [
                        done,
                        total,
                        total,
                        message,
                        json.dumps(_heartbeat()),
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


def job_finish_attempt(job_id: int, attempt: int, **fields: Any) -> bool:
    """Finish the job only if this attempt still owns it."""
    fields.setdefault("finished_at", timezone.now())
    return (
        Job.objects.filter(pk=job_id, attempts=attempt, status=JobStatus.RUNNING).update(**fields)
        == 1
    )


def job_finish(
    job_id: int, attempt: int, *, result: dict[str, Any] | None = None, error: str = ""
) -> bool:
    return job_finish_attempt(
        job_id,
        attempt,
        status=JobStatus.FAILED if error else JobStatus.DONE,
        message=error[:2000],
        result=result or {},
    )


def jobs_requeue_stale(*, stale_after: timedelta | None = None) -> list[int]:
    """Re-send jobs whose worker died (running with a stale heartbeat). Duplicates are harmless:
    job_claim lets one attempt own the job."""
    stale_after = stale_after or stale_after_default()
    cutoff = timezone.now() - stale_after
    sent: list[int] = []
    running = Job.objects.filter(kind__in=list(TASKS), status=JobStatus.RUNNING).filter(
        Q(started_at__lt=cutoff) | Q(started_at__isnull=True)
    )
    for job in running.only("pk", "kind", "result", "started_at"):
        if not job_is_stale({"result": job.result, "started_at": job.started_at}, stale_after):
            continue
        kwargs = (
            {"stale_after_s": stale_after.total_seconds()}
            if job.kind in (JobKind.AGGREGATE, JobKind.EXPORT)
            else {}
        )
        current_app.send_task(TASKS[JobKind(job.kind)], args=(job.pk,), kwargs=kwargs)
        sent.append(job.pk)
    return sent
