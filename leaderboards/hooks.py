"""Seams of the leaderboards, filled by the apps above them.

`submitted_models`: callables returning {model id: published?} for the models participants
submitted (the submissions app). A board shows a submitted model only once it is published;
its answers are reserved (never expert work unless an admin sends them), and reserved answers
(exam and control copies too) count on a board only when their model is published.
"""

from __future__ import annotations

from collections.abc import Callable

submitted_models: list[Callable[[], dict[int, int | None]]] = []


def submitted() -> dict[int, int | None]:
    out: dict[int, int | None] = {}
    for source in submitted_models:
        out.update(source())
    return out
