"""A real Celery worker, on Redis, runs the assignment builder as a job with progress."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import close_old_connections

from jobs.models import Job, JobStatus
from material.models import Answer
from panels.models import Panel
from tests.celery_worker import celery_worker, wait_for
from tests.conftest import make_expert
from work.models import Estimate, Triple
from work.tasks import build_assignments

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def test_a_worker_builds_assignments_and_reports_progress(
    make_answer: Callable[..., Answer], settings: object, tmp_path: Path
) -> None:
    science = Panel.objects.get(key="science")
    for i in range(3):
        make_expert(f"w{i}", science)
    answers = [make_answer() for _ in range(3)]
    job = Job.objects.create(kind="assignments", params={"answer_ids": [a.pk for a in answers]})
    settings.CELERY_TASK_ALWAYS_EAGER = False  # type: ignore[attr-defined]
    from config.celery_app import app

    app.conf.task_always_eager = False
    try:
        with celery_worker(log=tmp_path / "worker.log"):
            build_assignments.delay(job.pk)

            def finished() -> bool:
                close_old_connections()
                return Job.objects.get(pk=job.pk).status in (JobStatus.DONE, JobStatus.FAILED)

            done = wait_for(finished, timeout=90)
    finally:
        app.conf.task_always_eager = True
    log = (tmp_path / "worker.log").read_text(errors="replace")
    assert done, log[-3000:]
    # The worker process ran it (not an eager call in the test process).
    assert "work.tasks.build_assignments" in log and "succeeded" in log
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.message
    assert job.progress_done == job.progress_total == 3
    assert job.result["estimates_created"] == Estimate.objects.count() > 0
    assert Triple.objects.filter(answer__in=answers).count() == job.result["triples"]
