"""What the aggregation's read costs with and without rule 1's proof in SQL (issue #17).

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/pollux_bench_full \\
        python bench/rationale_sql.py [WORK_MEM ...]

Times the COPY of the aggregation's estimates query three ways on the bench database: with the
proof in SQL as the aggregation sent it until RATIONALE_PROOF_IN_SQL went off (evaluated in two
CASE expressions), with the proof computed once
per row in a subquery, and with no proof (every rationale text sent). Not one of bench/run.py's
benchmarks: a probe whose figures docs/benchmarks.md cites.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.bench")


def main(work_mems: list[str]) -> None:
    import django

    django.setup()
    from django.db import connection, transaction

    from dataset.aggregation import narrow_estimates_sql, rationale_sure_sql
    from protocol.rationale import RationaleRule

    rule = RationaleRule.current()
    sure = rationale_sure_sql(
        "e.rationale",
        script=rule.script,
        min_words=rule.min_words,
        script_share=rule.script_share,
    )
    assert sure is not None
    current = narrow_estimates_sql(sure)
    both = (
        f"CASE WHEN ({sure}) THEN 1 ELSE 0 END, CASE WHEN ({sure}) THEN NULL ELSE e.rationale END"
    )
    once = current.replace(
        both, "CASE WHEN e.sure THEN 1 ELSE 0 END, CASE WHEN e.sure THEN NULL ELSE e.rationale END"
    ).replace(
        "FROM work_estimate e ",
        f"FROM (SELECT e.*, ({sure}) AS sure FROM work_estimate e "  # noqa: S608 (trusted SQL)
        "WHERE e.status = 'submitted') e ",
        1,
    )
    # The rewrite must have found the two CASE expressions (else both variants would be equal).
    assert both in current and once != current
    variants = {
        "proof": current,
        "proof once": once,
        "no proof": narrow_estimates_sql(None),  # CASE WHEN FALSE: every text sent
    }
    for work_mem in work_mems:
        for name, sql in variants.items():
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT set_config('work_mem', %s, true)", [work_mem])
                started, size = time.perf_counter(), 0
                with cursor.copy(f"COPY ({sql}) TO STDOUT") as copy:
                    for block in copy:
                        size += len(block)
                seconds = time.perf_counter() - started
            print(f"work_mem {work_mem:6} {name:11} {seconds:7.2f} s {size / 2**20:8.1f} MB")


if __name__ == "__main__":
    main(sys.argv[1:] or ["4MB"])
