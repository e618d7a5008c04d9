"""The one job system (jobs.services): the claim, the sweeper, the task skeleton, enqueue."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis
import time_machine
from django.conf import settings
from django.db import connection
from django.utils import timezone

from jobs.models import Job, JobKind, JobStatus
from jobs.services import (
    JOB_TASKS,
    JobContext,
    JobOutcome,
    enqueue,
    job_claim,
    job_finish,
    job_run,
    jobs_requeue_stale,
)
from tests.celery_worker import default_queue, judge_queue, purge_run_queues
from work.tasks import build_assignments

# --- the claim ---------------------------------------------------------------------------------


def _claim_at_once(job_id: int) -> list[int | None]:
    """Two claimers released together, each in its own thread and database session."""
    start = threading.Barrier(2)
    won: list[int | None] = []

    def claim() -> None:
        try:
            start.wait()
            won.append(job_claim(job_id))
        finally:
            connection.close()

    threads = [threading.Thread(target=claim) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return won


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("dead_worker", [False, True], ids=["queued", "stale-running"])
def test_of_two_claimers_at_once_exactly_one_wins(dead_worker: bool) -> None:
    for _ in range(5):
        if dead_worker:
            long_ago = timezone.now() - timedelta(days=1)
            job = Job.objects.create(
                kind=JobKind.ASSIGNMENTS,
                status=JobStatus.RUNNING,
                attempts=1,
                heartbeat_at=long_ago,
            )
        else:
            job = Job.objects.create(kind=JobKind.ASSIGNMENTS)
        attempt = job.attempts + 1
        won = _claim_at_once(job.pk)
        assert sorted(won, key=lambda a: a or 0) == [None, attempt]
        job.refresh_from_db()
        assert (job.status, job.attempts) == (JobStatus.RUNNING, attempt)


@pytest.mark.django_db
def test_a_live_job_is_not_taken_over_and_a_stale_one_is() -> None:
    job = Job.objects.create(kind=JobKind.EXPORT)
    assert job_claim(job.pk) == 1
    job.refresh_from_db()
    assert job.heartbeat_at is not None and job.claimed_by
    assert job_claim(job.pk) is None  # its worker beats: busy
    stale = timedelta(seconds=settings.JOB_STALE_SECONDS + 1)
    with time_machine.travel(timezone.now() + stale):
        assert job_claim(job.pk) == 2  # its worker died: taken over
    # Only the attempt that owns the job finishes it.
    assert job_finish(job.pk, 1, result={"from": "the dead attempt"}) is False
    assert job_finish(job.pk, 2, result={"from": "the new owner"}) is True
    job.refresh_from_db()
    assert (job.status, job.result) == (JobStatus.DONE, {"from": "the new owner"})


@pytest.mark.django_db
@pytest.mark.parametrize("status", [JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED])
def test_a_finished_job_is_never_claimed(status: str) -> None:
    long_ago = timezone.now() - timedelta(days=1)
    job = Job.objects.create(kind=JobKind.IMPORT, status=status, attempts=1, heartbeat_at=long_ago)
    assert job_claim(job.pk) is None
    assert job_claim(job.pk, stale_after=timedelta(0)) is None
    job.refresh_from_db()
    assert (job.status, job.attempts) == (status, 1)


# --- the task skeleton -------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_body_that_raises_fails_the_job_with_the_error() -> None:
    job = Job.objects.create(kind=JobKind.AGGREGATE)

    def body(ctx: JobContext) -> dict[str, Any]:
        ctx.progress(1, 4)
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        job_run(job.pk, body)
    job.refresh_from_db()
    assert (job.status, job.message, job.attempts) == (
        JobStatus.FAILED,
        "RuntimeError: disk full",
        1,
    )
    assert job.finished_at is not None
    # Without reraise (the import's choice) the failure is recorded all the same.
    other = Job.objects.create(kind=JobKind.AGGREGATE)
    assert job_run(other.pk, body, reraise=False) == "failed"
    assert Job.objects.get(pk=other.pk).message == "RuntimeError: disk full"


@pytest.mark.django_db
def test_a_body_finishes_the_job_with_its_result_and_progress() -> None:
    job = Job.objects.create(kind=JobKind.AGGREGATE)

    def body(ctx: JobContext) -> dict[str, Any]:
        ctx.progress(3, 10)
        return {"rows": 10}

    assert job_run(job.pk, body) == "done"
    job.refresh_from_db()
    assert (job.status, job.result, job.progress_done, job.progress_total) == (
        JobStatus.DONE,
        {"rows": 10},
        10,
        10,
    )
    # A domain failure (JobOutcome.error) fails the job and keeps the result.
    failed = Job.objects.create(kind=JobKind.IMPORT)
    outcome = JobOutcome(result={"errors": [1]}, error="1 invalid row")
    assert job_run(failed.pk, lambda ctx: outcome) == "failed"
    failed.refresh_from_db()
    assert (failed.status, failed.result, failed.message) == (
        JobStatus.FAILED,
        {"errors": [1]},
        "1 invalid row",
    )


@pytest.mark.django_db
def test_a_redelivered_task_of_a_done_job_does_nothing() -> None:
    job = Job.objects.create(kind=JobKind.ASSIGNMENTS)
    calls: list[int] = []

    def body(ctx: JobContext) -> dict[str, Any]:
        calls.append(ctx.attempt)
        return {"built": ctx.attempt}

    assert job_run(job.pk, body) == "done"
    assert job_run(job.pk, body) == "gone"
    assert calls == [1]
    # Through Celery too: the real task of a done build leaves it as it is.
    assert build_assignments.apply(args=(job.pk,)).get() == "gone"
    job.refresh_from_db()
    assert (job.status, job.result, job.attempts) == (JobStatus.DONE, {"built": 1}, 1)


@pytest.mark.django_db
def test_an_attempt_that_lost_the_job_does_not_publish() -> None:
    job = Job.objects.create(kind=JobKind.EXPORT)
    removed: list[str] = []

    def body(ctx: JobContext) -> JobOutcome:
        # Another worker takes the job over while this one still works (this one looked dead).
        with time_machine.travel(timezone.now() + timedelta(hours=1)):
            assert job_claim(ctx.job.pk) == 2
        return JobOutcome(fields={"file_path": "exports/x"}, on_lost=lambda: removed.append("x"))

    assert job_run(job.pk, body) == "lost"
    job.refresh_from_db()
    assert (job.status, job.attempts, job.file_path) == (JobStatus.RUNNING, 2, "")
    assert removed == ["x"]


# --- create and send ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_enqueue_creates_the_job_and_sends_it_after_the_commit(
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = enqueue(JobKind.ASSIGNMENTS, {"answer_ids": []})
    assert (job.status, job.attempts, len(callbacks)) == (JobStatus.QUEUED, 0, 1)
    callbacks[0]()  # the commit: the (eager) task runs the build
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.DONE, 1)
    with pytest.raises(LookupError):
        enqueue("no-such-kind", {})


@pytest.mark.django_db
def test_then_runs_after_the_job_succeeded(django_capture_on_commit_callbacks: Any) -> None:
    # A panel's build is followed by its control items this way.
    after = Job.objects.create(kind=JobKind.ASSIGNMENTS)
    with django_capture_on_commit_callbacks(execute=True):
        first = enqueue(
            JobKind.ASSIGNMENTS, {"answer_ids": []}, then=build_assignments.si(after.pk)
        )
    assert Job.objects.get(pk=first.pk).status == JobStatus.DONE
    assert Job.objects.get(pk=after.pk).status == JobStatus.DONE


@pytest.mark.django_db
def test_a_crash_with_retries_left_puts_the_job_back_in_the_queue() -> None:
    job = Job.objects.create(kind=JobKind.JUDGE_BATCH)
    retried: list[str] = []

    class Retry(Exception):
        pass

    def retry(exc: Exception) -> None:
        retried.append(str(exc))
        raise Retry  # Celery's self.retry raises like this

    def body(ctx: JobContext) -> None:
        raise RuntimeError("CUDA out of memory")

    with pytest.raises(Retry):
        job_run(job.pk, body, retry=retry)
    job.refresh_from_db()
    assert (job.status, job.attempts, retried) == (
        JobStatus.QUEUED,
        1,
        ["CUDA out of memory"],
    )
    assert job.message == "RuntimeError: CUDA out of memory"
    # The retried task claims it again; the last retry fails the job.
    with pytest.raises(RuntimeError):
        job_run(job.pk, body)
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.FAILED, 2)


# --- the sweeper -------------------------------------------------------------------------------


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> Iterator[redis.Redis]:
    """Tasks go to this run's queues in Redis (not run eagerly), to be read back."""
    from config.celery_app import app

    monkeypatch.setitem(app.conf, "task_always_eager", False)
    purge_run_queues()
    yield redis.Redis.from_url(settings.CELERY_BROKER_URL)
    purge_run_queues()


