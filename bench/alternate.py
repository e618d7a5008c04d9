"""Two commits' benchmarks alternated in one run: python bench/alternate.py OLD NEW NAME...

A change that should not move performance (a refactoring) is checked by running the same
benchmark on the old and the new code in turn, ABBA (old, new, new, old per round), on the same
data and machine, so drift in the machine's load falls on both. Each commit is checked out once
into a worktree in the temporary directory (`pollux-alternate/<rev>`, with this checkout's
.venv) and reads its own copy of the bench database, migrated by its own code. A benchmark with
a `fast` step (aggregation, exports) runs only that step there (bench.steps.run_child) and its
CPU seconds are compared; the others run whole (`bench/run.py NAME`) and the value of their last
line is compared. Prints per benchmark the medians and new / old.

    python bench/alternate.py main~3 HEAD aggregation export-parquet --scale full --rounds 2
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINE = re.compile(r"^(?P<name>[\w-]+): (?P<value>[\d.e+-]+) (?P<unit>\S+)")


def worktree(rev: str) -> Path:
    sha = subprocess.run(
        ["git", "rev-parse", "--short=10", rev],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # Outside the checkout: the linters and pytest walk the checkout's tree.
    path = Path(tempfile.gettempdir()) / "pollux-alternate" / sha
    if not path.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), sha], cwd=ROOT, check=True)
        (path / ".venv").symlink_to(ROOT / ".venv")
    return path


def side_database(scale: str, tree: Path) -> str:
    """A fresh copy of the scale's bench database for one side, made from the shared one (which
    `bench/run.py NAME --scale SCALE` or `ensure_dataset` built) at the start of every run, both
    sides' at the same moment: copies made at different times differ in their physical state
    (one measured 2.4x slower on the same code). Each side migrates its own copy with its own
    code, so a change of schema leaves the old side's tables as its code expects."""
    import environ
    import psycopg

    from bench.datagen import database_url

    base = database_url(scale)
    cfg = environ.Env.db_url_config(base)
    name = f"{cfg['NAME']}_{tree.name}"
    admin = f"host={cfg['HOST']} port={cfg['PORT'] or 5432} user={cfg['USER']} dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{cfg["NAME"]}"')
    return base.rsplit("/", 1)[0] + "/" + name


def has_fast_step(name: str) -> str | None:
    module = "bench." + {"data-browser": "browser_page"}.get(name, name.replace("-", "_"))
    return module if hasattr(importlib.import_module(module), "fast") else None


def measure(tree: Path, name: str, scale: str, database: str) -> tuple[float, str]:
    """One measurement of `name` on the code in `tree` and its database: (value, unit)."""
    module = has_fast_step(name)
    env = dict(os.environ, BENCH_DATABASE_URL=database)
    if module:
        code = (
            "import json; from bench.steps import run_child; "
            f"r = run_child({module!r}, 'fast', {scale!r}); "
            "print('RESULT ' + json.dumps(r))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        run = json.loads(next(x for x in reversed(out.splitlines()) if x.startswith("RESULT "))[7:])
        return float(run["cpu_s"]), "CPU s (fast step)"
    out = subprocess.run(
        [sys.executable, "bench/run.py", name, "--scale", scale],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    match = LINE.match(out.strip().splitlines()[-1])
    if not match:
        raise RuntimeError(f"{name}: no result line in\n{out[-2000:]}")
    return float(match["value"]), match["unit"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("names", nargs="+")
    parser.add_argument("--scale", default="full", choices=["small", "full", "10x"])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    trees = {"old": worktree(args.old), "new": worktree(args.new)}
    databases = {side: side_database(args.scale, tree) for side, tree in trees.items()}
    for side, tree in trees.items():
        # Each side's schema by its own migrations (a no-op when nothing changed).
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=tree,
            env=dict(
                os.environ,
                BENCH_DATABASE_URL=databases[side],
                DJANGO_SETTINGS_MODULE="config.settings.bench",
            ),
            check=True,
        )
    for name in args.names:
        got: dict[str, list[float]] = {"old": [], "new": []}
        unit = ""
        for _ in range(args.rounds):
            for side in ("old", "new", "new", "old"):
                value, unit = measure(trees[side], name, args.scale, databases[side])
                got[side].append(value)
                print(f"{name} {side}: {value:.4g} {unit}", flush=True)
        old, new = statistics.median(got["old"]), statistics.median(got["new"])
        print(
            f"{name}: new {new:.4g} {unit}, old {old:.4g} {unit} (medians of "
            f"{len(got['new'])}), new/old {new / old:.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
