"""A judge batch's Job lives and dies with the batch.

The batch points at its Job (JudgeBatch.job, CASCADE from the job's side), so deleting a run
cascades to its batches but not to their jobs: without this handler every deleted run would
leave its judge_batch jobs in the job list, with params naming a run that is gone.
"""

from __future__ import annotations

from typing import Any

from jobs.models import Job
from judging.models import JudgeBatch


def batch_deleted(sender: type[JudgeBatch], instance: JudgeBatch, **kwargs: Any) -> None:
    """post_delete of a JudgeBatch (alone or cascaded from its run): delete its Job too."""
    # Deleting the Job cascades back to the batch, already gone: nothing more is deleted.
    Job.objects.filter(pk=instance.job_id).delete()
