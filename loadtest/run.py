"""Load test: 200 simulated experts (locust) against gunicorn + PostgreSQL + Redis on 127.0.0.1.

    python -m loadtest.run [--experts 200] [--per-expert 5] [--time-limit 300]

Starts a private stack (tests/faults/stack.py: its own PostgreSQL cluster and Redis server on
free ports, gunicorn, a Celery worker), creates the experts and their assignments, runs locust
headless for at most --time-limit seconds, then prints throughput, p50/p95/p99 latency per
request kind, the error rate, and whether every acknowledged submission is stored exactly once.
Exits non-zero if one is missing or doubled. Loopback only, bounded in count and time.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.faults.stack import ROOT, Stack, running_stack
from tests.faults.stackctl import PASSWORD


def _stats(prefix: Path) -> list[dict[str, Any]]:
    with open(f"{prefix}_stats.csv") as f:
        return list(csv.DictReader(f))


def run(experts: int, per_expert: int, time_limit: int) -> dict[str, Any]:
    """Start a private stack, run the load on it, stop it."""
    with running_stack("pollux-load-", worker=False) as stack:
        return run_on(stack, "load", experts, per_expert, time_limit)


def run_on(
    stack: Stack, prefix: str, experts: int, per_expert: int, time_limit: int
) -> dict[str, Any]:
    """Locust's experts (usernames under `prefix`, new to the stack) against a running stack:
    each opens his queue and submits up to `per_expert` assignments; locust stops when every one
    has finished, or after `time_limit` seconds."""
    made = stack.ctl("experts", prefix, str(experts), str(per_expert), timeout=900)
    with tempfile.TemporaryDirectory(prefix="pollux-locust-") as tmp:
        ack = Path(tmp) / "ack.txt"
        out = Path(tmp) / "locust"
        env = dict(
            os.environ,
            LOAD_USERS=json.dumps(made["usernames"]),
            LOAD_PASSWORD=PASSWORD,
            LOAD_PER_EXPERT=str(per_expert),
            LOAD_ACK=str(ack),
        )
        started = time.monotonic()
        # Arguments are ours, not user input.
        subprocess.run(  # noqa: S603
            [sys.executable, "-m", "locust", "-f", "loadtest/locustfile.py", "--headless",
             "--users", str(experts), "--spawn-rate", str(max(10, experts // 5)),
             "--host", stack.base_url, "--run-time", f"{time_limit}s",
             "--stop-timeout", "30", "--csv", str(out), "--only-summary", "--loglevel",
             "WARNING"],
            cwd=ROOT, env=env, check=False, timeout=time_limit + 120,
        )  # fmt: skip
        wall = time.monotonic() - started
        acknowledged = [int(x) for x in ack.read_text().split()] if ack.exists() else []
        stored = stack.ctl("stored", prefix)
        rows = {r["Name"]: r for r in _stats(out)}
    total = rows["Aggregated"]
    requests = int(total["Request Count"])
    failures = int(total["Failure Count"])
    return {
        "experts": experts,
        "per_expert": per_expert,
        "assignments": made["assignments"],
        "wall_s": round(wall, 1),
        "requests": requests,
        "rps": float(total["Requests/s"]),
        "error_rate": failures / requests if requests else 0.0,
        "latency_ms": {
            name: {q: float(r[q]) for q in ("50%", "95%", "99%")}
            for name, r in rows.items()
            if name in ("queue/next", "assignment page", "submit", "Aggregated")
        },
        "submissions_acknowledged": len(set(acknowledged)),
        "acknowledged_twice": len(acknowledged) - len(set(acknowledged)),
        "submitted_stored": len(stored["submitted_assignments"]),
        "stored_exactly_once": sorted(set(acknowledged)) == sorted(stored["submitted_assignments"])
        and stored["duplicate_estimates"] == 0
        and stored["revisions"] == 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experts", type=int, default=200)
    parser.add_argument("--per-expert", type=int, default=5)
    parser.add_argument("--time-limit", type=int, default=300)
    args = parser.parse_args()
    result = run(args.experts, args.per_expert, args.time_limit)
    print(json.dumps(result, indent=2))
    if not result["stored_exactly_once"] or not result["submissions_acknowledged"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
