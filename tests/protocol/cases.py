"""The shared case lists of the protocol's rules (tests/data/<rule>_cases.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data"


def shared_cases(rule: str) -> list[dict[str, Any]]:
    """The cases every copy of `rule` is tested on."""
    cases: list[dict[str, Any]] = json.loads((DATA / f"{rule}_cases.json").read_text("utf-8"))[
        "cases"
    ]
    return cases
