"""The leaderboard job: compute and store a snapshot (leaderboards.services)."""

from __future__ import annotations

from jobs.models import JobKind
from jobs.services import JobContext, JobOutcome, job_task
from leaderboards.models import BoardVersion, Leaderboard, LeaderboardSnapshot
from leaderboards.services import snapshot_store


@job_task(JobKind.LEADERBOARD, name="leaderboards.tasks.compute_snapshot")
def compute_snapshot(ctx: JobContext) -> JobOutcome:
    board = Leaderboard.objects.get(pk=ctx.job.params["leaderboard"])
    # A job queued before versions existed names none: the board's current version.
    version_id = ctx.job.params.get("version")
    version = BoardVersion.objects.get(pk=version_id) if version_id else None
    stored = snapshot_store(board, version=version, job=ctx.job, progress=ctx.progress)
    pk = stored.pk

    def drop() -> None:
        LeaderboardSnapshot.objects.filter(pk=pk).delete()

    # Another attempt took the job over meanwhile: its snapshot is the one that counts.
    return JobOutcome(result={"snapshot": pk, "seconds": round(stored.seconds, 3)}, on_lost=drop)
