"""Building assignments at POLLUX scale: ≈11,500 answers, ≈170,000 triples, ≈490,000 slots.

The timed run builds every estimate slot from scratch with the production path (COPY). The
baseline, measured in the same run on the same data, is the same builder writing through the
ORM's bulk_create. Both run inside one transaction that is rolled back, so the bench database
keeps whatever other benchmarks generated.
"""

from __future__ import annotations

import sys
from typing import Any

from bench.common import line, timed


def _clear() -> None:
    from annotation.models import Assignment, Estimate

    Estimate.objects.all().delete()
    Assignment.objects.all().delete()


def main(scale: str) -> str:
    from bench.datagen import ensure_dataset

    stats = ensure_dataset(scale, with_estimates=False)
    from django.db import connection, transaction

    from annotation import assignments
    from annotation.models import Estimate

    results: dict[str, Any] = {}
    with transaction.atomic():
        sid = transaction.savepoint()
        _clear()
        results["copy_s"], report = timed(assignments.assignments_build)
        results["copy_report"] = report
        results["estimates"] = Estimate.objects.count()
        transaction.savepoint_rollback(sid)
        _clear()
        assignments.COPY_THRESHOLD = sys.maxsize
        try:
            results["orm_s"], orm_report = timed(assignments.assignments_build)
        finally:
            assignments.COPY_THRESHOLD = 1000
        results["orm_report"] = orm_report
        transaction.set_rollback(True)
    connection.close()
    print(
        f"dataset: {stats.get('answers')} answers, {stats.get('triples')} triples; "
        f"built {results['copy_report']['assignments_created']} assignments and "
        f"{results['copy_report']['estimates_created']} estimate slots",
        flush=True,
    )
    print(f"COPY path {results['copy_s']:.2f} s; ORM bulk_create path {results['orm_s']:.2f} s")
    return line(
        "assignments",
        results["copy_s"],
        "s",
        results["orm_s"],
        results["orm_s"] / results["copy_s"],
    )
