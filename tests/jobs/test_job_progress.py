"""Job progress written from inside a long transaction is visible to others while it runs."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS, connections, transaction

from jobs.models import Job, JobKind
from jobs.services import job_claim, job_progress


def _seen_elsewhere(job_id: int) -> tuple[int, int, Any]:
    """The job's progress as another database session sees it (committed data only)."""
    other = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        with other.cursor() as cursor:
            cursor.execute(
                f"SELECT progress_done, progress_total, heartbeat_at FROM {Job._meta.db_table} "  # noqa: S608
                "WHERE id = %s",
                [job_id],
            )
            done, total, beat = cursor.fetchone()
    finally:
        other.close()
    return done, total, beat


@pytest.mark.django_db(transaction=True)
def test_progress_inside_a_transaction_is_visible_to_other_sessions() -> None:
    job = Job.objects.create(kind=JobKind.ASSIGNMENTS, params={})
    assert job_claim(job.pk) == 1
    claimed_beat = Job.objects.get(pk=job.pk).heartbeat_at
    with job_progress(job.pk) as progress, transaction.atomic():
        # What a build does: everything in one transaction, progress now and then.
        other = Job.objects.create(kind=JobKind.IMPORT, params={})
        progress(40, 100)
        done, total, beat = _seen_elsewhere(job.pk)
        assert (done, total) == (40, 100)
        # The progress report is the heartbeat too, visible to the sweeper while the build runs.
        assert claimed_beat is not None and beat > claimed_beat
        progress(100, 100)
        assert _seen_elsewhere(job.pk)[0] == 100
    job.refresh_from_db()
    assert (job.progress_done, job.progress_total) == (100, 100)
    assert Job.objects.filter(pk=other.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_progress_does_not_deadlock_on_the_callers_own_row_lock() -> None:
    job = Job.objects.create(kind=JobKind.ASSIGNMENTS, params={})
    assert job_claim(job.pk) == 1
    with job_progress(job.pk) as progress, transaction.atomic():
        Job.objects.filter(pk=job.pk).update(message="locked by the caller")
        progress(5, 10)  # the side session times out on the lock; the caller's session writes
        progress(6, 10)  # and keeps writing, without waiting again
        assert _seen_elsewhere(job.pk)[0] == 0
    job.refresh_from_db()
    assert (job.progress_done, job.message) == (6, "locked by the caller")


@pytest.mark.django_db(transaction=True)
def test_progress_outside_a_transaction_and_of_a_finished_job() -> None:
    job = Job.objects.create(kind=JobKind.ASSIGNMENTS, params={})
    assert job_claim(job.pk) == 1
    with job_progress(job.pk) as progress:
        progress(3, 9)
        assert _seen_elsewhere(job.pk)[:2] == (3, 9)
        Job.objects.filter(pk=job.pk).update(status="done")
        with transaction.atomic():
            progress(9, 9)  # a finished job is never moved again
    assert _seen_elsewhere(job.pk)[:2] == (3, 9)
