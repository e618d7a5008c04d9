"""The POLLUX rationale rule: the one definition the server, the aggregation and the page share.

A rationale is required for every score, NA included. The rule, on the text after
`normalise` (invisible format characters removed, surrounding whitespace stripped):

- length: at most `MAX_LENGTH` characters (refused, never cut);
- words: at least `RATIONALE_MIN_WORDS` words (default 2), except that one word is accepted for
  the *best* score of the criterion's scale (nothing to explain when all is well). The best end
  is the rubric's (`Rubric.best_value`): the top for ordinary criteria, 0 ("no violation") for
  the critical gates. Never for NA. A word is a run of letters (Unicode L, Nl, No; inner
  hyphens and apostrophes allowed) or a run of decimal digits;
- script ("mostly written in Russian"): with `RATIONALE_SCRIPT` set (default "cyrillic"), the
  letters of that script must be at least `RATIONALE_SCRIPT_SHARE` (default 0.5) of all letters
  (Unicode category L) of the text, and there must be at least one letter. A Latin sentence
  with one Cyrillic letter fails; a Russian sentence naming `sort_values` or GPT-4 passes.

Invisible characters are Unicode format characters (category Cf: zero-width space and joiners,
soft hyphen, direction marks, BOM...): "пло\\u200bхо" is one word.

Other copies, each tested against the shared case list tests/data/rationale_cases.json:
dataset.aggregation (Arrow/RE2 for the dataset filter; a sound SQL pre-filter, off by default) and
static/js/rationale.js (quick feedback on the page; it reads every parameter from
`RationaleRule.for_client`, rendered by the scoring page).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _

# The web form, the API and drafts refuse longer rationales (with the field named).
MAX_LENGTH = 20_000

WORD_RE = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*|\d+", re.UNICODE)

# Letters of each script as code-point ranges (every code point listed is a letter): one
# definition, spelled for Python, RE2, PostgreSQL and JavaScript from here.
SCRIPT_RANGES: dict[str, tuple[tuple[int, int], ...]] = {
    # The Cyrillic block without U+0482-U+0489 (a sign and combining marks, not letters).
    "cyrillic": ((0x0400, 0x0481), (0x048A, 0x04FF)),
    "latin": ((0x41, 0x5A), (0x61, 0x7A)),
}


def _python_class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "[" + "".join(f"\\u{a:04x}-\\u{b:04x}" for a, b in ranges) + "]"


SCRIPTS = {name: re.compile(_python_class(ranges)) for name, ranges in SCRIPT_RANGES.items()}


@lru_cache(maxsize=1)
def _invisible_table() -> dict[int, None]:
    """str.translate table deleting every format character (category Cf).

    Format characters are assigned only in planes 0 and 1 and in the tags block of plane 14;
    scanning those (not all 1.1 million code points) keeps the first call at ~40 ms.
    """
    planes = itertools.chain(range(0x20000), range(0xE0000, 0xE1000))
    return {cp: None for cp in planes if unicodedata.category(chr(cp)) == "Cf"}


def normalise(text: str | None) -> str:
    """The text the rule looks at: format (invisible) characters removed, whitespace stripped."""
    text = text or ""
    if not text.isascii():
        text = text.translate(_invisible_table())
    return text.strip()


def word_count(text: str) -> int:
    return len(WORD_RE.findall(normalise(text)))


def script_share(text: str, script: str) -> float | None:
    """Share of the script's letters among all letters of the text (None: no letters)."""
    text = normalise(text)
    letters = sum(1 for c in text if c.isalpha())
    if not letters:
        return None
    return len(SCRIPTS[script].findall(text)) / letters


def script_ok(text: str, script: str, share: float) -> bool:
    """The script rule on normalised text: letters exist and enough of them are the script's."""
    letters = sum(1 for c in text if c.isalpha())
    # Compared as count >= share * letters, exactly as the Arrow and JavaScript copies do.
    return letters > 0 and len(SCRIPTS[script].findall(text)) >= share * letters


@dataclass(frozen=True)
class RationaleRule:
    """The rule's parameters (settings.POLLUX): the page reads them from `for_client`."""

    min_words: int = 2
    script: str | None = "cyrillic"
    script_share: float = 0.5
    max_length: int = MAX_LENGTH

    @classmethod
    def current(cls) -> RationaleRule:
        conf = settings.POLLUX
        script = conf.get("RATIONALE_SCRIPT") or None
        if script is not None and script not in SCRIPT_RANGES:
            script = None  # an unknown script cannot be checked: no script share is asked
        return cls(
            min_words=int(conf.get("RATIONALE_MIN_WORDS", 2)),
            script=script,
            script_share=float(conf.get("RATIONALE_SCRIPT_SHARE", 0.5)),
        )

    def for_client(self) -> dict[str, Any]:
        """Everything the browser copy needs, messages included (translated here)."""
        return {
            "min_words": self.min_words,
            "script": self.script,
            "script_ranges": [list(r) for r in SCRIPT_RANGES.get(self.script or "", ())],
            "script_share": self.script_share,
            "max_length": self.max_length,
            "messages": {
                "choose": _("Choose a score."),
                "required": _("A rationale is required for every score."),
                "na": _("Explain why the criterion does not apply."),
                "words": self.words_message(),
                "script": _("Write the rationale in Russian (mostly Cyrillic letters)."),
                "length": self.length_message(),
            },
        }

    def words_message(self) -> str:
        return _("Write at least %(n)d words (one word is enough only for the best score).") % {
            "n": self.min_words
        }

    def length_message(self) -> str:
        return _("The rationale is too long: at most %(n)d characters.") % {"n": self.max_length}


def default_script() -> str | None:
    return RationaleRule.current().script


def rationale_errors(
    text: str,
    *,
    score: int | None,
    is_na: bool,
    best_score: int,
    rule: RationaleRule | None = None,
) -> list[str]:
    """Every rule the rationale breaks, as messages for the expert (empty when valid).

    `best_score` is the best end of the criterion's scale (Rubric.best_value).
    """
    rule = rule or RationaleRule.current()
    if len(text or "") > rule.max_length and len(normalise(text)) > rule.max_length:
        return [rule.length_message()]
    text = normalise(text)
    if not text:
        if is_na:
            return [_("Explain why the criterion does not apply.")]
        return [_("A rationale is required for every score.")]
    errors: list[str] = []
    words = len(WORD_RE.findall(text))
    one_word_ok = not is_na and score is not None and score == best_score
    if words < rule.min_words and not (one_word_ok and words >= 1):
        errors.append(rule.words_message())
    if rule.script and not script_ok(text, rule.script, rule.script_share):
        errors.append(_("Write the rationale in Russian (mostly Cyrillic letters)."))
    return errors
