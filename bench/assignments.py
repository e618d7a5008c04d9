"""A first build of assignments at POLLUX scale: ≈11,500 answers, ≈172,500 triples, ≈476,000 slots.

The timed run is what the first `manage.py build_assignments` on freshly imported answers pays:
creating every triple, filling every estimate slot, and the foreign-key checks of all those new
rows. The production path writes with COPY (triples, then assignments and estimates streamed
from a second thread while the slot loop runs). The baseline, measured in the same run on the
same data, is the same builder writing through the ORM's bulk_create; the other binary encoding
of lib.pgcopy (psycopg's write_row instead of the numpy layout) is measured in the same run too.
All run inside one transaction that is rolled back, so the bench database keeps whatever other
benchmarks generated.

Django declares every foreign key DEFERRABLE INITIALLY DEFERRED, so PostgreSQL checks the new
rows at COMMIT (one check per row and foreign key, ~1.3 million here). A rolled-back run never
commits, so the bench fires them itself with SET CONSTRAINTS ... IMMEDIATE, table by table, and
prints the parts: triples, assignments (slot loop and its writes), and each table's checks.

Triples, assignments and estimates are cleared first with TRUNCATE ... CASCADE inside the
transaction (rolled back with the rest; it also empties, for the run's duration only, the tables
that reference them: aggregates, judge estimates, estimate revisions, control deliveries and exam
attempt items). A DELETE in the same transaction would leave every deleted row in every index for
the inserts to step over, a state production never builds into, and would queue checks of its
own. Sequences are not transactional: each run consumes ids that the rollback does not give back.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from bench.common import line


def _tables() -> list[str]:
    from work.models import Assignment, Estimate, Triple

    return [Triple._meta.db_table, Assignment._meta.db_table, Estimate._meta.db_table]


def _clear() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(_tables())} CASCADE")


def _deferred_constraints() -> dict[str, str]:
    """table -> its deferred foreign keys, quoted and comma-separated ("" if none)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conrelid::regclass::text, string_agg(quote_ident(conname), ', ')"
            " FROM pg_constraint WHERE contype = 'f' AND condeferred"
            " AND conrelid::regclass::text = ANY(%s) GROUP BY 1",
            [_tables()],
        )
        found = dict(cursor.fetchall())
    return {table: found.get(table, "") for table in _tables()}


def _first_build() -> dict[str, Any]:
    """Triples + assignments from nothing, then the deferred checks of every new row."""
    from django.db import connection

    from work import assignments

    constraints = _deferred_constraints()
    triples_build = assignments.triples_build
    timings: dict[str, float] = {}

    def timed_triples(**kwargs: Any) -> int:
        started = time.perf_counter()
        try:
            return triples_build(**kwargs)
        finally:
            timings["triples_s"] = time.perf_counter() - started

    assignments.triples_build = timed_triples
    started = time.perf_counter()
    cpu = time.process_time()
    try:
        report = assignments.assignments_build()
    finally:
        assignments.triples_build = triples_build
    built = time.perf_counter()
    checks: dict[str, float] = {}
    with connection.cursor() as cursor:
        for table, names in constraints.items():
            if names:
                mark = time.perf_counter()
                cursor.execute(f"SET CONSTRAINTS {names} IMMEDIATE")
                checks[table] = time.perf_counter() - mark
    return {
        "report": report,
        "triples_s": timings["triples_s"],
        "slots_s": built - started - timings["triples_s"],
        "checks": checks,
        "fks": {
            table: names.count(",") + 1 if names else 0 for table, names in constraints.items()
        },
        "total_s": time.perf_counter() - started,
        "client_cpu_s": time.process_time() - cpu,
    }


def _dump() -> dict[str, bytes]:
    """The rows the build created, table by table, as PostgreSQL's own binary COPY data."""
    from django.db import connection

    out: dict[str, bytes] = {}
    with connection.cursor() as cursor:
        for table in _tables():
            data = bytearray()
            with cursor.copy(f"COPY {table} TO STDOUT (FORMAT binary)") as copy:
                for block in copy:
                    data += block
            out[table] = bytes(data)
    return out


