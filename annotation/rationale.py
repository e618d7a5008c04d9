"""The POLLUX rationale rules, checked on the server and mirrored in the browser (scoring.js).

A rationale is required for every score, NA included; it needs at least two words, except that a
one-word rationale is accepted for the top score of the scale (nothing to explain when all is
well); and, by default, it must be written in Russian (Cyrillic letters required).
"""

from __future__ import annotations

import re

from django.conf import settings
from django.utils.translation import gettext as _

WORD_RE = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*|\d+", re.UNICODE)
SCRIPTS = {
    "cyrillic": re.compile(r"[\u0400-\u04FF]"),
    "latin": re.compile(r"[A-Za-z]"),
}


def word_count(text: str) -> int:
    return len(WORD_RE.findall(text or ""))


def default_script() -> str | None:
    script = settings.POLLUX.get("RATIONALE_SCRIPT")
    return script or None


def rationale_errors(
    text: str,
    *,
    score: int | None,
    is_na: bool,
    top_score: int,
    script: str | None = None,
    min_words: int | None = None,
) -> list[str]:
    """Every rule the rationale breaks, as messages for the expert (empty when valid)."""
    min_words = settings.POLLUX.get("RATIONALE_MIN_WORDS", 2) if min_words is None else min_words
    text = (text or "").strip()
    if not text:
        if is_na:
            return [_("Explain why the criterion does not apply.")]
        return [_("A rationale is required for every score.")]
    errors: list[str] = []
    words = word_count(text)
    one_word_ok = not is_na and score is not None and score == top_score
    if words < min_words and not (one_word_ok and words >= 1):
        errors.append(
            _("Write at least %(n)d words (one word is enough only for the top score).")
            % {"n": min_words}
        )
    if script and script in SCRIPTS and not SCRIPTS[script].search(text):
        errors.append(_("Write the rationale in Russian (Cyrillic letters)."))
    return errors
