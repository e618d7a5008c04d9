"""The REPA pairwise protocol's rules: the four labels, the A/B swap, the majority, the outcome
for rankings and the judge's label parser.

Source: REPA (Pugachev et al., "REPA: Russian Error Types Annotation for Evaluating Text
Generation and Judgment Capabilities", /work/shared/references/repa-paper.md) and issue #13.

- Labels (§2.3, Appendix A): "A is better", "B is better", "Both are good", "Both are bad",
  exactly one per criterion. Stored by the stable codes of `Label`; the display names in
  Russian and English belong to the app.
- Placement: A/B placement is randomised per assignment and stored (issue #13). A label given
  on a swapped page is brought back to the pair's own orientation by `swap` (an involution).
- Majority (§2.3): "the label assigned by two or more annotators is chosen. If all annotators
  provide different labels, those instances are excluded". `majority` is that rule for any
  panel size: the single most frequent label, if it has at least `min_votes` votes (see its
  docstring for panels other than three).
- Outcome (issue #13, Rankings): the score of response A in a comparison, 1 / 0 for a win /
  loss and the tie mapping ("both good" and "both bad", 0.5 each by default) made explicit.
- Judge labels (Appendix C, Figure 4): every prompt asks for "<Justification> Label: <label>"
  with one of the four label strings and allows no other option; `parse_judge_label` reads
  that and reports a failure instead of guessing.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum


class Label(StrEnum):
    """One of the four REPA options, by its stable code (stored in the database and exports)."""

    A = "a"  # "A is better"
    B = "b"  # "B is better"
    BOTH_GOOD = "both_good"  # "Both are good"
    BOTH_BAD = "both_bad"  # "Both are bad"


TIES = frozenset({Label.BOTH_GOOD, Label.BOTH_BAD})

_SWAPPED = {
    Label.A: Label.B,
    Label.B: Label.A,
    Label.BOTH_GOOD: Label.BOTH_GOOD,
    Label.BOTH_BAD: Label.BOTH_BAD,
}


def swap(label: Label | str) -> Label:
    """The label with A and B exchanged ("A is better" <-> "B is better"; ties unchanged).

    An involution: `swap(swap(x)) == x`, so it both applies and undoes a swapped placement.
    """
    return _SWAPPED[Label(label)]


def unplace(label: Label | str, *, swapped: bool) -> Label:
    """A label given on the page brought to the pair's orientation (model A of the pair is A).

    `swapped` is the assignment's stored placement: True when the page showed the pair's
    response B on the left, as "A".
    """
    return swap(label) if swapped else Label(label)


def majority(labels: Iterable[Label | str], min_votes: int = 2) -> Label | None:
    """The panel's label: the single most frequent label, if it has at least `min_votes` votes;
    None for "no consensus".

    With REPA's three annotators and the default `min_votes=2` this is exactly the paper's rule
    (§2.3: the label given by two or more annotators; three different labels are excluded).
    The paper defines only three annotators; for other panels the choice made here is:

    - a tie for the top is no consensus (2-2 of four, 2-2-1 of five): no label wins;
    - otherwise the top label wins when it has `min_votes` votes, so 2-1-1-1 of five gives the
      2 ("assigned by two or more annotators", as the paper words it) and one vote alone is
      never a consensus. A strict majority of the panel is `min_votes=len(labels) // 2 + 1`.
    """
    if min_votes < 1:
        raise ValueError(f"min_votes must be at least 1, got {min_votes}")
    counts = Counter(Label(label) for label in labels).most_common()
    if not counts:
        return None
    top, votes = counts[0]
    if votes < min_votes or (len(counts) > 1 and counts[1][1] == votes):
        return None
    return top


def unanimous(labels: Iterable[Label | str], min_votes: int = 3) -> Label | None:
    """The label every annotator gave, when there are at least `min_votes` of them; else None.

    REPA's gold items (§3.2, "consistent queries") are those where all three annotators gave
    the same label; issue #13 takes them as the gold pool for exams, control items and judge
    calibration. Pass the configured overlap as `min_votes` for panels of another size.
    """
    if min_votes < 1:
        raise ValueError(f"min_votes must be at least 1, got {min_votes}")
    given = [Label(label) for label in labels]
    if len(given) < min_votes or len(set(given)) != 1:
        return None
    return given[0]


def outcome(
    label: Label | str,
    tie_value: float = 0.5,
    *,
    both_good: float | None = None,
    both_bad: float | None = None,
) -> float:
    """Response A's score in the comparison, for the rating systems: 1.0 when A is better,
    0.0 when B is better, and the tie mapping for the two ties.

    Issue #13 maps "both good" and "both bad" to 0.5 (the Chatbot Arena convention for a tie)
    and asks for the mapping to be explicit and configurable: `tie_value` sets both, and
    `both_good` / `both_bad` override one of them. The label must be in the pair's orientation
    (after `unplace`). Values outside [0, 1] are refused: no rating system reads them.
    """
    label = Label(label)
    if label is Label.A:
        return 1.0
    if label is Label.B:
        return 0.0
    chosen = both_good if label is Label.BOTH_GOOD else both_bad
    value = tie_value if chosen is None else chosen
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"the tie value for {label.value} must be in [0, 1], got {value}")
    return float(value)


# --- The judge's label -------------------------------------------------------------------

# The label strings of the REPA judge prompts (Appendix C, Figure 4, all three prompts):
# "'A is better', 'B is better', 'Both are good', 'Both are bad'. Any other evaluation option
# is not allowed." The paper ran Russian prompts and prints an English translation; the Russian
# strings below are the ones the platform's Russian templates must list (they are not the
# paper's, which it does not print).
JUDGE_LABEL_WORDS: Mapping[str, Label] = {
    "A is better": Label.A,
    "B is better": Label.B,
    "Both are good": Label.BOTH_GOOD,
    "Both are bad": Label.BOTH_BAD,
    "A лучше": Label.A,
    "B лучше": Label.B,
    "Оба хороши": Label.BOTH_GOOD,
    "Оба плохи": Label.BOTH_BAD,
}

# "Label:" anywhere (the format is "<Justification> Label: <label>", on one line or two), not
# inside a word ("Relabel:"), with markdown emphasis around the word or the colon
# ("**Label:**", "**Label**:").
_KEYWORD_RE = re.compile(r"(?<![\w])[*_]{0,2}label[*_]{0,2}\s*:[*_]{0,2}", re.IGNORECASE)
# What may wrap a label without changing it: markdown emphasis and code, quotes (the prompts
# quote the options: 'A is better'), the "<label>" placeholder's angle brackets, brackets, and
# closing punctuation.
_WRAPPING = " \t\r\n*_`'\"«»“”„‘’<>[]().!"
# Cyrillic capitals А and В are drawn like Latin A and B, and a judge writing Russian often
# types them: the same label, not a guess. Compared after casefold, so the lower-case forms.
_HOMOGLYPHS = str.maketrans({"а": "a", "в": "b"})


def _normalise(text: str) -> str:
    """A label string as compared: NFKC, unwrapped, spaces collapsed, casefolded, homoglyphs."""
    text = unicodedata.normalize("NFKC", text).strip(_WRAPPING)
    return " ".join(text.split()).casefold().translate(_HOMOGLYPHS)


def _value_after(text: str, start: int) -> str:
    """The candidate label after a "Label:": the rest of its line, or, when that is empty (or
    only wrapping, as in "**Label:**" then a line break), the next non-empty line."""
    lines = text[start:].split("\n")
    for line in lines:
        if _normalise(line):
            return line
    return lines[0]


def _vocabulary(words: Mapping[str, Label]) -> dict[str, Label]:
    """Normalised spelling -> label; two labels that compare equal would make it ambiguous."""
    vocabulary: dict[str, Label] = {}
    for word, label in words.items():
        key = _normalise(word)
        if vocabulary.setdefault(key, label) is not label:
            raise ValueError(f"label words {word!r} and another spelling compare equal")
    return vocabulary


@dataclass(frozen=True)
class LabelParse:
    """The result of parsing one judge output: a label, or an error saying why there is none."""

    label: Label | None
    error: str | None
    justification: str
    raw: str

    @property
    def ok(self) -> bool:
        return self.label is not None


def parse_judge_label(text: str | None, words: Mapping[str, Label] | None = None) -> LabelParse:
    """Read "<Justification> Label: <label>" strictly (REPA, Appendix C, Figure 4).

    The rule:

    1. Every "Label:" (any case, markdown emphasis allowed) starts a candidate whose value is
       the rest of its line (the next non-empty line when nothing follows on its own). No
       candidate: failure.
    2. The last candidate is the verdict (the format puts the label after the justification).
       Its value, unwrapped (quotes, markdown, angle brackets, a final full stop) and compared
       without regard to case, spacing or the Cyrillic look-alikes of A and B, must be one of
       `words` (default `JUDGE_LABEL_WORDS`); anything more ("A is better, but...", "A") is a
       failure: the prompts allow no other option.
    3. An earlier candidate naming a *different* label makes the output a failure (the judge
       changed its mind; picking either would be a guess). Earlier candidates that name no
       label (the format restated: "Label: <label>") or the same label are ignored.

    Text after the verdict's line is ignored. The justification is the text before the
    verdict's "Label:". The keyword is English in every language: the templates (issue #13)
    all ask for "Label: <label>"; only the label strings have Russian spellings.
    """
    raw = text or ""
    vocabulary = _vocabulary(words or JUDGE_LABEL_WORDS)
    candidates = list(_KEYWORD_RE.finditer(raw))
    if not candidates:
        return LabelParse(None, "no 'Label:' in the judge output", raw.strip(), raw)
    verdict = candidates[-1]
    justification = raw[: verdict.start()].strip()
    value = _value_after(raw, verdict.end())
    label = vocabulary.get(_normalise(value))
    if label is None:
        error = f"'Label:' is followed by {value.strip()[:60]!r}, not one of the labels"
        return LabelParse(None, error, justification, raw)
    for earlier in candidates[:-1]:
        other = vocabulary.get(_normalise(_value_after(raw, earlier.end())))
        if other is not None and other is not label:
            return LabelParse(
                None,
                f"conflicting labels in one output: {other.value} then {label.value}",
                justification,
                raw,
            )
    return LabelParse(label, None, justification, raw)
