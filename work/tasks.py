"""Celery tasks of work. Tasks take ids, services check state (safe to retry)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from jobs.models import JobKind
from jobs.services import JobContext, job_task
from work.assignments import assignments_build, assignments_release_expired
from work.comparisons import REPA_OVERLAP, comparisons_build


@job_task(JobKind.ASSIGNMENTS, name="work.tasks.build_assignments")
def build_assignments(ctx: JobContext) -> dict[str, Any]:
    """Build triples and assignments (a panel's, or some answers' for a reassign or a reopen);
    the builder is idempotent, so a retry only fills gaps."""
    params = ctx.job.params
    report = assignments_build(
        answer_ids=params.get("answer_ids"),
        panel_id=params.get("panel_id"),
        progress=ctx.progress,
    )
    if params.get("panel_id") is not None:
        # The panel's side-by-side pairs too: routing new ones when asked ("pairs"), and always
        # handing out the places that refusals, expiries and reassigns freed.
        pairs = params.get("pairs") or {}
        compared = comparisons_build(
            panel_id=params["panel_id"],
            route=bool(pairs),
            pair_ids=pairs.get("pair_ids"),
            overlap=int(pairs.get("overlap", REPA_OVERLAP)),
            seed=pairs.get("seed"),
        )
        report |= {f"pairs_{k}": v for k, v in compared.items()}
    return report


@shared_task
def release_expired_assignments() -> int:
    return assignments_release_expired()
