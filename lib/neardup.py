"""Near-duplicate texts by Jaccard similarity of word shingles: MinHash + LSH, exact Jaccard.

For each query text, the indexed texts whose sets of word n-grams ("shingles") overlap it most,
with the exact Jaccard similarity |A ∩ B| / |A ∪ B| of the two shingle sets. Comparing every pair
is quadratic (100,000 texts × 2,000 queries is 2 · 10⁸ set intersections), so candidates come
from MinHash signatures banded into LSH buckets (Broder 1997; Leskovec, Rajaraman & Ullman,
"Mining of Massive Datasets", ch. 3) and only the candidates get the exact computation: the
similarity a caller shows is exact, never the MinHash estimate.

Generic: no Django, no app; keys are any hashables (e.g. ("instruction", 17)). Everything is
vectorized over many documents at once (numpy) and processed in bounded chunks, so 100,000 texts
of a few hundred words index in well under 1 GB. Hashing is stable across processes (arithmetic
on the words' code points with fixed constants, blake2b for very long words; never Python's
salted `hash()`), so two builds, in any process, agree exactly.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Hashable, Iterator, Sequence
from typing import NamedTuple

import numpy as np

__all__ = [
    "Match",
    "NearDupIndex",
    "expected_candidate_probability",
    "lsh_params",
    "minhash_signatures",
    "normalize_words",
    "shingle_hashes",
]

# Runs of letters and digits in any script (\w without "_"): Cyrillic and Latin words, numbers.
# Punctuation and hyphens split words ("что-то" is "что", "то"), as in word-level plagiarism
# checkers: a copied sentence with changed punctuation is still a copy.
_WORD = re.compile(r"[^\W_]+")

DEFAULT_SHINGLE = 5
DEFAULT_NUM_PERM = 128
DEFAULT_THRESHOLD = 0.5
# The chance that a pair exactly at the threshold becomes an LSH candidate (see lsh_params).
DEFAULT_RECALL = 0.99
DEFAULT_SEED = 20261127

# Texts are tokenized and hashed in chunks of about _CHUNK_CHARS characters (a longer text is a
# chunk of its own), a few arrays of 8 bytes per character at a time. MinHash then takes
# _PIECE shingles at a time: its work array is num_perm × _PIECE uint32 (4 MiB at 128
# permutations), small enough to stay in cache, measured 3× faster than pieces of 32k shingles.
_CHUNK_CHARS = 1 << 20
_PIECE = 8192

_MASK64 = (1 << 64) - 1
_U64_MAX = np.iinfo(np.uint64).max
_U32_MAX = np.iinfo(np.uint32).max


def normalize_words(text: str) -> list[str]:
    """The words of `text`: NFKC (full-width letters, ligatures, decomposed "е" + diaeresis
    become their plain forms), lowercase, "ё" read as "е" (Russian writes both for one letter),
    then the runs of letters and digits."""
    return _WORD.findall(_fold(text))


def _splitmix64(state: int) -> Iterator[int]:
    """Vigna's splitmix64 in Python integers: the fixed constants of this module come from it,
    not from numpy's generators, whose streams may change between numpy versions."""
    while True:
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        yield z ^ (z >> 31)


def _constants(seed: int, count: int) -> np.ndarray:
    stream = _splitmix64(seed)
    return np.array([next(stream) for _ in range(count)], dtype=np.uint64)


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer on a uint64 array, in place: every output bit depends on every
    input bit, so the top 32 bits that MinHash reads are as good as any (numpy's uint64 arrays
    wrap on overflow, which is the arithmetic mod 2⁶⁴ wanted here)."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


# Position weights of the shingle hash: Σ hash(word_k) · W_k is order-sensitive ("a b" ≠ "b a").
_MAX_SHINGLE = 16
_POSITION = _constants(0x5348494E474C45, _MAX_SHINGLE) | np.uint64(1)  # odd: invertible mod 2⁶⁴
_LENGTH = _constants(0x4C454E475448, 1)[0]

