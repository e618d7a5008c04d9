"""Near-duplicate search for instruction originality (#15).

    python bench/run.py originality --scale full

Data (synthetic, seeded, built before timing): 100,000 existing texts and 2,100 new ones of
POLLUX instruction lengths: word counts lognormal with median 120 and σ = 0.975, so that about
1.6 % of the texts exceed 7,000 characters; Russian-looking words (consonant–vowel syllables,
Russian endings, "ё" included) from a synthetic vocabulary of 50,000 words drawn by Zipf's law
(frequency ∝ 1 / rank), in sentences with capitals, commas and full stops.

Planted near-duplicates: 200 of the new texts are edited copies, 160 of distinct existing texts
and 40 of distinct unplanted new texts. A copy has 5–15 % of its words (uniformly drawn rate)
edited in runs of 1–3 consecutive words, each run replaced, inserted or deleted with equal
chance, as someone rewording a borrowed text would; and a few "е" written "ё" and some capitals
changed, which the normalization must undo. A planted pair is (copy, its source); its true
similarity is the exact Jaccard of the two sets of 5-word shingles, computed with Python sets
(untimed).

Recall, the figure on the last line: the share of planted pairs with true Jaccard ≥ 0.5 (the
index's threshold: the similarity at which it promises to find a pair, with probability ≥ 0.99
each) whose source is among the copy's reported matches (top 5, similarity ≥ 0.3) with exactly
the true similarity. Pairs planted below 0.5 (heavier edits) are counted separately: the LSH
finds them with falling probability (0.68 at 0.3), which the output shows.

Timed (the last line's value): lib.neardup, from the raw strings: NearDupIndex over the existing
texts (tokenization, shingles, MinHash, LSH tables), then add_and_query of the new texts (they
join the index and are matched against it and each other; exact Jaccard of the candidates).
Baseline, same run: exact pairwise Jaccard of Python sets of shingle tuples, every new text
against every other text. Building the sets of all 102,100 texts is measured in full; comparing
is measured for a subsample of the new texts against all texts and scaled linearly to all new
texts (the output prints the subsample and the factor); its matches are checked to agree with the
fast path's on the subsample. datasketch, beside it: the library's MinHash (MinHash.bulk, its
default affine32 scheme over SHA-1 of each shingle) and MinHashLSH with the same bands and rows,
candidates verified by exact Jaccard of Python sets; its index is built over a subsample of the
existing texts and scaled linearly, its queries are all the new texts (stated in the output).
Memory: the process's resident size before and after the timed part, and its peak during it
(VmHWM, reset before; the texts themselves are most of the "before").
"""

from __future__ import annotations

import gc
import time
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path

import numpy as np

from bench.common import line
from lib.neardup import Match, NearDupIndex, normalize_words

SCALES: dict[str, dict[str, int]] = {
    "full": {
        "existing": 100_000,
        "new": 2_100,
        "planted": 200,
        "from_new": 40,
        "baseline_queries": 20,
        "datasketch_existing": 20_000,
    },
    "small": {
        "existing": 10_000,
        "new": 300,
        "planted": 30,
        "from_new": 6,
        "baseline_queries": 10,
        "datasketch_existing": 10_000,
    },
}
SEED = 20261127
VOCABULARY = 50_000
MEDIAN_WORDS = 120
# Calibrated on this generator (about 7.2 characters a word with its space and punctuation):
# P(words > 970) = P(z > ln(970 / 120) / 0.975 = 2.14) = 1.6 %; the output prints the share.
SIGMA = 0.975
LONG_CHARS = 7_000
SHINGLE = 5
MIN_SIMILARITY = 0.3
TOP = 5
# A text's key in the index: ("existing", i) or ("new", i).
Key = tuple[str, int]
CONSONANTS = "бвгджзклмнпрстфхцчшщ"
VOWELS = "аеиоуыэюяё"
ENDINGS = ["", "ый", "ая", "ое", "ие", "ого", "ать", "ить", "ет", "ют", "ами", "ов", "ей", "ость"]


# -- data ---------------------------------------------------------------------------------------


