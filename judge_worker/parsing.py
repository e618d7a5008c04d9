"""Parsing of judge outputs in the POLLUX format ``[FEEDBACK] <rationale> [RESULT] <score> [END]``.

Lenient about the wrapping (case, markdown bold, spacing, a missing ``[END]``, a comma decimal
separator) but strict about the score: a failed parse is reported as a failure with the raw text
kept, never silently turned into 0, because a 0 would be indistinguishable from a real lowest
score in the agreement statistics.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

# Tag tolerant of case, inner spaces and markdown emphasis around it: "[RESULT]", "**[result]**",
# "[ RESULT ]", "[RESULT]:".
_RESULT_RE = re.compile(r"\*{0,2}\[\s*result\s*\]\*{0,2}\s*:?", re.IGNORECASE)
_FEEDBACK_RE = re.compile(r"\*{0,2}\[\s*feedback\s*\]\*{0,2}\s*:?", re.IGNORECASE)
_END_RE = re.compile(r"\*{0,2}\[\s*end\s*\]\*{0,2}", re.IGNORECASE)
# The score right after the tag: optional bold/quotes, a signed decimal with "." or ",".
_SCORE_RE = re.compile(r"^[\s*_`\"'«]*([-+]?\d+(?:[.,]\d+)?)")
# Tolerance for float comparison with the scale; scales are small integers or halves.
_EPS = 1e-6


@dataclass(frozen=True)
class JudgeParse:
    """Result of parsing one judge output."""

    ok: bool
    score: float | None
    feedback: str
    error: str | None
    raw: str


def format_score(value: float) -> str:
    """Canonical spelling of a scale value: ``2.0`` -> ``"2"``, ``10.5`` -> ``"10.5"``."""
    return f"{value:g}"


def parse_judge_output(text: str, allowed_scores: Sequence[float]) -> JudgeParse:
    """Parse ``[FEEDBACK] ... [RESULT] score [END]``; the score must be in ``allowed_scores``."""
    raw = text
    results = list(_RESULT_RE.finditer(text))
    feedback_match = _FEEDBACK_RE.search(text)
    if not results:
        return JudgeParse(
            ok=False,
            score=None,
            feedback=_clean_feedback(text, feedback_match, None),
            error="no [RESULT] tag in judge output",
            raw=raw,
        )
    # The last [RESULT] wins: models sometimes restate the format ("... then [RESULT] ...") inside
    # the rationale before giving the actual verdict.
    result = results[-1]
    tail = text[result.end() :]
    end_match = _END_RE.search(tail)
    score_text = tail[: end_match.start()] if end_match else tail
    feedback = _clean_feedback(text, feedback_match, result.start())
    number = _SCORE_RE.match(score_text)
    if number is None:
        return JudgeParse(
            ok=False,
            score=None,
            feedback=feedback,
            error=f"no number after [RESULT]: {score_text.strip()[:40]!r}",
            raw=raw,
        )
    value = float(number.group(1).replace(",", "."))
    for allowed in allowed_scores:
        if math.isclose(value, float(allowed), abs_tol=_EPS):
            return JudgeParse(ok=True, score=float(allowed), feedback=feedback, error=None, raw=raw)
    scale = ", ".join(format_score(float(a)) for a in allowed_scores)
    return JudgeParse(
        ok=False,
        score=None,
        feedback=feedback,
        error=f"score {format_score(value)} is not on the scale [{scale}]",
        raw=raw,
    )


def _clean_feedback(text: str, feedback_match: re.Match[str] | None, stop: int | None) -> str:
    start = feedback_match.end() if feedback_match else 0
    if stop is not None and stop < start:
        # [FEEDBACK] after [RESULT] (format inverted): take what follows [FEEDBACK].
        stop = None
    body = text[start:stop]
    body = _END_RE.sub("", body)
    return body.strip().strip("*").strip()
