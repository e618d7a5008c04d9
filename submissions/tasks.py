"""The submission's scoring job (submissions.services.submission_score)."""

from __future__ import annotations

from jobs.models import JobKind
from jobs.services import JobContext, JobOutcome, job_task
from submissions.services import submission_score


@job_task(JobKind.SUBMISSION, name="submissions.tasks.score_submission")
def score_submission(ctx: JobContext) -> JobOutcome:
    pk = ctx.job.params["submission"]
    submission_score(pk)
    return JobOutcome(result={"submission": pk})
