"""One entry point for every benchmark: python bench/run.py NAME [--scale small|full|10x].

Each benchmark lives in bench/<name with underscores>.py and exposes main(scale) -> str, returning
the final line `NAME: VALUE UNIT (baseline VALUE UNIT, ratio R)`, which is printed last.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMES = [
    "assignments",
    "scoring-page",
    "aggregation",
    "export-parquet",
    "export-xlsx",
    "judge-gpu",
    "import-material",
    "copy-encoding",
    "pairwise-ranking",
    "data-browser",
    "span-matching",
    "leaderboard",
    "originality",
    "load",
]
# A benchmark whose module is not its name with underscores.
MODULES = {"data-browser": "browser_page"}

# The data paths issue #17 measures at ten times POLLUX.
TEN_X = {"aggregation", "export-parquet", "export-xlsx"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", choices=NAMES)
    parser.add_argument("--scale", choices=["small", "full", "10x"], default="small")
    args = parser.parse_args()
    if args.scale == "10x" and args.name not in TEN_X:
        parser.error(f"--scale 10x is measured for {', '.join(sorted(TEN_X))} only")
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.bench")
    module = importlib.import_module("bench." + MODULES.get(args.name, args.name.replace("-", "_")))
    line = module.main(args.scale)
    print(line, flush=True)


if __name__ == "__main__":
    main()
