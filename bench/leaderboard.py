"""The leaderboard page under 20 concurrent readers, against a trivial view in the same run.

Setup (a bench database of its own, `pollux_bench_leaderboard`, with the POLLUX catalogue): 100
language models, each answering 115 instructions spread over the 35 task groups with three
complexity levels (11,500 answers, POLLUX's count), each answer judged on 16 criteria of its
group plus a critical one (~196k verdicts, normalised scores drawn per model quality). The
snapshot is computed from these verdicts by the production code (leaderboards.services.
source_rows: gated means, 1,000 bootstrap rounds, the random baseline, the cells) — its time is
reported too — and stored for a public leaderboard.

Load: gunicorn (4 workers × 4 threads, bench settings) serves config.wsgi on 127.0.0.1; an
asyncio load generator (httpx) keeps 20 readers in a closed loop for DURATION_S, first on the
leaderboard page (unfiltered: 100 rows × 35 task-type columns), then on a filtered view (one
task type: the means recomputed from the snapshot's cells), then on the trivial view (/healthz,
one SELECT 1) with the same 20 readers. Each worker's first request parses the snapshot (kept
per process afterwards): a warm-up round precedes each measurement. Final line: the page's
throughput against the trivial view's (goal: ratio ≥ 0.5), with the p95 of each.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

import numpy as np

from bench.common import line

MODELS = 100
ANSWERS_PER_MODEL = 115
CRITERIA_PER_ANSWER = 16
READERS = 20
DURATION_S = {"small": 5.0, "full": 15.0}
SLUG = "bench-leaderboard"
URL = "postgres://postgres@127.0.0.1:5432/pollux_bench_leaderboard"


def _setup() -> None:
    os.environ["BENCH_DATABASE_URL"] = os.environ.get("BENCH_LEADERBOARD_DATABASE_URL", URL)
    from bench.datagen import _setup as datagen_setup

    datagen_setup("full")  # creates the database named by BENCH_DATABASE_URL, sets Django up
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from taxonomy.models import TaskGroup

    if TaskGroup.objects.count() < 35:
        call_command("load_pollux", verbosity=0)


def _verdicts(seed: int = 5) -> tuple[Any, dict[int, Any]]:
    """Synthetic verdicts over the catalogue's groups and criteria, as leaderboards computes."""
    from leaderboards.services import Verdicts
    from material.models import LanguageModel
    from taxonomy.models import Criterion, CriterionGroup, Task

    rng = np.random.default_rng(seed)
    models: list[int] = []
    for i in range(MODELS):
        lm, _ = LanguageModel.objects.get_or_create(name=f"bench-model-{i:03d}", version="1")
        models.append(lm.pk)
    groups = list(Task.objects.filter(level=0).order_by("position").values_list("pk", flat=True))
    general = [
        c
        for c in Criterion.objects.exclude(group=CriterionGroup.CRITICAL).select_related("rubric")
        if c.rubric is not None
    ]
    critical = next(
        c
        for c in Criterion.objects.filter(group=CriterionGroup.CRITICAL).select_related("rubric")
        if c.rubric is not None
    )
    rubrics = {c.rubric.pk: c.rubric for c in [*general, critical] if c.rubric is not None}
    critical_rubric = rubrics[critical.rubric_id] if critical.rubric_id else None
    assert critical_rubric is not None
    verdicts = Verdicts.empty()
    answer = 0
    for m, model in enumerate(models):
        quality = 0.3 + 0.6 * m / MODELS
        for k in range(ANSWERS_PER_MODEL):
            answer += 1
            group = groups[k % len(groups)]
            complexity = ("easy", "medium", "hard")[k % 3]
            picks = rng.choice(len(general), CRITERIA_PER_ANSWER, replace=False)
            row_base = (model, answer, group)
            for p in picks:
                c = general[int(p)]
                rubric = rubrics[c.rubric_id or 0]
                values = rubric.values
                value = max(values) if rng.random() < quality else int(rng.choice(values))
                verdicts.add(
                    (*row_base, c.pk, complexity, 0, rubric.pk), float(value), False, False
                )
            bad = bool(rng.random() < 0.03)
            verdicts.add(
                (*row_base, critical.pk, complexity, 0, critical_rubric.pk),
                float(max(critical_rubric.values) if bad else critical_rubric.best_value),
                True,
                bad,
            )
    return verdicts, rubrics