# Word hashes: Σ c_i · B^i + length · L over the word's code points c_i, mod 2⁶⁴, then the
# splitmix64 finalizer; computed for all words of a chunk of texts at once (_word_hashes), where
# the regex, blake2b of each distinct word and a dict lookup per occurrence measured 3.5–5×
# slower (the bench's 19.6 M words: 9.7–11.6 s against 2.0–3.2 s, busy 2-core VM). Polynomial
# hashing mod 2⁶⁴ is weak only for long strings (Thue–Morse strings of some 2,000 characters
# collide for every odd base), so a word longer than _LONG_WORD code points is hashed by blake2b
# instead (rare: Russian words stay under 25 letters).
_LONG_WORD = 32
_WORD_POWERS = np.cumprod(
    np.concatenate([[np.uint64(1)], np.full(_LONG_WORD - 1, _constants(0x574F5244, 1)[0] | 1)]),
    dtype=np.uint64,
)
_WORD_LENGTH = _constants(0x4C4554544552, 1)[0]


class _Tables:
    is_word: np.ndarray | None = None


def _word_characters() -> np.ndarray:
    """Which code points are word characters (1.1 MB of bools, built on first use): read off
    normalize_words' own regex run over every code point, so the two cannot disagree."""
    if _Tables.is_word is None:
        # Every code point but NUL, word characters then overwritten by NUL.
        every = "".join(map(chr, range(1, 0x110000)))
        marked = _WORD.sub(lambda m: "\0" * len(m.group()), every)
        points = np.frombuffer(marked.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        _Tables.is_word = np.concatenate([[False], points == 0])
    return _Tables.is_word


def _fold(text: str) -> str:
    # NFKC first: it composes "е" + U+0308 into "ё", which the replacement then folds.
    return unicodedata.normalize("NFKC", text).lower().replace("ё", "е")


def _word_hash(word: str) -> int:
    """The hash of one normalized word: the scalar form of _word_hashes (long words, tests)."""
    if len(word) > _LONG_WORD:
        digest = hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        return int.from_bytes(digest, "little")
    total = len(word) * int(_WORD_LENGTH)
    for k, char in enumerate(word):
        total += ord(char) * int(_WORD_POWERS[k])
    return int(_mix64(np.array([total & _MASK64], dtype=np.uint64))[0])


def _word_hashes(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The hashes of all words of `texts`, in order, and each text's word count: the words of
    normalize_words, found and hashed with numpy on the texts' code points."""
    folded = [_fold(text) for text in texts]
    # "\n" is no word character: no word spans two texts.
    joined = "\n".join(folded)
    points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    inside = _word_characters()[points].view(np.int8)
    edges = np.diff(inside, prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    lengths = np.flatnonzero(edges == -1) - starts
    text_ends = np.cumsum(np.fromiter(map(len, folded), dtype=np.int64, count=len(folded)) + 1)
    counts = np.diff(np.searchsorted(starts, text_ends), prepend=0)
    # Σ c_i · B^i one character position at a time, over the words still that long: sorted by
    # length (longest first), those are a prefix of the sorted words, so each step is a slice.
    clipped = np.minimum(lengths, _LONG_WORD).astype(np.int16)
    order = np.argsort(-clipped, kind="stable")
    by_length = starts[order]
    longer_than = np.searchsorted(-clipped[order], -np.arange(_LONG_WORD), side="left")
    sums = lengths[order].astype(np.uint64) * _WORD_LENGTH
    for k in range(_LONG_WORD):
        m = int(longer_than[k])
        if m == 0:
            break
        sums[:m] += points[by_length[:m] + k] * _WORD_POWERS[k]
    hashes = np.empty_like(sums)
    hashes[order] = _mix64(sums)
    for w in np.flatnonzero(lengths > _LONG_WORD).tolist():
        hashes[w] = _word_hash(joined[starts[w] : starts[w] + lengths[w]])
    return hashes, counts


def _shingles_of_tokens(
    tokens: np.ndarray, counts: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Shingle hashes of consecutive documents' token hashes (`counts` words each): every run of
    n words, or one shingle of all the words of a text shorter than n. Returns the hashes, each
    document's shingles contiguous and in order, and the n_docs + 1 offsets into them."""
    ends = np.cumsum(counts)
    starts = ends - counts
    per_doc = np.where(counts >= n, counts - n + 1, np.minimum(counts, 1))
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(per_doc, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint64)
    total = len(tokens)
    if total >= n:
        # Σ_k tokens[i + k] · W_k for every start i of the concatenation (the runs that cross a
        # document boundary are computed and dropped: cheaper than avoiding them).
        acc = tokens[: total - n + 1] * _POSITION[0]
        for k in range(1, n):
            acc += tokens[k : total - n + 1 + k] * _POSITION[k]
        full = counts >= n
        run = per_doc[full]
        first = np.repeat(starts[full] - offsets[:-1][full], run)
        at = np.repeat(offsets[:-1][full], run)
        out_index = at + (np.arange(len(at)) - np.repeat(np.cumsum(run) - run, run))
        out[out_index] = acc[out_index + first]
    for doc in np.flatnonzero((counts > 0) & (counts < n)):
        # A text shorter than n words is one shingle of all its words.
        m = int(counts[doc])
        words = tokens[starts[doc] : starts[doc] + m]
        out[offsets[doc]] = (words * _POSITION[:m]).sum(dtype=np.uint64)
    # The shingle's length is part of its hash: a 3-word text is not the 3-word prefix of any
    # 5-gram; then the finalizer spreads the sum over all 64 bits.
    m_of = np.repeat(np.minimum(counts, n).astype(np.uint64), per_doc)
    out += m_of * _LENGTH
    return _mix64(out), offsets


def _chunks(texts: Sequence[str]) -> list[tuple[int, int]]:
    """[lo, hi) ranges of `texts` of about _CHUNK_CHARS characters each."""
    ranges = []
    lo = size = 0
    for i, text in enumerate(texts):
        size += len(text)
        if size >= _CHUNK_CHARS:
            ranges.append((lo, i + 1))
            lo, size = i + 1, 0
    if lo < len(texts):
        ranges.append((lo, len(texts)))
    return ranges


def shingle_hashes(
    texts: Sequence[str], shingle: int = DEFAULT_SHINGLE
) -> tuple[np.ndarray, np.ndarray]:
    """The 64-bit shingle hashes of `texts` (uint64, each text's contiguous, with repeats) and
    the len(texts) + 1 offsets into them: text i has hashes[offsets[i]:offsets[i + 1]]. The
    words are those of normalize_words; a shingle is `shingle` consecutive words, or all the
    words of a shorter text."""
    _check_shingle(shingle)
    parts, counts = [], [np.zeros(1, dtype=np.int64)]
    for lo, hi in _chunks(texts):
        words, per_text = _word_hashes(texts[lo:hi])
        hashes, offsets = _shingles_of_tokens(words, per_text, shingle)
        parts.append(hashes)
        counts.append(np.diff(offsets))
    joined = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
    return joined, np.cumsum(np.concatenate(counts))


def _check_shingle(shingle: int) -> None:
    if not 1 <= shingle <= _MAX_SHINGLE:
        raise ValueError(f"shingle is a number of words from 1 to {_MAX_SHINGLE}, not {shingle}")


def _permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    values = _constants(seed, 2 * num_perm)
    a = (values[:num_perm] & np.uint64(_U32_MAX)).astype(np.uint32) | np.uint32(1)
    b = (values[num_perm:] >> np.uint64(32)).astype(np.uint32)
    return a[:, None], b[:, None]


def minhash_signatures(
    hashes: np.ndarray,
    offsets: np.ndarray,
    num_perm: int = DEFAULT_NUM_PERM,
    seed: int = DEFAULT_SEED,
) -> np.ndarray:
    """MinHash signatures (num_perm × n_docs, uint32) of documents given as shingle hashes
    (uint64) with offsets, as `shingle_hashes` returns them. Row j holds min over the document's
    shingles x of h_j(x) = (a_j · x + b_j) mod 2³², x the top 32 bits of the shingle hash, a_j
    odd. P(two signatures agree in a row) ≈ Jaccard of the two shingle sets. A document without
    shingles has the all-ones signature (0xFFFFFFFF in every row).

    Why this hash family: the shingle hashes are already well mixed (words and shingles both go
    through the splitmix64 finalizer), so each h_j only has to be another bijection per row:
    the affine map mod 2³² with odd a is one, and it is datasketch 2.0's default ("affine32",
    after its own finalizer). numpy runs it in SIMD uint32 lanes: measured here 8× faster than
    the Carter–Wegman (a·x + b) mod (2³¹ − 1) in uint64 with its Mersenne folds. The tests
    check the estimates against exact Jaccard and the LSH candidates against datasketch's.

    Vectorized over documents: the hashes are cut into pieces of _PIECE shingles whatever the
    document boundaries; each piece is one (num_perm × piece) product and one
    `np.minimum.reduceat` along its document segments, and a document cut by a piece boundary
    takes the minimum of its parts. Memory: one piece at a time."""
    hashes = np.asarray(hashes, dtype=np.uint64)
    offsets = np.asarray(offsets, dtype=np.int64)
    docs = len(offsets) - 1
    a, b = _permutations(num_perm, seed)
    signatures = np.full((num_perm, docs), _U32_MAX, dtype=np.uint32)
    if docs <= 0 or len(hashes) == 0:
        return signatures
    top = (hashes >> np.uint64(32)).astype(np.uint32)
    starts = offsets[:-1]
    nonempty = np.flatnonzero(offsets[1:] > starts)
    nonempty_starts = starts[nonempty]
    for lo in range(0, len(top), _PIECE):
        hi = min(lo + _PIECE, len(top))
        # The documents with shingles in [lo, hi): the one the piece starts inside, then those
        # starting in it.
        first = int(np.searchsorted(nonempty_starts, lo, side="right")) - 1
        last = int(np.searchsorted(nonempty_starts, hi, side="left"))
        owners = nonempty[first:last]
        segment = np.maximum(starts[owners], lo) - lo
        values = a * top[lo:hi]
        values += b
        minima = np.minimum.reduceat(values, segment, axis=1)
        np.minimum(signatures[:, owners], minima, out=minima)
        signatures[:, owners] = minima
    return signatures


def lsh_params(
    num_perm: int = DEFAULT_NUM_PERM,
    threshold: float = DEFAULT_THRESHOLD,
    recall: float = DEFAULT_RECALL,
) -> tuple[int, int]:
    """(bands, rows) for LSH over num_perm-row signatures: the most rows per band (the fewest
    chance candidates among dissimilar texts) for which a pair exactly at Jaccard `threshold`
    becomes a candidate with probability ≥ `recall`, 1 − (1 − t^rows)^bands, and as many bands
    as the signature holds (more similar pairs are found with even higher probability).
    128 permutations at 0.5: 42 bands of 3 rows, P(candidate) = 0.996 at J = 0.5, 0.94 at 0.4,
    0.68 at 0.3, 0.04 at 0.1."""
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold is a Jaccard similarity in (0, 1), not {threshold}")
    rows = 1
    for r in range(1, num_perm + 1):
        bands = num_perm // r
        if 1.0 - (1.0 - threshold**r) ** bands >= recall:
            rows = r
    return num_perm // rows, rows


def _band_keys(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """One uint64 key per band and document (bands × n_docs): the band's rows weighted by fixed
    odd constants, summed and mixed. Two documents share a key iff their rows agree (barring a
    64-bit collision, which only adds a candidate that the exact Jaccard then rejects)."""
    docs = signatures.shape[1]
    grouped = signatures[: bands * rows].reshape(bands, rows, docs).astype(np.uint64)
    weights = _POSITION[:rows, None] if rows <= _MAX_SHINGLE else _constants(7, rows)[:, None]
    keys = (grouped * weights).sum(axis=1, dtype=np.uint64)
    keys += np.arange(bands, dtype=np.uint64)[:, None] * _LENGTH
    return _mix64(keys)


class Match(NamedTuple):
    key: Hashable
    similarity: float  # the exact Jaccard of the two shingle sets


class _Chunk(NamedTuple):
    """One chunk of texts made ready for the index."""

    hashes: np.ndarray  # uint64 shingle hashes, each text's contiguous
    offsets: np.ndarray  # texts + 1 offsets into hashes
    signatures: np.ndarray  # num_perm × texts, uint32
    keys: np.ndarray  # bands × texts, uint64 band keys


_NO_KEYS = np.empty((0, 0), dtype=np.uint64)


class NearDupIndex:
    """Texts under keys; query() returns, per text, the indexed texts most similar to it.

    `shingle`: words per shingle. Five by default: the POLLUX paper's footnote recalls that
    Russian academic practice treats 5–7 consecutive words taken from a source as plagiarism,
    so a shared 5-gram is the smallest unit of copying that counts. A text shorter than
    `shingle` words is one shingle of all its words (it matches only the same short text); a
    text without words matches nothing.

    `num_perm` MinHash rows, banded into `bands` bands of num_perm // bands rows; by default the
    bands are chosen by `lsh_params` so that a pair at Jaccard `threshold` is a candidate with
    probability ≥ 0.99 (128 rows at 0.5: 42 bands of 3). Candidates are then verified with the
    exact Jaccard of their shingle sets: a reported similarity is exact; a pair below the
    threshold is found with lower probability (0.68 at 0.3), and never reported wrongly.
    """

    def __init__(
        self,
        num_perm: int = DEFAULT_NUM_PERM,
        bands: int | None = None,
        shingle: int = DEFAULT_SHINGLE,
        threshold: float = DEFAULT_THRESHOLD,
        seed: int = DEFAULT_SEED,
    ) -> None:
        _check_shingle(shingle)
        if num_perm < 1:
            raise ValueError("num_perm must be positive")
        if bands is None:
            bands, rows = lsh_params(num_perm, threshold)
        else:
            if not 1 <= bands <= num_perm:
                raise ValueError(f"bands must be from 1 to num_perm ({num_perm}), not {bands}")
            rows = num_perm // bands
        self.num_perm, self.bands, self.rows = num_perm, bands, rows
        self.shingle, self.threshold, self.seed = shingle, threshold, seed
        self._keys: list[Hashable] = []
        self._position: dict[Hashable, int] = {}
        # Per document: its chunk and its place in it.
        self._chunks: list[_Chunk] = []
        self._chunk_of = np.empty(0, dtype=np.int32)
        self._local = np.empty(0, dtype=np.int32)
        # Documents without shingles (no words) are in no bucket: their all-ones signatures
        # would otherwise all collide.
        self._empty = np.empty(0, dtype=bool)
        # Per band: all documents' keys sorted, and the document of each: an LSH bucket is a
        # searchsorted range (a Python dict of lists would take ~100 bytes per document and
        # band). Chunks added since the last query wait in _pending.
        self._sorted_keys = np.empty((bands, 0), dtype=np.uint64)
        self._sorted_docs = np.empty((bands, 0), dtype=np.int32)
        self._pending: list[tuple[int, np.ndarray]] = []  # (first document, band keys)

    def __len__(self) -> int:
        return len(self._keys)

    # -- building ----------------------------------------------------------------------------

    def _prepare_chunk(self, texts: Sequence[str]) -> _Chunk:
        words, counts = _word_hashes(texts)
        hashes, offsets = _shingles_of_tokens(words, counts, self.shingle)
        del words
        signatures = minhash_signatures(hashes, offsets, self.num_perm, self.seed)
        return _Chunk(hashes, offsets, signatures, _band_keys(signatures, self.bands, self.rows))

    def _prepare(self, texts: Sequence[str]) -> list[_Chunk]:
        # One chunk at a time. Two threads over chunks (numpy releases the GIL) measured no
        # faster on the shared 2-core VM: normalization holds the GIL, and so do numpy's small
        # steps between its loops.
        return [self._prepare_chunk(texts[lo:hi]) for lo, hi in _chunks(texts)]

    def _check_keys(self, keys: Sequence[Hashable], texts: Sequence[str]) -> None:
        if len(keys) != len(texts):
            raise ValueError(f"{len(keys)} keys for {len(texts)} texts")
        if len(set(keys)) != len(keys):
            raise ValueError("keys repeat")
        for key in keys:
            if key in self._position:
                raise ValueError(f"key {key!r} is already in the index")

    def _store(self, keys: Sequence[Hashable], chunks: list[_Chunk]) -> np.ndarray:
        base = len(self._keys)
        self._position.update(zip(keys, range(base, base + len(keys)), strict=True))
        self._keys.extend(keys)
        first = base
        chunk_of, local, empty = [self._chunk_of], [self._local], [self._empty]
        for chunk in chunks:
            size = len(chunk.offsets) - 1
            chunk_of.append(np.full(size, len(self._chunks), dtype=np.int32))
            local.append(np.arange(size, dtype=np.int32))
            empty.append(chunk.offsets[1:] == chunk.offsets[:-1])
            # The band keys live on in the sorted tables only (34 MB per 100,000 texts).
            self._chunks.append(chunk._replace(keys=_NO_KEYS))
            self._pending.append((first, chunk.keys))
            first += size
        self._chunk_of = np.concatenate(chunk_of)
        self._local = np.concatenate(local)
        self._empty = np.concatenate(empty)
        return np.arange(base, base + len(keys))

    def add(self, keys: Sequence[Hashable], texts: Sequence[str]) -> None:
        """Index `texts` under `keys` (one each, distinct, new to the index)."""
        self._check_keys(keys, texts)
        self._store(keys, self._prepare(texts))

    def _buckets(self) -> tuple[np.ndarray, np.ndarray]:
        """The sorted band tables, with the chunks added since the last query merged in."""
        if self._pending:
            fresh_keys, fresh_docs = [], []
            for first, pending in self._pending:
                keep = ~self._empty[first : first + pending.shape[1]]
                fresh_keys.append(pending[:, keep])
                fresh_docs.append(first + np.flatnonzero(keep).astype(np.int32))
            new_docs = np.concatenate(fresh_docs)
            width = self._sorted_keys.shape[1] + len(new_docs)
            keys = np.empty((self.bands, width), dtype=np.uint64)
            docs = np.empty((self.bands, width), dtype=np.int32)
            # Band by band: the sort's temporaries are one band's (a stable sort keeps the
            # documents of a bucket in the order they were added).
            for band in range(self.bands):
                merged = np.concatenate(
                    [self._sorted_keys[band]] + [part[band] for part in fresh_keys]
                )
                order = np.argsort(merged, kind="stable")
                keys[band] = merged[order]
                docs[band] = np.concatenate([self._sorted_docs[band], new_docs])[order]
            self._sorted_keys, self._sorted_docs = keys, docs
            self._pending = []
        return self._sorted_keys, self._sorted_docs

    # -- querying ----------------------------------------------------------------------------

    def query(
        self,
        texts: Sequence[str],
        *,
        top: int | None = 5,
        min_similarity: float = 0.3,
        exclude_self_keys: Sequence[Hashable | None] | None = None,
    ) -> list[list[Match]]:
        """Per text, the indexed texts with exact Jaccard ≥ `min_similarity` among the LSH
        candidates, most similar first (ties in the order they were added), at most `top` of
        them (None: all). `exclude_self_keys[i]`, if given and not None, is left out of text
        i's matches (the text itself, when it is also in the index)."""
        if exclude_self_keys is not None and len(exclude_self_keys) != len(texts):
            raise ValueError(f"{len(exclude_self_keys)} exclude_self_keys for {len(texts)} texts")
        skip = np.full(len(texts), -1, dtype=np.int64)
        for i, key in enumerate(exclude_self_keys or ()):
            if key is not None and key in self._position:
                skip[i] = self._position[key]
        return self._matches(self._prepare(texts), skip, top, min_similarity)

    def add_and_query(
        self,
        keys: Sequence[Hashable],
        texts: Sequence[str],
        *,
        top: int | None = 5,
        min_similarity: float = 0.3,
    ) -> list[list[Match]]:
        """add(keys, texts), then query(texts, exclude_self_keys=keys), tokenizing and hashing
        the texts once: the new texts are matched against the index and against each other."""
        self._check_keys(keys, texts)
        chunks = self._prepare(texts)
        positions = self._store(keys, chunks)
        return self._matches(chunks, positions, top, min_similarity)

    def _candidates(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query, document) pairs that share at least one band key, each pair once, sorted."""
        sorted_keys, sorted_docs = self._buckets()
        queries = np.arange(keys.shape[1], dtype=np.int64)
        pairs: list[np.ndarray] = []
        total = len(self._keys)
        for band in range(self.bands):
            table = sorted_keys[band]
            lo = np.searchsorted(table, keys[band], side="left")
            size = np.searchsorted(table, keys[band], side="right") - lo
            if not size.any():
                continue
            # Expand each query's bucket range [lo, lo + size) into its entries, vectorized.
            ends = np.cumsum(size)
            within = np.arange(int(ends[-1])) - np.repeat(ends - size, size)
            docs = sorted_docs[band][np.repeat(lo, size) + within]
            pairs.append(np.repeat(queries, size) * total + docs)
        if not pairs:
            none = np.empty(0, dtype=np.int64)
            return none, none
        unique = np.unique(np.concatenate(pairs))
        return unique // total, unique % total

    def _shingle_set(self, doc: int) -> np.ndarray:
        chunk = self._chunks[int(self._chunk_of[doc])]
        at = int(self._local[doc])
        return np.unique(chunk.hashes[chunk.offsets[at] : chunk.offsets[at + 1]])

    def _matches(
        self, chunks: list[_Chunk], skip: np.ndarray, top: int | None, min_similarity: float
    ) -> list[list[Match]]:
        keys = np.concatenate([chunk.keys for chunk in chunks], axis=1) if chunks else None
        if keys is None:
            return []
        # Query text → (chunk, place in it), for its shingles.
        sizes = [len(chunk.offsets) - 1 for chunk in chunks]
        chunk_of = np.repeat(np.arange(len(chunks)), sizes)
        local = np.arange(len(chunk_of)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        empty = np.concatenate([chunk.offsets[1:] == chunk.offsets[:-1] for chunk in chunks])
        found: list[list[tuple[float, int]]] = [[] for _ in range(keys.shape[1])]
        queries, docs = self._candidates(keys)
        current = -1
        mine = np.empty(0, dtype=np.uint64)
        for q, doc in zip(queries.tolist(), docs.tolist(), strict=True):
            if doc == skip[q] or empty[q]:
                continue
            if q != current:
                current = q
                chunk, at = chunks[int(chunk_of[q])], int(local[q])
                mine = np.unique(chunk.hashes[chunk.offsets[at] : chunk.offsets[at + 1]])
            theirs = self._shingle_set(doc)
            shared = len(np.intersect1d(mine, theirs, assume_unique=True))
            similarity = shared / (len(mine) + len(theirs) - shared)
            if similarity >= min_similarity:
                found[q].append((similarity, doc))
        result = []
        for matches in found:
            matches.sort(key=lambda m: (-m[0], m[1]))
            result.append([Match(self._keys[doc], sim) for sim, doc in matches[:top]])
        return result

    def estimated_similarity(self, key_a: Hashable, key_b: Hashable) -> float:
        """The MinHash estimate of two indexed texts' Jaccard: the share of signature rows in
        which they agree (standard error about √(J(1 − J) / num_perm), 0.044 at J = 0.5); 0 for
        a text without words."""
        a, b = self._position[key_a], self._position[key_b]
        if self._empty[a] or self._empty[b]:
            return 0.0
        row_a = self._chunks[int(self._chunk_of[a])].signatures[:, int(self._local[a])]
        row_b = self._chunks[int(self._chunk_of[b])].signatures[:, int(self._local[b])]
        return float(np.mean(row_a == row_b))


def expected_candidate_probability(similarity: float, bands: int, rows: int) -> float:
    """P(a pair at this Jaccard shares a band) = 1 − (1 − J^rows)^bands: the LSH S-curve."""
    return 1.0 - math.pow(1.0 - similarity**rows, bands)
