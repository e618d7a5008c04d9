"""Seams of the leaderboards, filled by the apps above them.

`submitted_models`: callables returning {model id: (the board version it was submitted to,
published?)} for the models participants submitted (the submissions app). A version's board
shows a submitted model only once it is published, and only if it was submitted to it;
its answers are reserved (never expert work unless an admin sends them), and reserved answers
(exam and control copies too) count on a board only when their model is published.
"""

from __future__ import annotations

from collections.abc import Callable

from lib.registry import Registry

Submitted = dict[int, tuple[int | None, bool]]
submitted_models: Registry[Callable[[], Submitted]] = Registry(
    "leaderboards.hooks.submitted_models"
)


def submitted() -> Submitted:
    out: Submitted = {}
    for source in submitted_models:
        out.update(source())
    return out