def _store(verdicts: Any, rubrics: dict[int, Any]) -> float:
    """Compute the snapshot with the production code and store it; returns the seconds."""
    from leaderboards.models import Leaderboard, LeaderboardSnapshot, Visibility
    from leaderboards.services import EXPERTS, source_rows
    from material.models import LanguageModel
    from taxonomy.models import Criterion, Task

    started = time.perf_counter()
    rows = source_rows(verdicts, rubrics)
    seconds = time.perf_counter() - started
    board, _ = Leaderboard.objects.get_or_create(
        slug=SLUG, defaults={"title": "Bench", "visibility": Visibility.PUBLIC}
    )
    data = {
        "sources": [{"key": EXPERTS, "kind": "experts", "name": "experts", **rows}],
        "models": {
            str(m.pk): {"name": str(m), "human": False}
            for m in LanguageModel.objects.filter(name__startswith="bench-model-")
        },
        "groups": {
            str(t.pk): {"en": t.name_en, "ru": t.name_ru} for t in Task.objects.filter(level=0)
        },
        "criteria": {
            str(c.pk): {"en": c.name_en, "ru": c.name_ru, "key": c.key}
            for c in Criterion.objects.all()
        },
        "styles": {},
    }
    LeaderboardSnapshot.objects.filter(leaderboard=board).delete()
    LeaderboardSnapshot.objects.create(leaderboard=board, data=data, seconds=seconds)
    return seconds


async def _readers(base: str, path: str, seconds: float) -> tuple[list[float], int, float]:
    import httpx

    timings: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds

    async def reader() -> None:
        nonlocal errors
        async with httpx.AsyncClient(base_url=base, timeout=60.0) as client:
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                response = await client.get(path)
                timings.append(time.perf_counter() - t0)
                if response.status_code != 200:
                    errors += 1

    started = time.perf_counter()
    await asyncio.gather(*(reader() for _ in range(READERS)))
    return timings, errors, time.perf_counter() - started


def _measure(base: str, path: str, seconds: float) -> dict[str, float]:
    from bench.scoring_page import _pct

    # Warm-up: every worker parses the snapshot once and the views are rendered into the cache.
    asyncio.run(_readers(base, path, 4.0))
    timings, errors, wall = asyncio.run(_readers(base, path, seconds))
    if errors:
        raise RuntimeError(f"{path}: {errors} responses were not 200")
    return {"rps": len(timings) / wall, "p50": _pct(timings, 0.5), "p95": _pct(timings, 0.95)}


def main(scale: str) -> str:
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)
    _setup()
    verdicts, rubrics = _verdicts()
    compute_s = _store(verdicts, rubrics)
    from django.db import connection

    from bench.scoring_page import _free_port, _server
    from taxonomy.models import Task

    group = Task.objects.filter(level=0).order_by("position").values_list("pk", flat=True).first()
    connection.close()
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = _server(port)
    seconds = DURATION_S[scale]
    try:
        page = _measure(base, f"/leaderboards/{SLUG}/", seconds)
        filtered = _measure(base, f"/leaderboards/{SLUG}/?group={group}", seconds)
        trivial = _measure(base, "/healthz", seconds)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(
        f"snapshot: {len(verdicts.model):,} verdicts, {MODELS} models, computed in "
        f"{compute_s:.2f} s (1,000 bootstrap rounds)",
        file=sys.stderr,
    )
    for name, r in (("page", page), ("filtered", filtered), ("trivial", trivial)):
        print(
            f"{name}: {r['rps']:.1f} req/s, p50 {r['p50']:.0f} ms, p95 {r['p95']:.0f} ms "
            f"({READERS} readers)",
            file=sys.stderr,
        )
    return (
        line("leaderboard", page["rps"], "req/s", trivial["rps"], page["rps"] / trivial["rps"])
        + f" [p95 {page['p95']:.0f} ms, filtered p95 {filtered['p95']:.0f} ms, trivial p95"
        f" {trivial['p95']:.0f} ms]"
    )
