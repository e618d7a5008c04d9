"""Print the project's pinned requirements from pyproject.toml, one a line, for `pip install -r`.

The image installs dependencies from this list before copying the code, so that editing the code
reuses the cached dependency layer. `--extra NAME` prints that optional group instead.
"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path


def requirements(pyproject: Path, extra: str | None = None) -> list[str]:
    project = tomllib.loads(pyproject.read_text("utf-8"))["project"]
    if extra is None:
        return list(project["dependencies"])
    return list(project.get("optional-dependencies", {}).get(extra, []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("pyproject", type=Path)
    parser.add_argument("--extra")
    args = parser.parse_args()
    print("\n".join(requirements(args.pyproject, args.extra)))


if __name__ == "__main__":
    main()
