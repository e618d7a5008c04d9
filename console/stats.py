"""The console's snapshot of a panel's heavy aggregates: compute, store, read, refresh.

Scanning 500,000 estimates takes seconds, so pages read the PanelStats snapshot and a Celery task
(console.tasks) refreshes it, on demand and by beat.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from console.models import PanelStats
from console.selectors import (
    ProgressRow,
    confidence_histogram,
    median_times,
    panel_agreement,
    progress_by_group,
    progress_by_task,
    progress_over_time,
    score_distribution,
    throughput_per_day,
)
from panels.models import Panel
from quality.selectors import Agreement
from taxonomy.models import CriterionGroup

STATS_MAX_AGE = timedelta(minutes=5)


def panel_stats_compute(panel: Panel) -> dict[str, Any]:
    """Every heavy aggregate of the console in JSON form (stored in PanelStats)."""
    agreement = panel_agreement(panel)
    throughput = throughput_per_day(panel, 30)
    return {
        "progress": [
            [d.isoformat(), n] for d, n in progress_over_time(panel, 30, series=throughput)
        ],
        "groups": [[r.key, r.required, r.done] for r in progress_by_group(panel)],
        "tasks": [[r.key, r.label, r.required, r.done] for r in progress_by_task(panel, 50)],
        "throughput": [[d.isoformat(), n] for d, n in throughput],
        "times": median_times(panel),
        "distribution": score_distribution(panel),
        "confidence": confidence_histogram(panel),
        "agreement": {
            str(expert_id): {g: [a.n, a.agree, a.distance] for g, a in groups.items()}
            for expert_id, groups in agreement.items()
        },
    }


@dataclass
class Stats:
    """The snapshot, rebuilt into the objects templates and plots use."""

    computed_at: Any
    groups: list[ProgressRow]
    tasks: list[ProgressRow]
    throughput: list[tuple[date, int]]
    progress: list[tuple[date, int]]
    times: dict[str, Any]
    distribution: list[dict[str, Any]]
    confidence: list[int]
    agreement: dict[int, dict[str, Agreement]]
    stale: bool


def panel_stats(panel: Panel) -> Stats:
    """The panel's snapshot; computed now when there is none (then kept for the next views)."""

    snapshot = PanelStats.objects.filter(panel=panel).first()
    if snapshot is None:
        snapshot = panel_stats_refresh(panel_id=panel.pk)
    data = snapshot.data
    labels = dict(CriterionGroup.choices)
    throughput = [(date.fromisoformat(d), int(n)) for d, n in data.get("throughput", [])]
    return Stats(
        computed_at=snapshot.computed_at,
        groups=[
            ProgressRow(key=k, label=str(labels.get(k, k)), required=n, done=d)
            for k, n, d in data.get("groups", [])
        ],
        tasks=[
            ProgressRow(key=k, label=lbl, required=n, done=d)
            for k, lbl, n, d in data.get("tasks", [])
        ],
        throughput=throughput,
        progress=[(date.fromisoformat(d), int(n)) for d, n in data.get("progress", [])],
        times=data.get("times", {}),
        distribution=data.get("distribution", []),
        confidence=data.get("confidence", []),
        agreement={
            int(e): {g: Agreement(n=v[0], agree=v[1], distance=v[2]) for g, v in groups.items()}
            for e, groups in data.get("agreement", {}).items()
        },
        stale=timezone.now() - snapshot.computed_at > STATS_MAX_AGE,
    )


def panel_stats_refresh(*, panel_id: int) -> Any:
    """Recompute a panel's snapshot of heavy aggregates (idempotent; last writer wins)."""
    started = time.monotonic()
    panel = Panel.objects.get(pk=panel_id)
    data = panel_stats_compute(panel)
    snapshot, _created = PanelStats.objects.update_or_create(
        panel=panel,
        defaults={
            "data": data,
            "computed_at": timezone.now(),
            "seconds": time.monotonic() - started,
        },
    )
    return snapshot


def panel_stats_refresh_enqueue(*, panel: Panel) -> bool:
    """Queue a refresh unless one was queued in the last minute (a cache key debounces)."""
    if not cache.add(f"panels:stats-refresh:{panel.pk}", 1, timeout=60):
        return False

    def _enqueue() -> None:
        # console.tasks imports this module: the task is named here, when it is sent.
        from console.tasks import refresh_panel_stats

        refresh_panel_stats.delay(panel.pk)

    transaction.on_commit(_enqueue)
    return True
