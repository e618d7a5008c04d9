"""A measurement, not a test (not collected: run it by name, `-s` to see the numbers):

    python -m pytest tests/judging/bench_runs.py -q -s -p no:cacheprovider

The batched-run service on CPU: a judge run of 3,000 triples in batches of 50 (60 jobs) planned
and executed inline with a scripted backend (the model costs nothing, so the time is the run
system's own: planning, claims, item building, writes, counters, finishing).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from judging import services
from tests.judging.conftest import ScriptedBackend, result

pytestmark = pytest.mark.django_db

N_ANSWERS = 1000  # x 3 criteria = 3,000 triples


def test_measure_the_judge_run_life_cycle(material: Any) -> None:
    m = material(n_answers=N_ANSWERS)
    config = services.config_save(name="bench", batch_size=50, model_family="giga")
    backend = ScriptedBackend(lambda item: result(int(item.item_id) % 2))
    times = []
    for _ in range(3):
        start = time.perf_counter()
        run = services.run_create(config=config, scope={"panel": m.panel.pk}, enqueue=False)
        run = services.run_execute_inline(run=run, backend_factory=lambda r: backend)
        times.append(time.perf_counter() - start)
        assert run.done == 3 * N_ANSWERS and run.status == "done"
    print(f"\njudge run of {run.done} triples in 60 batches, best of 3: {min(times):.3f} s")
