"""Criterion scores computed from a markup by the essay type's formula, and the regulations'
conditions for a third check by scores (ПРО//ЧТЕНИЕ «Грамматика» 2020, Appendix 3, sections 3.3
and 3.4). Stored per essay type (the subject key of the classifier) in `FORMULAS`.

Russian (section 3.3), [x] = 1 when x holds:
    volume < 70 words → K = К9 = К10 = 0;
    short = [volume < 150 words];
    К9 = max(0, ⌊2 − 0.5·grammar errors − short⌋); К10 = max(0, ⌊2.5 − 0.5·speech errors − short⌋).
Literature (section 3.4):
    volume < 150 words → K = К5 = 0;  К5 = max(0, ⌊3.5 − 0.5·speech errors⌋).

Choices where the regulations are silent (docs/spans.md):
- An error is counted once per fragment, and once per tag for the fragments a tag links (a
  multi-span error is one error). Only scored error types count (not ИСП, not meaning blocks),
  and each counts towards the criterion the classifier maps it to for the subject; a
  whole-text error counts like any other.
- The volume is the number of words: runs of letters and digits, a hyphenated word («что-то»)
  one word, numbers included.
- The third check's "final score K" is the sum of every criterion the expert entered (К1…К12
  for Russian, К1…К5 for literature): the formula's K = К9 + К10 cannot differ by 8.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from protocol.markup_classifier import Classifier
from protocol.markup_criteria import ESSAY_CRITERIA
from protocol.markup_format import MarkupDocument

_WORD = re.compile(r"\w+(?:[-‐‑]\w+)*")

Number = int | float


def volume(text: str) -> int:
    """The essay's volume in words (see the module's note)."""
    return sum(1 for _ in _WORD.finditer(text))


def error_counts(document: MarkupDocument, classifier: Classifier) -> dict[str, int]:
    """Errors per criterion (К9, К10, К5, …) for the document's subject: one per fragment, one
    per tag for linked fragments; unscored types and unknown codes do not count."""
    subject = str(document.meta.get("subject") or "")
    seen: dict[str, set[str]] = {}
    for i, fragment in enumerate(document.fragments):
        kind = classifier.get(fragment.code)
        if kind is None or not kind.scored or kind.group != "error":
            continue
        criterion = classifier.criterion(fragment.code, subject)
        if criterion is None:
            continue
        key = f"tag:{fragment.tag}" if fragment.tag else f"fragment:{i}"
        seen.setdefault(criterion, set()).add(key)
    return {criterion: len(keys) for criterion, keys in seen.items()}


@dataclass(frozen=True)
class ComputedScores:
    subject: str
    words: int
    errors: dict[str, int]
    criteria: dict[str, int]  # the criteria the formula gives
    total: int  # the formula's K
    too_short: bool  # below the minimal volume: everything is 0


def _floor_at_zero(value: float) -> int:
    return max(0, math.floor(value))


def _russian(words: int, errors: Mapping[str, int]) -> tuple[dict[str, int], bool]:
    if words < 70:
        return {"К9": 0, "К10": 0}, True
    short = 1 if words < 150 else 0
    k9 = _floor_at_zero(2 - 0.5 * errors.get("К9", 0) - short)
    k10 = _floor_at_zero(2.5 - 0.5 * errors.get("К10", 0) - short)
    return {"К9": k9, "К10": k10}, False


def _literature(words: int, errors: Mapping[str, int]) -> tuple[dict[str, int], bool]:
    if words < 150:
        return {"К5": 0}, True
    return {"К5": _floor_at_zero(3.5 - 0.5 * errors.get("К5", 0))}, False


Formula = Callable[[int, Mapping[str, int]], tuple[dict[str, int], bool]]
# Per essay type (the classifier's subject key). Other types have no formula in the
# regulations' 2020 edition we ship: their scores are entered, never computed.
FORMULAS: dict[str, Formula] = {"rus": _russian, "lit": _literature}


def computed_scores(document: MarkupDocument, classifier: Classifier) -> ComputedScores | None:
    """The criteria the essay type's formula computes from the markup; None without one."""
    subject = classifier.subject_key(str(document.meta.get("subject") or ""))
    formula = FORMULAS.get(subject or "")
    if subject is None or formula is None:
        return None
    words = volume(document.text)
    errors = error_counts(document, classifier)
    criteria, too_short = formula(words, errors)
    return ComputedScores(subject, words, errors, criteria, sum(criteria.values()), too_short)


def disagreements(entered: Mapping[str, Number], computed: ComputedScores) -> dict[str, int]:
    """The entered criteria that differ from the computed ones: criterion → computed value."""
    return {
        name: value
        for name, value in computed.criteria.items()
        if name in entered and entered[name] != value
    }


def _difference(a: Mapping[str, Number], b: Mapping[str, Number], name: str) -> Number | None:
    if name not in a or name not in b:
        return None
    return abs(a[name] - b[name])


def third_check_reasons(
    subject: str, a: Mapping[str, Number], b: Mapping[str, Number]
) -> list[str]:
    """Why two experts' criterion scores call for a third check (Appendix 3): Russian — final
    scores 8 or more apart, or К7 or К8 2 or more apart; literature — final scores 7 or more
    apart, any of К1…К5 2 or more apart, or one expert's К1 = 0 and not the other's. Empty when
    no condition holds, or when either expert entered no scores."""
    if not a or not b:
        return []
    total = abs(sum(a.values()) - sum(b.values()))
    reasons = []
    if subject == "rus":
        if total >= 8:
            reasons.append(f"K differs by {total:g} (≥ 8)")
        for name in ("К7", "К8"):
            diff = _difference(a, b, name)
            if diff is not None and diff >= 2:
                reasons.append(f"{name} differs by {diff:g} (≥ 2)")
    elif subject == "lit":
        if total >= 7:
            reasons.append(f"K differs by {total:g} (≥ 7)")
        for name in ("К1", "К2", "К3", "К4", "К5"):
            diff = _difference(a, b, name)
            if diff is not None and diff >= 2:
                reasons.append(f"{name} differs by {diff:g} (≥ 2)")
        if "К1" in a and "К1" in b and (a["К1"] == 0) != (b["К1"] == 0):
            reasons.append("К1 = 0 for one expert only")
    return reasons


# The criteria an expert scores beside the markup, per essay type, with their maxima (their
# names and descriptions: protocol.markup_criteria). К9, К10 and К5 are also computed by FORMULAS.
ENTERED_CRITERIA: dict[str, dict[str, int]] = {
    subject: {c.code: c.top for c in criteria} for subject, criteria in ESSAY_CRITERIA.items()
}
