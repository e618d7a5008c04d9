"""A measurement, not a test (not collected: run it by name, `-s` to see the numbers):

    python -m pytest tests/judging/bench_report.py -q -s -p no:cacheprovider

The run page's report before (computed on every page load) and now (read from the store), on
a run of a few thousand judged triples with three expert scores each.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from judging import selectors, services
from tests.conftest import PASSWORD
from tests.judging.conftest import ScriptedBackend, result
from tests.judging.test_stored_report import old_report
from work.models import Assignment, AssignmentStatus, Estimate, EstimateStatus

pytestmark = pytest.mark.django_db

N_ANSWERS = 1000  # x 3 criteria = 3,000 triples, 9,000 expert scores


def _best(fn: Callable[[], Any], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def test_measure_the_report_before_and_after(personas: Any, material: Any) -> None:
    m = material(n_answers=N_ANSWERS)
    rng = random.Random(1)
    now = timezone.now()
    assignments = Assignment.objects.bulk_create(
        Assignment(
            expert=e,
            answer=a,
            panel=m.panel,
            status=AssignmentStatus.SUBMITTED,
            submitted_at=now,
        )
        for a in m.answers
        for e in m.experts
    )
    by_key = {(x.answer_id, x.expert_id): x for x in assignments}
    Estimate.objects.bulk_create(
        Estimate(
            triple=t,
            assignment=by_key[(t.answer_id, e.pk)],
            expert=e,
            slot=slot,
            status=EstimateStatus.SUBMITTED,
            score=rng.choice([0, 1, 2]) if t.criterion.key != "censor" else rng.choice([0, 1]),
            rationale=f"Обоснование эксперта {slot}: оценка выставлена.",
            rubric=t.rubric,
            submitted_at=now,
        )
        for t in _triples(m)
        for slot, e in enumerate(m.experts, 1)
    )
    config = services.config_save(name="bench", batch_size=1000, model_family="giga")
    run = services.run_create(config=config, scope={"panel": m.panel.pk}, enqueue=False)
    backend = ScriptedBackend(lambda item: result(int(item.item_id) % 2))
    run = services.run_execute_inline(run=run, backend_factory=lambda r: backend)
    assert run.done == 3 * N_ANSWERS

    old = _best(lambda: old_report(run))
    compute = _best(lambda: services.report_compute(run_id=run.pk))
    read = _best(lambda: selectors.report_stored(run), repeat=10)
    client = Client()
    assert client.login(username=personas.admin.username, password=PASSWORD)
    url = reverse("judging_run", args=[run.pk])
    page = _best(lambda: client.get(url), repeat=5)
    print(
        f"\n{run.done} judged triples, {Estimate.objects.count()} expert scores:\n"
        f"  before, computed per page load (comparison_rows + judging.metrics): {old:.3f} s\n"
        f"  now, computed once by the worker (report_compute, numpy, stored):   {compute:.3f} s\n"
        f"  now, what the page reads (stored row + fingerprint aggregate):      {read:.4f} s\n"
        f"  now, the whole run page (render included):                          {page:.4f} s"
    )


def _triples(m: Any) -> list[Any]:
    from work.models import Triple

    return list(Triple.objects.filter(answer__in=m.answers).select_related("criterion", "rubric"))