def make_vocabulary(rng: np.random.Generator, size: int = VOCABULARY) -> list[str]:
    """Distinct Russian-looking words; frequent (low-rank) words are short, as in Russian."""
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        rank = np.arange(len(words), len(words) + size)
        syllables = 1 + np.minimum(
            4, rng.poisson(0.6 + 1.6 * np.minimum(1, np.log10(rank + 2) / 4))
        )
        letters = rng.integers(0, 200, size=(size, 10))
        endings = rng.integers(0, len(ENDINGS), size)
        for k in range(size):
            word = "".join(
                CONSONANTS[letters[k, 2 * s] % len(CONSONANTS)]
                + VOWELS[letters[k, 2 * s + 1] % len(VOWELS)]
                for s in range(int(syllables[k]))
            )
            if rank[k] > 50:
                word += ENDINGS[endings[k]]
            if word not in seen:
                seen.add(word)
                words.append(word)
                if len(words) == size:
                    break
    return words


class Writer:
    """Text of Zipf-distributed words with sentence capitals, commas and full stops."""

    def __init__(self, rng: np.random.Generator, vocabulary: list[str]) -> None:
        self.rng = rng
        self.vocabulary = vocabulary
        weights = 1.0 / np.arange(1, len(vocabulary) + 1)
        self.cdf = np.cumsum(weights / weights.sum())
        # Forms of every word: plain, Capitalized, each bare, with a comma, with a full stop.
        forms = []
        for tail in ("", ",", "."):
            forms += [w + tail for w in vocabulary]
            forms += [w.capitalize() + tail for w in vocabulary]
        self.forms = np.array(forms, dtype=object)

    def word_ids(self, count: int) -> np.ndarray:
        ids = np.searchsorted(self.cdf, self.rng.random(count))
        return np.minimum(ids, len(self.vocabulary) - 1)

    def texts(self, count: int) -> list[str]:
        lengths = np.maximum(
            1, np.rint(self.rng.lognormal(np.log(MEDIAN_WORDS), SIGMA, count)).astype(np.int64)
        )
        out: list[str] = []
        for lo in range(0, count, 5000):
            part = lengths[lo : lo + 5000]
            ends = np.cumsum(part)
            total = int(ends[-1])
            ids = self.word_ids(total)
            stop = self.rng.random(total) < 1 / 12
            stop[ends - 1] = True
            capital = np.roll(stop, 1)
            capital[ends - part] = True
            comma = (self.rng.random(total) < 0.07) & ~stop
            form = capital.astype(np.int64) + 2 * (comma + 2 * stop)
            tokens = self.forms[ids + len(self.vocabulary) * form].tolist()
            for start, end in zip((ends - part).tolist(), ends.tolist(), strict=True):
                out.append(" ".join(tokens[start:end]))
        return out

    def perturb(self, text: str) -> str:
        """An edited copy: 5–15 % of the words in runs of 1–3 replaced, inserted or deleted,
        plus changes the normalization undoes ("е" → "ё", capitals)."""
        rng = self.rng
        tokens = text.split(" ")
        budget = max(1, round(rng.uniform(0.05, 0.15) * len(tokens)))
        while budget > 0:
            run = min(budget, int(rng.integers(1, 4)))
            budget -= run
            operation = int(rng.integers(3))
            fresh = [self.vocabulary[i] for i in self.word_ids(run).tolist()]
            if operation == 1:  # insert
                at = int(rng.integers(len(tokens) + 1))
                tokens[at:at] = fresh
                continue
            at = int(rng.integers(len(tokens)))
            if operation == 0:  # replace
                tokens[at : at + run] = fresh
            elif len(tokens) > run:  # delete (a copy keeps at least one word)
                del tokens[at : at + run]
        for at in rng.choice(len(tokens), size=max(1, len(tokens) // 30)).tolist():
            word = tokens[at].replace("е", "ё", 1)
            tokens[at] = word.upper() if rng.random() < 0.2 else word
        return " ".join(tokens)


class Workload:
    def __init__(self, cfg: dict[str, int]) -> None:
        rng = np.random.default_rng(SEED)
        writer = Writer(rng, make_vocabulary(rng))
        self.existing = writer.texts(cfg["existing"])
        self.new = writer.texts(cfg["new"])
        slots = rng.choice(cfg["new"], size=cfg["planted"], replace=False)
        from_existing = cfg["planted"] - cfg["from_new"]
        unplanted = np.setdiff1d(np.arange(cfg["new"]), slots)
        sources: list[Key] = [
            ("existing", int(s))
            for s in rng.choice(cfg["existing"], size=from_existing, replace=False)
        ]
        sources += [("new", int(s)) for s in rng.choice(unplanted, cfg["from_new"], replace=False)]
        # (copy's position among the new texts, source key), the copies written in order.
        self.planted: list[tuple[int, Key]] = []
        for slot, source in zip(slots.tolist(), sources, strict=True):
            kind, at = source
            original = self.existing[at] if kind == "existing" else self.new[at]
            self.new[slot] = writer.perturb(original)
            self.planted.append((slot, source))
        self.truth = {
            (slot, source): jaccard(shingle_set(self.new[slot]), shingle_set(self.text(source)))
            for slot, source in self.planted
        }

    def text(self, key: Key) -> str:
        kind, at = key
        return str(self.existing[at] if kind == "existing" else self.new[at])

    def keys(self) -> tuple[list[Key], list[Key]]:
        existing: list[Key] = [("existing", i) for i in range(len(self.existing))]
        return existing, [("new", i) for i in range(len(self.new))]


def shingle_set(text: str, n: int = SHINGLE) -> set[tuple[str, ...]]:
    """The baseline's shingles: tuples of n consecutive words (one tuple for a shorter text)."""
    words = normalize_words(text)
    if len(words) < n:
        return {tuple(words)} if words else set()
    return set(zip(*(words[k:] for k in range(n)), strict=False))


def jaccard(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> float:
    shared = len(a & b)
    union = len(a) + len(b) - shared
    return shared / union if union else 0.0


# -- the three ways ----------------------------------------------------------------------------


def fast(work: Workload) -> tuple[NearDupIndex, list[list[Match]]]:
    existing_keys, new_keys = work.keys()
    index = NearDupIndex(shingle=SHINGLE)
    index.add(existing_keys, work.existing)
    matches = index.add_and_query(new_keys, work.new, top=TOP, min_similarity=MIN_SIMILARITY)
    return index, matches


def _chunks(work: Workload, size: int = 5000) -> Iterator[list[tuple[Key, str]]]:
    existing_keys, new_keys = work.keys()
    keyed = list(zip(existing_keys + new_keys, work.existing + work.new, strict=True))
    for lo in range(0, len(keyed), size):
        yield keyed[lo : lo + size]


def baseline(work: Workload, queries: list[int]) -> tuple[float, float, list[list[Match]]]:
    """Every sampled new text against every other text by exact Jaccard of shingle sets.
    Returns (seconds building all texts' sets, seconds comparing the sampled queries, matches).
    The sets are built chunk by chunk and dropped: all 102,100 at once would take gigabytes."""
    mine = [shingle_set(work.new[q]) for q in queries]
    found: list[list[tuple[float, int, Key]]] = [[] for _ in queries]
    t_build = t_compare = 0.0
    order = 0
    for chunk in _chunks(work):
        started = time.perf_counter()
        sets = [(key, shingle_set(text)) for key, text in chunk]
        t_build += time.perf_counter() - started
        started = time.perf_counter()
        for i, (q, a) in enumerate(zip(queries, mine, strict=True)):
            if not a:
                continue
            for key, b in sets:
                if not b or key == ("new", q):
                    continue
                shared = len(a & b)
                similarity = shared / (len(a) + len(b) - shared)
                if similarity >= MIN_SIMILARITY:
                    found[i].append((similarity, order, key))
                order += 1
        t_compare += time.perf_counter() - started
    result = []
    for matches in found:
        matches.sort(key=lambda m: (-m[0], m[1]))
        result.append([Match(key, sim) for sim, _order, key in matches[:TOP]])
    return t_build, t_compare, result


def with_datasketch(
    work: Workload, existing: int, bands: int, rows: int
) -> tuple[float, float, list[list[Key]]]:
    """datasketch's MinHash + MinHashLSH over the first `existing` existing texts and all new
    texts, new texts queried, candidates verified by exact Jaccard. Returns (seconds indexing
    the existing texts, seconds adding and querying the new texts, matched keys per new text)."""
    from datasketch import MinHash, MinHashLSH

    def shingles(text: str) -> list[bytes]:
        words = normalize_words(text)
        if len(words) < SHINGLE:
            return [" ".join(words).encode()] if words else []
        return [" ".join(words[k : k + SHINGLE]).encode() for k in range(len(words) - SHINGLE + 1)]

    def sketch(texts: list[str]) -> tuple[list[MinHash], set[int]]:
        empty: set[int] = set()  # a text without words is in no bucket, as in lib.neardup

        def each() -> Iterator[list[bytes]]:
            for i, text in enumerate(texts):
                values = shingles(text)
                if not values:
                    empty.add(i)
                yield values

        return MinHash.bulk(each(), num_perm=128), empty

    def insert(keys: list[Key], sketches: list[MinHash], empty: set[int]) -> None:
        with lsh.insertion_session() as session:
            for i, (key, value) in enumerate(zip(keys, sketches, strict=True)):
                if i not in empty:
                    session.insert(key, value)

    existing_keys, new_keys = work.keys()
    started = time.perf_counter()
    lsh = MinHashLSH(num_perm=128, params=(bands, rows))
    sketches, empty = sketch(work.existing[:existing])
    insert(existing_keys[:existing], sketches, empty)
    t_index = time.perf_counter() - started
    del sketches
    started = time.perf_counter()
    new_sketches, empty = sketch(work.new)
    insert(new_keys, new_sketches, empty)
    matched: list[list[Key]] = []
    for i, (key, text, value) in enumerate(zip(new_keys, work.new, new_sketches, strict=True)):
        mine = shingle_set(text)
        scored = []
        for other in [] if i in empty else lsh.query(value):
            if other != key:
                similarity = jaccard(mine, shingle_set(work.text(other)))
                if similarity >= MIN_SIMILARITY:
                    scored.append((-similarity, str(other), other))
        matched.append([other for _s, _o, other in sorted(scored)[:TOP]])
    return t_index, time.perf_counter() - started, matched


# -- measuring ----------------------------------------------------------------------------------


def _memory_mb() -> tuple[float, float]:
    """(current, peak) resident MB of this process since the last _reset_peak()."""
    fields = dict(
        row.split(":", 1)
        for row in Path("/proc/self/status").read_text().splitlines()
        if ":" in row
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def _reset_peak() -> None:
    # Linux: writing 5 to clear_refs resets VmHWM to the current RSS.
    Path("/proc/self/clear_refs").write_text("5")


def recall(
    work: Workload, found: Sequence[Sequence[Hashable]], pairs: Sequence[tuple[int, Key]]
) -> tuple[int, int]:
    hits = sum(1 for slot, source in pairs if source in found[slot])
    return hits, len(pairs)


def main(scale: str) -> str:
    cfg = SCALES["full" if scale == "full" else "small"]
    started = time.perf_counter()
    work = Workload(cfg)
    everything = work.existing + work.new
    words = np.array([len(t.split(" ")) for t in everything])
    chars = np.array([len(t) for t in everything])
    print(
        f"texts: {len(work.existing)} existing + {len(work.new)} new, {words.sum():,} words, "
        f"median {np.median(words):.0f} words, {100 * np.mean(chars > LONG_CHARS):.2f} % over "
        f"{LONG_CHARS:,} characters (longest {chars.max():,}); generated in "
        f"{time.perf_counter() - started:.0f} s",
        flush=True,
    )
    del everything, words, chars
    truths = np.array(list(work.truth.values()))
    print(
        f"planted: {len(work.planted)} copies ({cfg['from_new']} of new texts); true Jaccard "
        f"≥ 0.5: {np.sum(truths >= 0.5)}, 0.3–0.5: {np.sum((truths >= 0.3) & (truths < 0.5))}, "
        f"< 0.3: {np.sum(truths < 0.3)} (min {truths.min():.2f}, median {np.median(truths):.2f})",
        flush=True,
    )
    # The texts are long-lived strings, out of the cyclic collector's way for all three ways.
    gc.collect()
    gc.freeze()

    rss_before, _ = _memory_mb()
    _reset_peak()
    t0 = time.perf_counter()
    index, matches = fast(work)
    t_fast = time.perf_counter() - t0
    rss_after, peak = _memory_mb()
    print(
        f"fast: {t_fast:.2f} s; index {index.bands} bands × {index.rows} rows of "
        f"{index.num_perm} MinHash rows, {SHINGLE}-word shingles; resident {rss_before:.0f} MB "
        f"with the texts → {rss_after:.0f} MB with the index (peak {peak:.0f} MB)",
        flush=True,
    )
    found = [[m.key for m in row] for row in matches]
    exact = all(
        any(m.key == source and abs(m.similarity - truth) < 1e-12 for m in matches[slot])
        for (slot, source), truth in work.truth.items()
        if source in found[slot]
    )
    assert exact, "a planted pair was reported with a similarity other than its exact Jaccard"
    strong = [pair for pair, truth in work.truth.items() if truth >= 0.5]
    middle = [pair for pair, truth in work.truth.items() if 0.3 <= truth < 0.5]
    hits, total = recall(work, found, strong)
    hits_mid, total_mid = recall(work, found, middle)
    reported = sum(len(row) for row in matches)
    # A copy of a new text and its source find each other: both directions are planted.
    planted_keys = set(work.planted)
    for slot, (kind, at) in work.planted:
        if kind == "new":
            planted_keys.add((at, ("new", slot)))
    other = sum(1 for q, row in enumerate(matches) for m in row if (q, m.key) not in planted_keys)
    recall_strong = hits / total
    print(
        f"recall: {hits}/{total} planted pairs at Jaccard ≥ 0.5 = {recall_strong:.3f}; "
        f"{hits_mid}/{total_mid} at 0.3–0.5; {reported} matches reported, {other} of them not a "
        "planted pair (or its reverse)",
        flush=True,
    )

    rng = np.random.default_rng(SEED + 1)
    half = cfg["baseline_queries"] // 2
    queries = sorted(
        rng.choice([slot for slot, _s in work.planted], half, replace=False).tolist()
        + rng.choice(
            np.setdiff1d(np.arange(len(work.new)), [s for s, _ in work.planted]),
            cfg["baseline_queries"] - half,
            replace=False,
        ).tolist()
    )
    t_build, t_compare, slow_matches = baseline(work, queries)
    factor = len(work.new) / len(queries)
    t_slow = t_build + t_compare * factor
    agree = 0
    for q, slow_row in zip(queries, slow_matches, strict=True):
        fast_row = {m.key: m.similarity for m in matches[q]}
        # Every match the exhaustive search finds at ≥ 0.5 is found, with the same similarity,
        # and nothing the fast path reports is missing from the exhaustive top.
        ok = all(
            m.key in fast_row and abs(fast_row[m.key] - m.similarity) < 1e-12
            for m in slow_row
            if m.similarity >= 0.5
        ) and all(
            any(m.key == key and abs(m.similarity - sim) < 1e-12 for m in slow_row)
            for key, sim in fast_row.items()
        )
        agree += ok
    print(
        f"baseline: sets of all {len(work.existing) + len(work.new)} texts built in "
        f"{t_build:.1f} s; {len(queries)} queries compared with all texts in {t_compare:.2f} s, "
        f"scaled ×{factor:.0f} to {len(work.new)} queries: {t_slow:.0f} s; matches agree with "
        f"the fast path on {agree}/{len(queries)} sampled queries",
        flush=True,
    )

    sub = min(cfg["datasketch_existing"], len(work.existing))
    t_ds_index, t_ds_query, ds_found = with_datasketch(work, sub, index.bands, index.rows)
    ds_factor = len(work.existing) / sub
    t_ds = t_ds_index * ds_factor + t_ds_query
    reachable = [(slot, source) for slot, source in strong if source[0] == "new" or source[1] < sub]
    ds_hits, ds_total = recall(work, ds_found, reachable)
    ours_hits, _ = recall(work, found, reachable)
    print(
        f"datasketch: index over {sub} existing texts in {t_ds_index:.1f} s, scaled "
        f"×{ds_factor:.0f}; {len(work.new)} new texts added and queried in {t_ds_query:.1f} s: "
        f"{t_ds:.0f} s; recall on the {ds_total} planted pairs at ≥ 0.5 it indexes: "
        f"{ds_hits}/{ds_total} (lib.neardup: {ours_hits}/{ds_total})",
        flush=True,
    )
    return (
        line("originality", t_fast, "s", t_slow, t_slow / t_fast)[:-1]
        + f"; recall {recall_strong:.2f}; datasketch {t_ds:.3g} s)"
    )
