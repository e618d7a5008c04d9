"""The POLLUX overlap: how many experts score a triple, and its cap.

A triple's required overlap (the number of expert slots) is between 1 and `MAX_OVERLAP`; the
settings give one per criterion group, a criterion may override it, and a supervisor reopening
a triple adds one slot. Every writer goes through `capped_overlap`; the database constraint
`triple_overlap_range` (work.models) repeats the bound as the last guard.
"""

from __future__ import annotations

MIN_OVERLAP = 1
MAX_OVERLAP = 10


def capped_overlap(overlap: int) -> int:
    """The overlap brought into [MIN_OVERLAP, MAX_OVERLAP]."""
    return max(MIN_OVERLAP, min(MAX_OVERLAP, int(overlap)))


def can_add_slot(overlap: int) -> bool:
    """Can a triple with this overlap be reopened for one more expert?"""
    return overlap < MAX_OVERLAP
