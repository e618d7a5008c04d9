"""One entry point for every benchmark: python bench/run.py NAME [--scale small|full].

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
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", choices=NAMES)
    parser.add_argument("--scale", choices=["small", "full"], default="small")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.bench")
    module = importlib.import_module("bench." + args.name.replace("-", "_"))
    line = module.main(args.scale)
    print(line, flush=True)


if __name__ == "__main__":
    main()
