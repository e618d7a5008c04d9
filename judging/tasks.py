"""Celery tasks of the judging app, routed to the `judge` queue (settings: "judging.*").

Run on a GPU host: `celery -A config worker -Q judge --pool solo -c 1`, one worker per GPU.
A batch is a Job (jobs.services): the task takes the job's id, and the job skeleton's claim
makes a retried or duplicated task do nothing twice.
"""

from __future__ import annotations

from typing import Any

from jobs.models import JobKind
from jobs.services import JobContext, job_task
from judging import selectors, services
from judging.backends import cached_backend
from judging.models import JudgeRun

MAX_RETRIES = 5


def _backend(run: JudgeRun) -> Any:
    # Module-level cache: the model is loaded once per worker process, not once per batch.
    return cached_backend(run.config, run.backend)


def _retry_countdown(retries: int) -> float:
    return min(300, 10 * 2**retries)


# A batch held by a live worker is left to it ("busy"); should that worker die, the sweeper
# (jobs.services.jobs_requeue_stale, beat) re-sends the batch once its heartbeat is stale.
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
@job_task(
    JobKind.JUDGE_REPORT,
    name="judge_reports.compute",
    max_retries=3,
    retry_countdown=lambda retries: 30 * 2**retries,
    stale_after=selectors.report_claim_stale_after,
    after=services.report_after,
)
def compute_report(ctx: JobContext) -> dict[str, Any]:
    """Compute and store a run's report (services.report_compute); one job at a time per run
    (services.report_request)."""
    try:
        report = services.report_compute(run_id=int(ctx.job.params["run"]))
    except JudgeRun.DoesNotExist:
        return {"run": "deleted"}  # the run was deleted meanwhile: nothing to report
    return {"seconds": report.seconds}
