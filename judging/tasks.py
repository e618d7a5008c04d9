"""Celery tasks of the judging app, routed to the `judge` queue (settings: "judging.*").

Run on a GPU host: `celery -A config worker -Q judge --pool solo -c 1`, one worker per GPU.
A batch is a Job (annotation.jobs): the task takes the job's id, and the job skeleton's claim
makes a retried or duplicated task do nothing twice.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

from annotation.jobs import JobContext, job_task
from annotation.models import JobKind
from judging import services
from judging.backends import cached_backend
from judging.models import JudgeRun

MAX_RETRIES = 5


def _backend(run: JudgeRun) -> Any:
    # Module-level cache: the model is loaded once per worker process, not once per batch.
    return cached_backend(run.config, run.backend)


def _retry_countdown(retries: int) -> float:
    return min(300, 10 * 2**retries)


# A batch held by a live worker is left to it ("busy"); should that worker die, the sweeper
# (annotation.jobs.jobs_requeue_stale, beat) re-sends the batch once its heartbeat is stale.
@job_task(
    JobKind.JUDGE_BATCH,
    name="judging.tasks.judge_batch",
    max_retries=MAX_RETRIES,
    retry_countdown=_retry_countdown,
    stale_after=services.stale_after,
    after=services.batch_after,
)
def judge_batch(ctx: JobContext) -> None:
    """Judge one batch of a run (its job's params name the run and the batch's number)."""
    services.batch_judge(ctx, backend_factory=_backend)


# Not "judging.*": the report is computed by the ordinary workers (numpy, the database), never
# in the single slot of a GPU worker of the `judge` queue.
@shared_task(bind=True, name="judge_reports.compute", max_retries=3, acks_late=True)
def compute_report(self: Any, run_id: int) -> None:
    """Compute and store a run's report; safe to retry or duplicate (the report is rewritten
    from the data, and a computation is claimed once at a time by report_request)."""
    final = self.request.is_eager or self.request.retries >= self.max_retries
    try:
        # The claim is kept for a retry: no second computation starts meanwhile.
        services.report_compute(run_id=run_id, keep_claim_on_error=not final)
    except JudgeRun.DoesNotExist:
        return  # the run was deleted meanwhile: nothing to report
    except Exception as exc:
        if final:
            raise
        raise self.retry(exc=exc, countdown=30 * 2**self.request.retries) from exc