def _sent(client: redis.Redis) -> list[tuple[str, int]]:
    """(task name, job id) of every message waiting in this run's queues."""
    sent = []
    for queue in (default_queue(), judge_queue()):
        for raw in client.lrange(queue, 0, -1):
            message = json.loads(raw)
            args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
            sent.append((message["headers"]["task"], int(args[0])))
    return sorted(sent)


@pytest.mark.django_db
def test_the_sweeper_resends_stale_running_jobs_of_every_kind(broker: redis.Redis) -> None:
    kinds = sorted(JOB_TASKS)
    assert set(kinds) == {k.value for k in JobKind}  # every kind has its task
    now = timezone.now()
    long_ago = now - timedelta(days=1)
    stale = {
        kind: Job.objects.create(kind=kind, status=JobStatus.RUNNING, heartbeat_at=long_ago)
        for kind in kinds
    }
    # Left alone: a live one, a queued one, finished ones.
    Job.objects.create(kind=JobKind.EXPORT, status=JobStatus.RUNNING, heartbeat_at=now)
    Job.objects.create(kind=JobKind.EXPORT, status=JobStatus.QUEUED)
    for status in (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED):
        Job.objects.create(kind=JobKind.IMPORT, status=status, heartbeat_at=long_ago)

    assert sorted(jobs_requeue_stale()) == sorted(job.pk for job in stale.values())
    assert _sent(broker) == sorted((JOB_TASKS[k].task.name, job.pk) for k, job in stale.items())
    # The judge and generation batches go to the GPU queue, the rest to the ordinary one.
    on_gpu = [json.loads(raw)["headers"]["task"] for raw in broker.lrange(judge_queue(), 0, -1)]
    assert sorted(on_gpu) == ["generation.tasks.generate_batch", "judging.tasks.judge_batch"]
