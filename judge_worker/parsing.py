"""Parsing of judge outputs in the POLLUX format ``[FEEDBACK] <rationale> [RESULT] <score> [END]``.

Matches the POLLUX repository's own parsers (ai-forever/POLLUX): every one of them
(`src/metrics.py: parse_score`, `src/utils/score_utils.py: extract_score`,
`src/utils/evaluation.py: TextEvaluator.extract_score`) takes the *first* ``[RESULT]`` block
(`re.search`), and its training-data repair (`src/data_utils/preprocess_data.py:
fix_score_format`) accepts the tag with or without brackets, with a colon and markdown bold
(``**RESULT:** 2``), and a score in parentheses or quotes (``[RESULT] (2)``). So does this parser.

Lenient about that wrapping (plus case of the bracketed tag, spacing, a missing ``[END]``, a
comma decimal separator) but strict about the score: an ambiguous verdict (``1-2``, ``1 или 2``,
``1/2``), which upstream's ``float(...)`` cannot read either, is a failure, and a failed parse is
reported with the raw text kept, never silently turned into 0, because a 0 would be
indistinguishable from a real lowest score in the agreement statistics.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass


def _tag(name: str) -> re.Pattern[str]:
    """A format tag as upstream's repair accepts it: "[RESULT]", "**[result]**", "[ RESULT ]",
    "[RESULT]:", and without brackets "RESULT:" / "**RESULT:**" / "RESULT" (bare, upper case
    only: a lower-case "result" is an ordinary word of a rationale)."""
    bracketed = rf"\[\s*(?i:{name})\s*:?\s*\]"
    bare = rf"\b{name.upper()}\b"
    return re.compile(rf"\*{{0,2}}(?:{bracketed}|{bare})\s*:?\s*\*{{0,2}}\s*:?")


_RESULT_RE = _tag("result")
_FEEDBACK_RE = _tag("feedback")
_END_RE = re.compile(r"\*{0,2}\[\s*end\s*\]\*{0,2}", re.IGNORECASE)
# The score right after the tag: optional bold/quotes/opening parenthesis, a signed decimal with
# "." or ",", then its closing wrapping.
_SCORE_RE = re.compile(r"^[\s*_`\"'«(\[]*([-+]?\d+(?:[.,]\d+)?)[)\]*_`\"'»]*")
# A second number joined to the first ("1-2", "1 – 2", "1/2", "1 или 2", "1 or 2", "1, 2",
# "1..2"): the judge did not decide. Upstream cannot read these either (float("1-2") fails).
_AMBIGUOUS_RE = re.compile(
    r"^\s*(?:[-–—/\\,;]|\.\.|…|\b(?:или|либо|or)\b)\s*[\s*_`\"'«(]*[-+]?\d", re.IGNORECASE
)
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


def _failure(feedback: str, error: str, raw: str) -> JudgeParse:
    return JudgeParse(ok=False, score=None, feedback=feedback, error=error, raw=raw)


def parse_judge_output(text: str, allowed_scores: Sequence[float]) -> JudgeParse:
    """Parse ``[FEEDBACK] ... [RESULT] score [END]``; the score must be in ``allowed_scores``."""
    raw = text
    results = list(_RESULT_RE.finditer(text))
    feedback_match = _FEEDBACK_RE.search(text)
    if not results:
        return _failure(
            _clean_feedback(text, feedback_match, None), "no [RESULT] tag in judge output", raw
        )
    # The first [RESULT] block counts, as in every upstream parser (re.search): what a model
    # writes after its verdict is not a second chance.
    result = results[0]
    tail = text[result.end() :]
    end_match = _END_RE.search(tail)
    score_text = tail[: end_match.start()] if end_match else tail
    feedback = _clean_feedback(text, feedback_match, result.start())
    number = _SCORE_RE.match(score_text)
    if number is None:
        return _failure(feedback, f"no number after [RESULT]: {score_text.strip()[:40]!r}", raw)
    if _AMBIGUOUS_RE.match(score_text[number.end() :]):
        return _failure(
            feedback, f"ambiguous verdict after [RESULT]: {score_text.strip()[:40]!r}", raw
        )
    value = float(number.group(1).replace(",", "."))
    for allowed in allowed_scores:
        if math.isclose(value, float(allowed), abs_tol=_EPS):
            return JudgeParse(ok=True, score=float(allowed), feedback=feedback, error=None, raw=raw)
    scale = ", ".join(format_score(float(a)) for a in allowed_scores)
    return _failure(feedback, f"score {format_score(value)} is not on the scale [{scale}]", raw)


def _clean_feedback(text: str, feedback_match: re.Match[str] | None, stop: int | None) -> str:
    start = feedback_match.end() if feedback_match else 0
    if stop is not None and stop < start:
        # [FEEDBACK] after [RESULT] (format inverted): take what follows [FEEDBACK].
        stop = None
    body = text[start:stop]
    body = _END_RE.sub("", body)
    return body.strip().strip("*").strip()
