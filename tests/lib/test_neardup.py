"""lib.neardup against independent computations: Python sets of word tuples for the exact
Jaccard, a per-document formula for MinHash, binomial error bars for its estimates, and
datasketch's MinHashLSH (the well-kept library) for the LSH candidates."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from datasketch import MinHash, MinHashLSH

from lib import neardup
from lib.neardup import (
    Match,
    NearDupIndex,
    expected_candidate_probability,
    lsh_params,
    minhash_signatures,
    normalize_words,
    shingle_hashes,
)

ROOT = Path(__file__).resolve().parents[2]
SYLLABLES = [c + v for c in "бвгдзклмнпрстх" for v in "аеиоуяё"]


def words_of(rng: random.Random, count: int) -> list[str]:
    # A vocabulary of a few thousand two- and three-syllable words: unrelated texts share
    # words, but almost never five in a row.
    return ["".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 3)))) for _ in range(count)]


def reference_shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    """The definition, written independently: n-word tuples, or one tuple of a shorter text."""
    words = normalize_words(text)
    if not words:
        return set()
    if len(words) < n:
        return {tuple(words)}
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def reference_jaccard(a: str, b: str, n: int = 5) -> float:
    x, y = reference_shingles(a, n), reference_shingles(b, n)
    return len(x & y) / len(x | y)


def edit(rng: random.Random, text: str, changes: int) -> str:
    words = text.split()
    for _ in range(changes):
        at = rng.randrange(len(words))
        words[at] = "".join(rng.choice(SYLLABLES) for _ in range(4))  # a word nobody else has
    return " ".join(words)


# -- words and shingles -------------------------------------------------------------------------


def test_normalize_words() -> None:
    assert normalize_words("Привет, МИР! Hello-world 42") == [
        "привет",
        "мир",
        "hello",
        "world",
        "42",
    ]
    # ё and Ё read as е, precomposed or as е + combining diaeresis (NFKC composes it first).
    assert normalize_words("Ёлка, ёжик, Е\u0308ЖИК") == ["елка", "ежик", "ежик"]
    # NFKC: full-width letters and digits, ligatures, superscripts.
    assert normalize_words("ＰＯＬＬＵＸ ﬁle x²") == ["pollux", "file", "x2"]
    # Underscores and punctuation split words; nothing but separators is no word.
    assert normalize_words("snake_case «цитата» — тире") == ["snake", "case", "цитата", "тире"]
    assert normalize_words(" ,.;— \n") == []


def test_shingle_words_match_normalize_words() -> None:
    """The vectorized tokenizer (code points, numpy) sees the words normalize_words sees: with
    1-word shingles, equal hashes exactly where the words are equal, on awkward Unicode."""
    rng = random.Random(7)
    alphabet = (
        list("абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВЁЯ")
        + list("abcXYZ0123456789_-.,;:!? \n\t«»—")
        + ["е\u0308", "\u0301", "ﬁ", "Ａ", "²", "中", "文", "😀", "\ud800", "İ", "ß", "Σ", "ς"]
    )
    texts = [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 200))) for _ in range(300)
    ]
    texts += ["а" * 33 + " " + "б" * 40 + " короткое", "x" * 5000, "", "   "]
    hashes, offsets = shingle_hashes(texts, shingle=1)
    seen: dict[str, int] = {}
    for i, text in enumerate(texts):
        words = normalize_words(text)
        mine = hashes[offsets[i] : offsets[i + 1]].tolist()
        assert len(mine) == len(words), text
        for word, value in zip(words, mine, strict=True):
            assert seen.setdefault(word, value) == value, word
    assert len(set(seen.values())) == len(seen)  # distinct words, distinct hashes
    # The numpy word hashes are the scalar definition's, long (blake2b) words included.
    for text in texts[::10] + texts[-4:]:
        vectorized, _counts = neardup._word_hashes([text])
        assert vectorized.tolist() == [neardup._word_hash(w) for w in normalize_words(text)]


def test_short_texts_are_one_shingle_of_all_their_words() -> None:
    hashes, offsets = shingle_hashes(["один два три", "один два три четыре пять", "", "раз"])
    assert np.diff(offsets).tolist() == [1, 1, 0, 1]
    # "один два три" is not the 3-word prefix of the 5-gram: different shingles.
    assert hashes[0] != hashes[1]


def test_hashes_are_stable_across_processes() -> None:
    """Another interpreter, with another PYTHONHASHSEED, hashes the same texts the same."""
    texts = ["Ёлка стоит в лесу и никого не ждёт", "short", "x" * 40 + " длинное слово"]
    here = shingle_hashes(texts)[0].tolist()
    code = (
        "import json, sys; from lib.neardup import shingle_hashes; "
        "print(json.dumps(shingle_hashes(json.loads(sys.argv[1]))[0].tolist()))"
    )
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(texts)],
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        )
        assert json.loads(out.stdout) == here


# -- MinHash ------------------------------------------------------------------------------------


def test_minhash_matches_the_formula_per_document() -> None:
    """The vectorized signatures (pieces of 8,192 shingles cut across documents, reduceat)
    equal min over each document of (a·x + b) mod 2³², x the top 32 bits, computed alone."""
    rng = np.random.default_rng(3)
    sizes = [0, 1, 5, 9000, 0, 300, 20000, 2, 8192, 0]  # empty, tiny, straddling pieces
    hashes = rng.integers(0, 2**64, sum(sizes), dtype=np.uint64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    signatures = minhash_signatures(hashes, offsets, num_perm=64, seed=11)
    a, b = neardup._permutations(64, 11)
    for doc in range(len(sizes)):
        x = hashes[offsets[doc] : offsets[doc + 1]] >> np.uint64(32)
        if len(x) == 0:
            assert (signatures[:, doc] == 2**32 - 1).all()
            continue
        values = (a.astype(np.uint64) * x + b.astype(np.uint64)) & np.uint64(2**32 - 1)
        assert (signatures[:, doc] == values.min(axis=1)).all()
        alone = minhash_signatures(x << np.uint64(32), np.array([0, len(x)]), 64, seed=11)
        assert (alone[:, 0] == signatures[:, doc]).all()


def test_minhash_estimates_jaccard_within_binomial_error() -> None:
    """Over 600 random pairs of shingle sets with Jaccard from 0 to 1, the share of equal rows
    estimates the Jaccard without bias and with the binomial spread √(J(1 − J) / 128)."""
    rng = np.random.default_rng(5)
    pairs, num_perm = 600, 128
    truth, docs = [], []
    for _ in range(pairs):
        size = int(rng.integers(20, 400))
        shared = int(rng.integers(0, size + 1))
        pool = rng.integers(0, 2**64, 2 * size - shared, dtype=np.uint64)
        docs += [pool[:size], pool[size - shared :]]
        truth.append(shared / (2 * size - shared))
    offsets = np.concatenate([[0], np.cumsum([len(d) for d in docs])])
    sig = minhash_signatures(np.concatenate(docs), offsets, num_perm)
    estimate = (sig[:, 0::2] == sig[:, 1::2]).mean(axis=0)
    j = np.array(truth)
    sigma = np.sqrt(j * (1 - j) / num_perm)
    error = estimate - j
    assert abs(error.mean()) < 0.005  # no bias
    z = error[sigma > 0] / sigma[sigma > 0]
    assert 0.8 < z.std() < 1.2  # the binomial spread, not wider
    assert np.abs(z).max() < 4.5
    assert (estimate[j == 0] == 0).all() and (estimate[j == 1] == 1).all()


# -- LSH and the index --------------------------------------------------------------------------


def test_lsh_params() -> None:
    bands, rows = lsh_params(128, 0.5)
    assert (bands, rows) == (42, 3)
    assert expected_candidate_probability(0.5, bands, rows) >= 0.99
    # One row more per band would miss too many pairs at the threshold.
    assert expected_candidate_probability(0.5, 128 // 4, 4) < 0.99
    assert lsh_params(128, 0.8)[1] > rows  # a higher threshold affords longer bands


def test_exact_jaccard_by_python_sets() -> None:
    base = (
        "Напишите эссе о роли библиотек в жизни небольшого города и о том, как они меняются "
        "с приходом цифровых технологий, приведите примеры из собственного опыта"
    )
    texts = {
        ("instruction", 1): base,
        ("instruction", 2): base.replace("небольшого", "крупного"),
        ("instruction", 3): base + " и предложите три способа привлечь молодых читателей",
        ("instruction", 4): base.upper().replace(",", " ;"),  # the same words
        ("instruction", 5): "Составьте план урока по теме дроби для пятого класса школы",
    }
    index = NearDupIndex()
    index.add(list(texts), list(texts.values()))
    [matches] = index.query([base], top=None, min_similarity=0.0)
    got = {m.key: m.similarity for m in matches}
    for key, text in texts.items():
        expected = reference_jaccard(base, text)
        if expected >= 0.5:  # the index promises these; the rest it may or may not find
            assert got[key] == pytest.approx(expected, abs=1e-12)
        if key in got:
            assert got[key] == pytest.approx(expected, abs=1e-12)
    assert got[("instruction", 4)] == 1.0
    assert ("instruction", 5) not in got
    assert matches[0].similarity == 1.0  # most similar first


def test_planted_near_duplicate_is_found_and_unrelated_texts_are_not() -> None:
    rng = random.Random(11)
    corpus = [" ".join(words_of(rng, rng.randrange(60, 200))) for _ in range(400)]
    index = NearDupIndex()
    index.add([("old", i) for i in range(len(corpus))], corpus)
    copy = edit(rng, corpus[123], changes=3)
    unrelated = " ".join(words_of(rng, 150))
    found, nothing = index.query([copy, unrelated])
    expected = reference_jaccard(copy, corpus[123])
    assert expected > 0.8
    assert [m.key for m in found] == [("old", 123)]
    assert found[0].similarity == pytest.approx(expected, abs=1e-12)
    assert nothing == []


def test_short_texts_cyrillic_and_yo() -> None:
    index = NearDupIndex()
    index.add(
        ["a", "b", "c", "d", "e"],
        ["Ёлка", "ёжик в тумане", "ежик в тумане гуляет по лесу", "", "Ёжик, в ТУМАНЕ!"],
    )
    assert index.query(["елка"]) == [[Match("a", 1.0)]]
    # A short text is one shingle: its words inside a longer text are no match.
    assert index.query(["Ежик в тумане"]) == [[Match("b", 1.0), Match("e", 1.0)]]
    assert index.query(["ЁЖИК В ТУМАНЕ ГУЛЯЕТ ПО ЛЕСУ"]) == [[Match("c", 1.0)]]
    # A text without words matches nothing, and nothing matches it.
    assert index.query([""]) == [[]]
    assert index.query(["— …"], min_similarity=0.0) == [[]]
    assert index.estimated_similarity("d", "a") == 0.0
    assert index.estimated_similarity("b", "e") == 1.0


def test_exclusion_ordering_top_and_incremental_adds() -> None:
    rng = random.Random(5)
    source = " ".join(words_of(rng, 120))
    index = NearDupIndex()
    index.add([("x", 0)], [source])
    index.add([("x", 1), ("x", 2)], [source, edit(rng, source, 2)])  # the second add merges in
    index.add([("x", 3)], [edit(rng, source, 6)])
    [[first, second, third, fourth]] = index.query([source], top=None)
    assert [first.key, second.key] == [("x", 0), ("x", 1)]  # ties in the order added
    assert first.similarity == second.similarity == 1.0
    assert third.key == ("x", 2) and fourth.key == ("x", 3)
    assert third.similarity > fourth.similarity
    [top2] = index.query([source], top=2, exclude_self_keys=[("x", 0)])
    assert [m.key for m in top2] == [("x", 1), ("x", 2)]
    [fresh] = index.add_and_query([("x", 4)], [source])
    assert ("x", 4) not in [m.key for m in fresh] and len(fresh) == 4
    assert len(index) == 5
    with pytest.raises(ValueError, match="already"):
        index.add([("x", 1)], ["again"])
    with pytest.raises(ValueError, match="repeat"):
        index.add([("y", 1), ("y", 1)], ["a", "b"])
    with pytest.raises(ValueError, match="exclude_self_keys"):
        index.query(["a"], exclude_self_keys=[])
    assert index.query([]) == []


def test_a_long_text_across_minhash_pieces() -> None:
    rng = random.Random(9)
    long = " ".join(words_of(rng, 20_000))  # ~20,000 shingles: three MinHash pieces
    index = NearDupIndex()
    index.add(["long", "other"], [long, " ".join(words_of(rng, 20_000))])
    copy = edit(rng, long, changes=500)
    [[match]] = index.query([copy])
    assert match.key == "long"
    assert match.similarity == pytest.approx(reference_jaccard(copy, long), abs=1e-12)


def test_two_builds_agree() -> None:
    rng = random.Random(13)
    corpus = [" ".join(words_of(rng, rng.randrange(3, 150))) for _ in range(300)]
    sources = [i for i in range(0, 300, 5) if len(corpus[i].split()) >= 40]
    corpus += [edit(rng, corpus[i], 2) for i in sources]
    keys = list(range(len(corpus)))
    results = []
    for _ in range(2):
        index = NearDupIndex()
        index.add(keys, corpus)
        results.append(index.query(corpus, top=None, min_similarity=0.0, exclude_self_keys=keys))
    assert results[0] == results[1]
    for copy, source in enumerate(sources, start=300):  # each planted pair, both ways
        assert source in [m.key for m in results[0][copy]]
        assert copy in [m.key for m in results[0][source]]


def test_lsh_candidates_agree_with_datasketch() -> None:
    """A planted set: 500 texts, 100 of them with an edited copy (Jaccard 0.5–0.9). Our LSH
    and datasketch's MinHashLSH (its own MinHash: SHA-1 of each shingle, its own permutations),
    with the same 42 bands × 3 rows, both find ≥ 95 % of the planted pairs, and their candidate
    pairs at Jaccard ≥ 0.5 are nearly the same set."""
    rng = random.Random(17)
    originals = [" ".join(words_of(rng, rng.randrange(40, 250))) for _ in range(500)]
    copies = {i: edit(rng, originals[i], rng.randrange(1, 4)) for i in range(0, 500, 5)}
    planted = {(i, i) for i in copies}
    truth = {i: reference_jaccard(copies[i], originals[i]) for i in copies}
    assert min(truth.values()) >= 0.5

    index = NearDupIndex()
    index.add(list(range(500)), originals)
    ours = index.query(list(copies.values()), top=None, min_similarity=0.0)
    our_pairs: set[tuple[int, int]] = set()
    for i, row in zip(copies, ours, strict=True):
        for m in row:
            assert isinstance(m.key, int)
            our_pairs.add((i, m.key))

    bands, rows = index.bands, index.rows
    lsh = MinHashLSH(num_perm=128, params=(bands, rows))

    def sketch(text: str) -> MinHash:
        shingles = [" ".join(s).encode() for s in reference_shingles(text)]
        return MinHash.bulk([shingles], num_perm=128)[0]

    for i, text in enumerate(originals):
        lsh.insert(i, sketch(text))
    their_pairs = {(i, key) for i, text in copies.items() for key in lsh.query(sketch(text))}

    our_recall = len(planted & our_pairs) / len(planted)
    their_recall = len(planted & their_pairs) / len(planted)
    assert our_recall >= 0.95 and their_recall >= 0.95, (our_recall, their_recall)
    pairs = our_pairs | their_pairs
    close = {(i, k) for i, k in pairs if reference_jaccard(copies[i], originals[k]) >= 0.5}
    only_one = {pair for pair in close if (pair in our_pairs) != (pair in their_pairs)}
    assert len(only_one) <= 0.05 * len(close)
    # Our similarities are exact wherever a pair is reported.
    for i, row in zip(copies, ours, strict=True):
        for m in row:
            key = m.key
            assert isinstance(key, int)
            assert m.similarity == pytest.approx(reference_jaccard(copies[i], originals[key]))


def test_nfkc_is_applied_before_lowercase() -> None:
    # Decomposed capital Ё (Е + U+0308) composes, lowercases and folds like the precomposed one.
    decomposed = unicodedata.normalize("NFD", "ЁЖ")
    assert normalize_words(decomposed) == normalize_words("ёж") == ["еж"]
