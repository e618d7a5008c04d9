"""Celery task of answer generation, routed to the GPU queue (settings: "generation.*" goes to
the `judge` queue, whose workers hold one model per GPU)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from generation import services
from generation.backends import generator_for
from generation.models import GenerationRun
from jobs.models import JobKind
from jobs.services import JobContext, job_task

MAX_RETRIES = 5


def _generator(run: GenerationRun) -> Any:
    return generator_for(run)


@job_task(
    JobKind.GENERATION_BATCH,
    name="generation.tasks.generate_batch",
    max_retries=MAX_RETRIES,
    retry_countdown=lambda retries: min(300, 10 * 2**retries),
    stale_after=services.stale_after,
    after=services.batch_after,
)
def generate_batch(ctx: JobContext) -> None:
    """Answer one batch of a run (its job's params name the run and the batch's number)."""
    services.batch_generate(ctx, generator_factory=_generator)


# Not "generation.*": the beat's check goes to the default queue, not to the GPU workers'.
@shared_task(name="runs.resend_stalled_generation")
def resend_stalled_generation() -> list[int]:
    """Beat: restart the chain of a sequential generation run (a closed test's) that broke."""
    return services.RUNS.resend_stalled()
