"""lib.pgcopy's two binary encodings of the same rows, alone: the estimate slots of a first build.

Writes the ~476,000 estimate slot rows of a POLLUX-scale first build (full scale; 1/20 at small)
into the estimates table with `copy_model_rows`, once laid out by numpy (the production path)
and once through psycopg's `copy.set_types()` + `copy.write_row()` (the baseline), three times
each, alternating, inside one transaction rolled back to a savepoint after each write. The
table is emptied first with TRUNCATE ... CASCADE in that transaction (see bench/assignments.py);
the foreign keys are deferred and never checked (nothing commits), so what is timed is the
encoding, the transfer and PostgreSQL's COPY with its index maintenance. Reported: the median
wall time and the client CPU of each encoding; the final line compares the medians.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from bench.common import line

ROWS = {"full": 475_754, "small": 22_962}


def main(scale: str) -> str:
    from bench.datagen import ensure_dataset

    ensure_dataset(scale, with_estimates=False)
    from django.db import connection, transaction
    from django.utils import timezone

    from lib.pgcopy import copy_model_rows
    from work.models import Estimate

    n = ROWS[scale]
    i = np.arange(n, dtype=np.int64)
    values = {
        "triple": i // 4 + 1,
        "assignment": i + 1,
        "expert": i % 4 + 1,
        "slot": i % 4 + 1,
        "status": "pending",
        "rationale": "",
    }
    now = timezone.now()
    runs: dict[str, list[tuple[float, float]]] = {"numpy": [], "rows": []}
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {Estimate._meta.db_table} CASCADE")
        for _ in range(3):
            for method in runs:
                sid = transaction.savepoint()
                started, cpu = time.perf_counter(), time.process_time()
                with connection.cursor() as cursor:
                    copy_model_rows(cursor, Estimate, n, values, now=now, method=method)
                runs[method].append((time.perf_counter() - started, time.process_time() - cpu))
                assert Estimate.objects.count() == n
                transaction.savepoint_rollback(sid)
        transaction.set_rollback(True)
    connection.close()
    medians = {}
    for method, timings in runs.items():
        walls = ", ".join(f"{wall:.2f}" for wall, _cpu in timings)
        cpus = ", ".join(f"{cpu:.2f}" for _wall, cpu in timings)
        medians[method] = statistics.median(wall for wall, _cpu in timings)
        print(f"{method}: {n} estimate rows, wall {walls} s, client CPU {cpus} s", flush=True)
    return line(
        "copy-encoding",
        medians["numpy"],
        "s",
        medians["rows"],
        medians["rows"] / medians["numpy"],
    )
