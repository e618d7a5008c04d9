"""The vectorised rationale rule's shortcuts (format characters rewritten only where present,
the script share proven by "no letter outside the script") give the rule's own verdict.

Random texts over an alphabet built to hit every branch: Cyrillic, Latin and Greek letters,
the Cyrillic block's non-letters, format characters (one inside the Arabic block), digits,
word joiners and spaces; each checked against protocol.rationale.rationale_errors.
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from dataset.aggregation import rationale_ok_vectorised
from protocol.rationale import RationaleRule, rationale_errors

ALPHABET = [
    *"абвгдеёжзийклмнопрстуфхцчшщъыьэюяЁЖЯ",
    *"abcxyzABCXYZ",
    *"αβγΩ",
    "\u0482",  # Cyrillic thousands sign: in the block, not a letter
    "\u0483",  # a combining mark inside the block
    "\u04c0",
    "\u200b",  # zero width space (Cf)
    "\u00ad",  # soft hyphen (Cf)
    "\u0600",  # Arabic number sign (Cf)
    "\u2060",  # word joiner (Cf)
    *"0123456789",
    *"-'’.,!?«»—",
    " ",
    " ",
    " ",
    "\n",
    "\u00a0",
]


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        # Mostly one script with a sprinkle of the rest, as real rationales are.
        main = rng.choice(["абвгдежзиклмнопрст", "abcdefghijklmnop", ""])
        length = rng.choice([0, 1, 2, 3, 5, 8, 20])
        chars = [
            rng.choice(main) if main and rng.random() < 0.7 else rng.choice(ALPHABET)
            for _ in range(length)
        ]
        texts.append("".join(chars))
    return texts


@pytest.mark.parametrize("script", ["cyrillic", "latin", None])
@pytest.mark.parametrize("share", [0.0, 0.5, 1.0, 1.5])
@pytest.mark.parametrize("min_words", [1, 2, 3])
def test_the_vectorised_rule_gives_the_python_rules_verdict(
    script: str | None, share: float, min_words: int
) -> None:
    texts = _texts(hash((script, share, min_words)) & 0xFFFF, 600)
    rng = random.Random(7)
    score = np.array([rng.choice([0.0, 1.0, 2.0]) for _ in texts])
    is_na = np.array([rng.random() < 0.1 for _ in texts])
    best = np.full(len(texts), 2.0)
    rule = RationaleRule(min_words=min_words, script=script, script_share=share)
    expected = [
        not rationale_errors(t, score=s, is_na=bool(na), best_score=2, rule=rule)
        for t, s, na in zip(texts, score.tolist(), is_na.tolist(), strict=True)
    ]
    got = rationale_ok_vectorised(
        pa.chunked_array([pa.array(texts[:300]), pa.array(texts[300:])]),
        score,
        is_na,
        best,
        script=script,
        min_words=min_words,
        script_share=share,
    )
    mismatches = [t for t, e, g in zip(texts, expected, got.tolist(), strict=True) if e != g]
    assert mismatches == []


def test_format_characters_are_removed_in_place_among_texts_without_them() -> None:
    # "а\u200bб в" is two words once the format character goes; its neighbours keep their order.
    texts = ["один", "а\u200bб в", "два слова", "x\u2060y", "ещё два"]
    got = rationale_ok_vectorised(
        pa.array(texts),
        np.zeros(5),
        np.zeros(5, dtype=bool),
        np.full(5, 2.0),
        script="cyrillic",
        min_words=2,
    )
    assert got.tolist() == [False, True, True, False, True]
