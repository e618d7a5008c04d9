"""The full load run: 200 simulated experts (locust) on a private stack of gunicorn, PostgreSQL,
Redis and a Celery worker (loadtest/run.py), each submitting five assignments.

    python bench/run.py load [--scale small|full]

small: 20 experts; full: 200 (the POLLUX panel size the reliability work planned for). The value
is the submit request's p95 latency under that crowd; the baseline is the same request's p95 with
one expert alone on the same stack in the same run, so the ratio is what the crowd costs. It fails
(exit 1) when an acknowledged submission is missing or stored twice, or a request failed.
"""

from __future__ import annotations

import json
import sys

from bench.common import line
from loadtest.run import run_on
from tests.faults.stack import running_stack

SCALES = {"small": 20, "full": 200, "10x": 200}


def main(scale: str) -> str:
    experts = SCALES[scale]
    with running_stack("pollux-bench-load-") as stack:
        alone = run_on(stack, "solo", 1, 5, 120)
        crowd = run_on(stack, "crowd", experts, 5, 300)
    print(json.dumps({"alone": alone, "crowd": crowd}, indent=2), flush=True)
    for result in (alone, crowd):
        broken = result["error_rate"] or result["acknowledged_twice"]
        if broken or not result["stored_exactly_once"]:
            sys.exit(1)
    p95 = crowd["latency_ms"]["submit"]["95%"]
    base = alone["latency_ms"]["submit"]["95%"]
    return line(f"load ({experts} experts, submit p95)", p95, "ms", base, p95 / base)
