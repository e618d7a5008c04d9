"""The span markup kind's agreement: how far two markups of one
text agree, by the regulations' pairwise accuracy M (protocol.spans)."""

from __future__ import annotations

from collections.abc import Sequence

from protocol.spans import Fragment, pair_accuracy


def markup_agreement(x: Sequence[Fragment], y: Sequence[Fragment], text: str) -> float:
    """The lower of M(X, Y) and M(Y, X), in percent. M is not symmetric (M3–M6 divide by the
    first markup's fragments); the lower one is the conservative reading of "they agree"."""
    return min(pair_accuracy(x, y, text).value, pair_accuracy(y, x, text).value)
