"""The originality check's job (authoring.services.originality_compute)."""

from __future__ import annotations

from authoring.services import originality_compute
from jobs.models import JobKind
from jobs.services import JobContext, JobOutcome, job_task


@job_task(
    JobKind.ORIGINALITY,
    name="authoring.tasks.originality_check",
    max_retries=3,
    retry_countdown=lambda retries: 10 * 2**retries,
)
def originality_check(ctx: JobContext) -> JobOutcome:
    check = originality_compute(int(ctx.job.params["check"]))
    return JobOutcome(result={"check": check.pk, "compared": check.compared})