def _floor(rows: dict[str, bytes]) -> dict[str, Any]:
    """The floor (issue #17): the same rows, precomputed, COPYed into the same tables with the
    same indexes and constraints, then the same deferred foreign-key checks. No logic at all:
    the least a first build can cost in this database."""
    from django.db import connection, transaction

    constraints = _deferred_constraints()
    sid = transaction.savepoint()
    _clear()
    started = time.perf_counter()
    with connection.cursor() as cursor:
        for table in _tables():
            with cursor.copy(f"COPY {table} FROM STDIN (FORMAT binary)") as copy:
                copy.write(rows[table])
        loaded = time.perf_counter()
        for names in constraints.values():
            if names:
                cursor.execute(f"SET CONSTRAINTS {names} IMMEDIATE")
    total = time.perf_counter() - started
    transaction.savepoint_rollback(sid)
    return {"total_s": total, "copy_s": loaded - started, "checks_s": total - (loaded - started)}


def _build_with(
    module: Any, name: str, value: Any, *, dump: bool = False
) -> tuple[dict[str, Any], tuple[int, int]]:
    """A first build with module.name set to value, rolled back to a savepoint afterwards;
    its timings and the (triples, estimates) it created (and, with `dump`, its rows)."""
    from django.db import transaction

    from work.models import Estimate, Triple

    saved = getattr(module, name)
    sid = transaction.savepoint()
    _clear()
    setattr(module, name, value)
    try:
        run = _first_build()
        counts = (Triple.objects.count(), Estimate.objects.count())
        if dump:
            run["rows"] = _dump()
    finally:
        setattr(module, name, saved)
    transaction.savepoint_rollback(sid)
    return run, counts


def main(scale: str) -> str:
    from bench.datagen import ensure_dataset

    stats = ensure_dataset(scale, with_estimates=False)
    from django.db import connection, transaction

    from lib import pgcopy
    from work import assignments

    method = pgcopy.COPY_METHOD
    # The other binary encoding of the same rows (lib.pgcopy: numpy layout or psycopg's
    # set_types + write_row), measured the same way, for the record in docs/benchmarks.md.
    other = "rows" if method == "numpy" else "numpy"
    with transaction.atomic():
        copy, counts = _build_with(pgcopy, "COPY_METHOD", method, dump=True)
        floor = _floor(copy.pop("rows"))
        alternative, alt_counts = _build_with(pgcopy, "COPY_METHOD", other)
        orm, orm_counts = _build_with(assignments, "COPY_THRESHOLD", sys.maxsize)
        transaction.set_rollback(True)
    connection.close()
    report = copy["report"]
    assert counts == orm_counts == alt_counts
    assert counts == (report["triples_created"], report["estimates_created"])
    assert orm["report"] == report == alternative["report"]
    print(
        f"dataset: {stats.get('answers')} answers; first build created "
        f"{report['triples_created']} triples, {report['assignments_created']} assignments and "
        f"{report['estimates_created']} estimate slots",
        flush=True,
    )
    for name, run in (
        (f"COPY path ({method})", copy),
        (f"COPY path ({other})", alternative),
        ("ORM bulk_create path", orm),
    ):
        checks = " + ".join(
            f"{table.removeprefix('annotation_')} ({run['fks'][table]} FKs) {seconds:.2f}"
            for table, seconds in run["checks"].items()
        )
        print(
            f"{name}: {run['total_s']:.2f} s = triples {run['triples_s']:.2f} s + assignments "
            f"{run['slots_s']:.2f} s + deferred FK checks {sum(run['checks'].values()):.2f} s "
            f"({checks}); client CPU {run['client_cpu_s']:.2f} s",
            flush=True,
        )
    print(
        f"floor (the same rows precomputed, binary COPY + the same FK checks): "
        f"{floor['total_s']:.2f} s = COPY {floor['copy_s']:.2f} s "
        f"+ checks {floor['checks_s']:.2f} s",
        flush=True,
    )
    return line(
        "assignments",
        copy["total_s"],
        "s",
        orm["total_s"],
        orm["total_s"] / copy["total_s"],
        floor=floor["total_s"],
    )
