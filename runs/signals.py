"""A batch's Job lives and dies with the batch.

The batch points at its Job (RunBatch.job, CASCADE from the job's side), so deleting a run
cascades to its batches but not to their jobs: without this handler every deleted run would
leave its batch jobs in the job list, with params naming a run that is gone.
"""

from __future__ import annotations

from typing import Any

from jobs.models import Job
from runs.models import RunBatch


def batch_deleted(sender: type[RunBatch], instance: RunBatch, **kwargs: Any) -> None:
    """post_delete of a batch (alone or cascaded from its run): delete its Job too."""
    # Deleting the Job cascades back to the batch, already gone: nothing more is deleted.
    Job.objects.filter(pk=instance.job_id).delete()
