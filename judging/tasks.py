"""Celery tasks of the judging app, routed to the `judge` queue (settings: "judging.*").

Run on a GPU host: `celery -A config worker -Q judge --pool solo -c 1`, one worker per GPU.
Tasks take ids; the service checks the batch's state, so a retried or duplicated task does
nothing twice.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

from judging import services
from judging.backends import cached_backend
from judging.models import JudgeRun

MAX_RETRIES = 5
# A batch held by another worker is checked again this many times (each after the staleness
# limit); beyond that the run page's Resume button re-queues it.
BUSY_RETRIES = 20


def _backend(run: JudgeRun) -> Any:
    # Module-level cache: the model is loaded once per worker process, not once per batch.
    return cached_backend(run.config, run.backend)


@shared_task(bind=True, name="judging.tasks.judge_batch", max_retries=MAX_RETRIES)
def judge_batch(self: Any, batch_id: int) -> str:
    try:
        result = services.batch_execute(batch_id=batch_id, backend_factory=_backend)
    except Exception as exc:
        if self.request.is_eager or self.request.retries >= MAX_RETRIES:
            services.batch_give_up(batch_id=batch_id, error=f"{type(exc).__name__}: {exc}")
            raise
        services.batch_requeue(batch_id=batch_id)
        raise self.retry(exc=exc, countdown=min(300, 10 * 2**self.request.retries)) from exc
    if result == "busy" and not self.request.is_eager:
        # Another worker holds a fresh claim; come back once it could have gone stale, in case
        # that worker died (the broker would redeliver only after its visibility timeout).
        countdown = int(services.stale_after().total_seconds()) + 1
        raise self.retry(countdown=countdown, max_retries=BUSY_RETRIES)
    return result


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
