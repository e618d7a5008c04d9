"""A batch being judged keeps its claim alive: its heartbeat outlasts the staleness limit."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
import time_machine

from jobs.models import Job
from jobs.services import job_claim
from judge_worker import JudgeItem, JudgeOutput
from judging import services
from judging.models import BatchStatus
from tests.judging.conftest import ScriptedBackend, result
from tests.waiting import wait_until

# Committed rows: the heartbeat thread writes through its own connection.
pytestmark = pytest.mark.django_db(transaction=True)


def test_a_live_slow_batch_is_not_taken_over_but_a_silent_one_is(
    material: Any, judge_config: Any, settings: Any
) -> None:
    settings.JUDGE_HEARTBEAT_SECONDS = 0.2
    settings.JUDGE_CLAIM_STALE_SECONDS = 1
    m = material(n_answers=1)
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    batch = run.batches.get(number=0)
    seen: list[str] = []

    class Slow(ScriptedBackend):
        def judge(self, items: Sequence[JudgeItem]) -> list[JudgeOutput]:
            # Working for longer than the staleness limit: once the heartbeat has kept the claim
            # alive past it, another worker tries to take the batch.
            claimed_at = Job.objects.get(pk=batch.job_id).started_at
            assert claimed_at is not None
            outlived = claimed_at + timedelta(seconds=settings.JUDGE_CLAIM_STALE_SECONDS)

            def beat_past_the_limit() -> bool:
                beat = Job.objects.get(pk=batch.job_id).heartbeat_at
                return beat is not None and beat > outlived

            wait_until(beat_past_the_limit, 10, "the heartbeat to outlive the staleness limit")
            seen.append(services.batch_execute(batch_id=batch.pk, backend_factory=lambda r: self))
            return super().judge(items)

    backend = Slow(lambda item: result(1))
    assert services.batch_execute(batch_id=batch.pk, backend_factory=lambda r: backend) == "claimed"
    assert seen == ["busy"]
    batch.refresh_from_db()
    assert (batch.status, batch.attempts) == (BatchStatus.DONE, 1)

    # Without a heartbeat (the worker died), the claim is stale once the limit has passed.
    other = run.batches.get(number=1)
    assert job_claim(other.job_id) == 1
    assert job_claim(other.job_id) is None
    with time_machine.travel(timedelta(seconds=1.2)):
        assert job_claim(other.job_id) == 2
