"""The POLLUX panel verdict of a triple: the expert mode and the verdict confidence.

The scores of a triple are its submitted, non-NA expert scores (after the dataset's rules). The
*mode* is the single most frequent score, None on a tie (such triples are left out of mode-based
numbers); the *verdict confidence* is the share of the panel that gave the most frequent score
(defined on a tie too: the tied count over the panel).

These plain-Python functions are the definition. The fast copies compute the same per triple
with numpy (dataset.aggregation for the dataset and the judge report; judging.report's
substitution of an expert by the judge) and are tested against them on
tests/data/verdict_cases.json.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def mode(scores: Sequence[float]) -> float | None:
    """The unique most frequent score; None for no scores or a tie."""
    if not scores:
        return None
    counts = Counter(scores).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return None
    return counts[0][0]


def verdict_confidence(scores: Sequence[float]) -> float | None:
    """Share of the panel that gave the most frequent score; None without scores."""
    if not scores:
        return None
    return Counter(scores).most_common(1)[0][1] / len(scores)
