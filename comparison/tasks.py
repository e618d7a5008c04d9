"""The rankings job (jobs.services skeleton): compute the rankings and store one Ranking."""

from __future__ import annotations

from comparison.models import Ranking
from comparison.services import RankingParams, ranking_store
from jobs.models import JobKind
from jobs.services import JobContext, JobOutcome, job_task


@job_task(JobKind.RANKINGS, name="comparison.tasks.compute_rankings")
def compute_rankings(ctx: JobContext) -> JobOutcome:
    """Compute and store the rankings with the job's parameters (RankingParams)."""
    params = RankingParams.from_dict(ctx.job.params)
    stored = ranking_store(params, job=ctx.job, progress=ctx.progress)
    pk = stored.pk

    def drop() -> None:
        Ranking.objects.filter(pk=pk).delete()

    return JobOutcome(
        result={"ranking": pk, "seconds": round(stored.seconds, 3)},
        # Another attempt took the job over meanwhile: its Ranking is the one that counts.
        on_lost=drop,
    )
