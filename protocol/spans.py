"""Span markup comparison by the ПРО//ЧТЕНИЕ «Грамматика» regulations (Appendix 1 and Appendix 2,
section 3): the optimal correspondence between two markups of one text and the pairwise
accuracy metrics M2–M6, the relative accuracies and СТАР.

Pure functions over plain values (no Django): the markup tool, the comparison view, the
automatic checking of participants' markups and the benchmark all call these.

Choices where the regulations are silent (documented in docs/spans.md as well):

- **Spans in the loss** are sets of character positions [start, end): the loss L uses the
  Jaccard distance of those sets (the regulations define J over "fragments", and B, E are
  positions); M5 alone is word-level, as the regulations say.
- **Whole-text errors** (no span) are fragments with `start = end = None`: two of them coincide
  (J = 0, same start), and one never intersects a located fragment (J = 1).
- **Ties**: several correspondences may reach the same minimal loss Q (one span marked with
  two codes, each pair costing 1), and the metrics differ between them. Among the optimal ones
  the correspondence with the most pairs of equal codes is taken, then with the most equal
  comments (M4's comparison), then with the most equal corrections (M6's); what is still tied
  is decided by the solver over the fragments in a canonical order (sorted by every field), so
  the result depends on the fragments, never on their order, and M(Y, X) uses M(X, Y)'s
  correspondence transposed. The optimum is solved exactly (Hungarian algorithm, scipy's
  `linear_sum_assignment`); tests compare Q with the regulations' exhaustive search and the
  tie-break with every matching of small cases.
- **Empty markups**: when X and Y are both empty every metric is 100 % (nothing to find, nothing
  missed); when only one is empty, M2–M6 are 0 % except where a metric's own denominator is
  empty (below).
- **M4** compares the subtype, and the comment where one is written (a written comment overrides
  the subtype, Appendix 3, 1.2): equal when the normalised comments are equal (case, spaces and
  final punctuation ignored) or, without comments, when the subtypes are equal, both absent
  included. A true paraphrase judgement needs a model; this exact rule undercounts paraphrases
  and is stated as such.
- **M5** counts words (runs of letters, digits and «_»), as the regulations say; a span holds
  every word it touches, even in part, and a whole-text fragment every word of the text. A pair
  whose two spans hold no word at all (punctuation only, an empty span) falls back to the
  Jaccard measure over characters (else it would be 0/0).
- **M6**'s denominator is the fragments of X with a correction (its own wording: "fragments of X
  that have a correction and a matched fragment with the same correction"); when X has no
  correction M6 is 100 % if Y has none either and 0 % otherwise (every correction was missed).
- **Inter-expert agreement** in the relative accuracies is over ordered pairs of distinct
  experts (M is not symmetric); zero agreement leaves the relative accuracy undefined (None).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from itertools import permutations
from math import fsum
from statistics import fmean
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

# Our choice of weights: the regulations fix only w1 = w7 = 0 (M1 and M7 are not used) and call
# the set of weights a parameter of the method (Appendix 1); we weight M2..M6 equally.
DEFAULT_WEIGHTS: Mapping[str, float] = {"M2": 1.0, "M3": 1.0, "M4": 1.0, "M5": 1.0, "M6": 1.0}
METRICS = ("M2", "M3", "M4", "M5", "M6")

# Latin letters that look like Cyrillic ones: a code typed with a Latin P is the Cyrillic Р.
_HOMOGLYPHS = str.maketrans("ABCEHKMOPTXY", "АВСЕНКМОРТХУ")


@lru_cache(maxsize=4096)
def normalize_code(code: str) -> str:
    """A code as compared: case-insensitive, Latin look-alikes read as Cyrillic letters."""
    return " ".join(code.strip().upper().translate(_HOMOGLYPHS).split())


@dataclass(frozen=True)
class Fragment:
    """One fragment of a markup: a span [start, end) of the text (None: the whole text), its
    code (error type or meaning block), subtype, comment and correction; its group (`error` or
    `meaning`), the expert's explanation and the tag linking fragments of one multi-span error
    (Appendix 3, 1.3 and section 2). The metrics read only the span, code, subtype, comment and
    correction."""

    start: int | None
    end: int | None
    code: str
    subtype: str = ""
    comment: str = ""
    correction: str = ""
    group: str = "error"
    explanation: str = ""
    tag: str = ""

    @property
    def located(self) -> bool:
        return self.start is not None and self.end is not None


def jaccard_distance(x: Fragment, y: Fragment) -> float:
    """J = 1 − |x ∩ y| / |x ∪ y| over character positions (see the module's note)."""
    if not x.located or not y.located:
        return 0.0 if not x.located and not y.located else 1.0
    assert x.start is not None and x.end is not None and y.start is not None and y.end is not None
    inter = max(0, min(x.end, y.end) - max(x.start, y.start))
    union = (x.end - x.start) + (y.end - y.start) - inter
    if union == 0:
        # Two empty spans: the same point coincides, different points do not intersect.
        return 0.0 if x.start == y.start else 1.0
    return 1.0 - inter / union


def loss(x: Fragment, y: Fragment) -> float:
    """L = J + [J = 1] + [B_x ≠ B_y] + [C_x ≠ C_y] (Appendix 2, section 3)."""
    j = jaccard_distance(x, y)
    return (
        j
        + (1.0 if j == 1.0 else 0.0)
        + (1.0 if x.start != y.start else 0.0)
        + (1.0 if normalize_code(x.code) != normalize_code(y.code) else 0.0)
    )


class Markup(Sequence[Fragment]):
    """A markup prepared for comparison: its fragments with their starts, ends and normalised
    codes as arrays, built once and shared by every pair the markup is compared in. Every
    function here takes a plain list of fragments as well (prepared on the way in)."""

    __slots__ = (
        "_canonical",
        "codes",
        "comment_keys",
        "corrections",
        "ends",
        "fragments",
        "starts",
    )

    def __init__(self, fragments: Sequence[Fragment]) -> None:
        self.fragments = tuple(fragments)
        n = len(self.fragments)
        # A whole-text fragment is (−1, −1): it then coincides with another such one (an empty
        # union at the same start: J = 0) and intersects no located fragment (J = 1), as
        # `loss` says.
        # A whole-text fragment is (−1, −1): it then coincides with another such one (an empty
        # union at the same start: J = 0) and intersects no located fragment (J = 1), as
        # `loss` says.
        starts = [-1 if f.start is None else f.start for f in self.fragments]
        ends = [-1 if f.end is None else f.end for f in self.fragments]
        codes = [normalize_code(f.code) for f in self.fragments]
        # What M4 and M6 compare, normalised once per fragment: a pair then agrees when its two
        # keys are equal (M4: a written comment overrides the subtype).
        comment_keys = [_comment_key(f) for f in self.fragments]
        corrections = [
            _norm_correction(f.correction) if f.correction else "" for f in self.fragments
        ]
        self.starts = np.array(starts, np.int64)
        self.ends = np.array(ends, np.int64)
        self.codes = np.array(codes or [""])[:n]
        self.comment_keys = np.array(comment_keys or [""])[:n]
        self.corrections = np.array(corrections or [""])[:n]
        self._canonical: tuple[np.ndarray, tuple[tuple[Any, ...], ...]] | None = None

    def canonical(self) -> tuple[np.ndarray, tuple[tuple[Any, ...], ...]]:
        """The canonical order of the fragments (by every field, the compared values first)
        and the markup's key (its fields in that order). A tied correspondence is solved over
        the canonical order, so that it depends on the fragments and never on the order they
        came in; the key orders two markups, to solve a pair in one orientation. Built when a
        pair first needs it."""
        if self._canonical is None:
            f = self.fragments
            fields = list(
                zip(
                    self.starts.tolist(),
                    self.ends.tolist(),
                    self.codes.tolist(),
                    self.comment_keys.tolist(),
                    self.corrections.tolist(),
                    [x.group for x in f],
                    [x.code for x in f],
                    [x.subtype for x in f],
                    [x.comment for x in f],
                    [x.correction for x in f],
                    [x.explanation for x in f],
                    [x.tag for x in f],
                    strict=True,
                )
            )
            order = sorted(range(len(f)), key=fields.__getitem__)
            self._canonical = (np.array(order, np.int64), tuple(fields[i] for i in order))
        return self._canonical

    def __len__(self) -> int:
        return len(self.fragments)

    def __getitem__(self, index: Any) -> Any:
        return self.fragments[index]


def prepared(markup: Sequence[Fragment]) -> Markup:
    return markup if isinstance(markup, Markup) else Markup(markup)


def _jaccard_arrays(bx: Any, ex: Any, by: Any, ey: Any) -> Any:
    """The Jaccard distance, elementwise (broadcast for a matrix, paired for matched pairs)."""
    inter = np.maximum(np.minimum(ex, ey) - np.maximum(bx, by), 0)
    union = (ex - bx) + (ey - by) - inter
    j = 1.0 - inter / np.maximum(union, 1)
    # An empty union (two empty spans, or two whole-text fragments): the same point coincides.
    return np.where(union > 0, j, bx != by)


def loss_matrix(xs: Sequence[Fragment], ys: Sequence[Fragment]) -> np.ndarray:
    """L[i, k] = loss(xs[i], ys[k]) for every pair, computed on arrays (the same formula; a test
    checks it against `loss` on random markups)."""
    x, y = prepared(xs), prepared(ys)
    if not len(x) or not len(y):
        return np.zeros((len(x), len(y)))
    j = _jaccard_arrays(x.starts[:, None], x.ends[:, None], y.starts[None, :], y.ends[None, :])
    return (
        j
        + (j == 1.0)
        + (x.starts[:, None] != y.starts[None, :])
        + (x.codes[:, None] != y.codes[None, :])
    )


def total_loss(L: np.ndarray, pairs: Sequence[tuple[int, int]]) -> float:
    """Q(M) = Σ L over matched pairs + the number of unmatched fragments on both sides."""
    n, m = L.shape
    return float(sum(L[i, k] for i, k in pairs)) + (n - len(pairs)) + (m - len(pairs))


def match(xs: Sequence[Fragment], ys: Sequence[Fragment]) -> list[tuple[int, int]]:
    """The optimal correspondence (pairs of indices into xs and ys, sorted).

    Q(M) = n + m + Σ_{(i,k) ∈ M} (L[i,k] − 2): only pairs with L < 2 lower the loss, so the
    problem is a rectangular assignment on min(L − 2, 0), where a pair assigned at cost 0 is the
    same as no pair and is dropped. (L = 2 never occurs for intersecting fragments: J < 1 makes
    L ∈ [0, 2) ∪ (2, 3), so dropping zero-cost pairs changes no optimum.)
    """
    ix, iy = _match_arrays(prepared(xs), prepared(ys))
    return sorted(zip(ix.tolist(), iy.tolist(), strict=True))


_NO_PAIRS = (np.zeros(0, np.int64), np.zeros(0, np.int64))


def _match_arrays(x: Markup, y: Markup) -> tuple[np.ndarray, np.ndarray]:
    """`match` as two index arrays. When no two candidate pairs (L < 2) share a fragment, the
    optimum is every candidate; otherwise the pair of markups is solved with the tie-break, in
    one orientation, the smaller key first: M(Y, X)'s correspondence is then exactly M(X, Y)'s
    transposed."""
    if not len(x) or not len(y):
        return _NO_PAIRS
    gain = np.minimum(loss_matrix(x, y) - 2.0, 0.0)
    ci, ck = np.nonzero(gain < 0)
    if not len(ci):
        return _NO_PAIRS
    if np.bincount(ci).max() == 1 and np.bincount(ck).max() == 1:
        return ci, ck
    if y.canonical()[1] < x.canonical()[1]:
        iy, ix = _match_canonical(y, x, gain.T)
        return ix, iy
    return _match_canonical(x, y, gain)


# Headroom of the tie-break's costs: integers of float64 are exact below 2**53, and a matching's
# total must stay so for its comparison to be exact.
_EXACT = 2.0**52
# Two matchings whose Q differ by less are equally optimal (Q is a sum of at most a few
# thousand Jaccard distances, each exact to about 1e-16).
_Q_TOLERANCE = 1e-9


def _match_canonical(x: Markup, y: Markup, gain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The optimal correspondence with its tie-break (see the module's note), solved over the
    fragments in canonical order; returns indices into x and y as given.

    Two solves: the plain optimum (Q exact), then the lexicographic one, where a pair costs
    round(S · (L − 2)) · B³ − (code agreement · B² + comment agreement · B + correction
    agreement), B = one more than the most pairs the candidates (L < 2) allow, so that no sum
    of agreements outweighs a step of the loss and more code agreements outweigh any comment
    agreements. Rounding L to the grid 1/S (S as fine as exact float64 integers allow) could, in
    principle, prefer a matching whose Q exceeds the optimum by less than p/S: the
    lexicographic matching is kept only if its Q is the plain optimum's (within
    `_Q_TOLERANCE`), else the plain one stands (still the same for any order of the
    fragments)."""
    xo, yo = x.canonical()[0], y.canonical()[0]
    gain = gain[np.ix_(xo, yo)]
    rows, cols = linear_sum_assignment(gain)
    keep = gain[rows, cols] < 0
    rows, cols = rows[keep], cols[keep]
    ci, ck = np.nonzero(gain < 0)  # the candidate pairs
    most = min(len(np.unique(ci)), len(np.unique(ck)))
    base = float(most + 1)
    scale = np.floor((_EXACT / (most * base**3) - 1.0) / 2.0)
    if scale >= 1.0:
        # Agreement of the candidates only (compared strings, few pairs).
        px, py = xo[ci], yo[ck]
        cx, cy = x.corrections[px], y.corrections[py]
        agreement = np.zeros_like(gain)
        agreement[ci, ck] = (
            (x.codes[px] == y.codes[py]) * base**2
            + (x.comment_keys[px] == y.comment_keys[py]) * base
            + ((cx == cy) & (cx != ""))
        )
        cost = np.rint(gain * scale) * base**3 - agreement
        rows2, cols2 = linear_sum_assignment(cost)
        keep2 = gain[rows2, cols2] < 0
        rows2, cols2 = rows2[keep2], cols2[keep2]
        if fsum(gain[rows2, cols2]) <= fsum(gain[rows, cols]) + _Q_TOLERANCE:
            rows, cols = rows2, cols2
    return xo[rows], yo[cols]


def match_exhaustive(xs: Sequence[Fragment], ys: Sequence[Fragment]) -> list[tuple[int, int]]:
    """The regulations' search (Appendix 2, section 3): pairs with L = 0 are fixed first, then
    every matching of the intersecting pairs is enumerated per connected component, recursively,
    edges with more adjacent edges first. Exponential: the reference for tests and the
    benchmark's baseline, never the platform's path."""
    L = loss_matrix(xs, ys)
    n, m = L.shape
    edges = [(i, k) for i in range(n) for k in range(m) if jaccard_distance(xs[i], ys[k]) < 1.0]
    fixed: list[tuple[int, int]] = []
    used_x: set[int] = set()
    used_y: set[int] = set()
    for i, k in edges:
        # Step 2 moves every L = 0 edge into M; a fragment repeated verbatim would give two such
        # edges at one fragment, so only the first keeps M a matching.
        if L[i, k] == 0.0 and i not in used_x and k not in used_y:
            fixed.append((i, k))
            used_x.add(i)
            used_y.add(k)
    free = [(i, k) for i, k in edges if i not in used_x and k not in used_y]

    def components(graph: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
        parent: dict[tuple[str, int], tuple[str, int]] = {}

        def find(a: tuple[str, int]) -> tuple[str, int]:
            while parent.setdefault(a, a) != a:
                a = parent[a]
            return a

        for i, k in graph:
            parent[find(("x", i))] = find(("y", k))
        groups: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for i, k in graph:
            groups.setdefault(find(("x", i)), []).append((i, k))
        return list(groups.values())

    def search(graph: list[tuple[int, int]]) -> tuple[float, list[tuple[int, int]]]:
        """The best matching of a graph: components are independent (Q is a sum), so each is
        searched alone and their optima are joined; within one, every edge is tried as the
        next pair (most adjacent edges first) and the rest, now free of its two fragments,
        searched again (it may split into smaller components). Returns (Σ (L − 2), pairs)."""
        total, chosen = 0.0, []
        for component in components(graph):
            degree = {
                e: sum(1 for f in component if f != e and (f[0] == e[0] or f[1] == e[1]))
                for e in component
            }
            best_gain, best_pairs = 0.0, []  # no pair at all
            for edge in sorted(component, key=lambda e: -degree[e]):
                i, k = edge
                gain, pairs = search([f for f in component if f[0] != i and f[1] != k])
                gain += L[i, k] - 2.0
                if gain < best_gain:
                    best_gain, best_pairs = gain, [edge, *pairs]
            total += best_gain
            chosen.extend(best_pairs)
        return total, chosen

    return sorted(fixed + search(free)[1])


def match_brute_force(xs: Sequence[Fragment], ys: Sequence[Fragment]) -> list[tuple[int, int]]:
    """Every matching of every size, for tiny cases only: the independent check in tests."""
    L = loss_matrix(xs, ys)
    n, m = L.shape
    best: list[tuple[int, int]] = []
    best_q = total_loss(L, best)
    # Assign each x to a distinct y or to nothing (−1): all matchings.
    options = list(range(m)) + [-1] * n
    seen: set[tuple[int, ...]] = set()
    for choice in permutations(options, n):
        if choice in seen:
            continue
        seen.add(choice)
        pairs = [(i, k) for i, k in enumerate(choice) if k >= 0]
        q = total_loss(L, pairs)
        if q < best_q - 1e-12:
            best, best_q = pairs, q
    return sorted(best)


_WORD = re.compile(r"\w+")


_SPLIT = re.compile(r"(\W+)")


def word_spans(text: str) -> list[tuple[int, int]]:
    """The words of a text (runs of \\w) as character spans (M5 counts words)."""
    return [w.span() for w in _WORD.finditer(text)]


def _word_arrays(text: str) -> tuple[np.ndarray, np.ndarray]:
    """`word_spans` as two arrays, from the split's piece lengths (words and separators
    alternate, starting and ending with a possibly empty word): several times faster than a
    match object per word; a test checks both agree."""
    lengths = np.fromiter(map(len, _SPLIT.split(text)), np.int64)
    ends = np.cumsum(lengths)[::2]
    word_lengths = lengths[::2]
    keep = word_lengths > 0
    return (ends - word_lengths)[keep], ends[keep]


@dataclass(frozen=True)
class Words:
    """A text's words as arrays of their character spans (M5 counts words), built once per
    text and shared by every pair of its markups."""

    starts: np.ndarray
    ends: np.ndarray

    @classmethod
    def of(cls, text: str) -> Words:
        return cls(*_word_arrays(text))

    def ranges(self, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[lo, hi) word indices each span touches: the first word ending after its start to
        the first word starting at or after its end; a whole-text fragment (−1): every word."""
        lo = np.searchsorted(self.ends, starts, side="right")
        hi = np.maximum(lo, np.searchsorted(self.starts, ends, side="left"))
        whole = starts < 0
        return np.where(whole, 0, lo), np.where(whole, len(self.starts), hi)


def _word_jaccard(xlo: Any, xhi: Any, ylo: Any, yhi: Any, char_similarity: Any) -> Any:
    inter = np.maximum(0, np.minimum(xhi, yhi) - np.maximum(xlo, ylo))
    union = (xhi - xlo) + (yhi - ylo) - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), char_similarity)


def _norm_comment(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".!?;:,… ")


def _comment_key(fragment: Fragment) -> str:
    # A written comment overrides the subtype; the prefixes keep a comment from ever equalling
    # a subtype.
    if fragment.comment and fragment.comment.strip():
        return "c:" + _norm_comment(fragment.comment)
    return "s:" + normalize_code(fragment.subtype)


def _norm_correction(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class PairAccuracy:
    """M(X, Y) with its parts, each in percent, and the correspondence behind them."""

    metrics: dict[str, float]
    value: float
    pairs: list[tuple[int, int]]


def metrics(
    xs: Sequence[Fragment],
    ys: Sequence[Fragment],
    text: str | Words,
    *,
    pairs: Sequence[tuple[int, int]] | None = None,
) -> dict[str, float]:
    """M2–M6 of markup X against markup Y of `text` (or its `Words`), in percent (Appendix 1);
    `pairs`: a correspondence found elsewhere (the optimal one by default)."""
    x, y = prepared(xs), prepared(ys)
    if pairs is None:
        ix, iy = _match_arrays(x, y)
    else:
        ix = np.fromiter((i for i, _k in pairs), np.int64, count=len(pairs))
        iy = np.fromiter((k for _i, k in pairs), np.int64, count=len(pairs))
    words = text if isinstance(text, Words) else Words.of(text)
    return _metrics(x, y, words, ix, iy)


def _metrics(xs: Markup, ys: Markup, words: Words, ix: Any, iy: Any) -> dict[str, float]:
    n, m, matched = len(xs), len(ys), len(ix)
    if not n and not m:
        return dict.fromkeys(METRICS, 100.0)
    precision = matched / n if n else 0.0
    recall = matched / m if m else 0.0
    m2 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    m3 = m4 = m5 = 0.0
    if matched:
        m3 = float(np.count_nonzero(xs.codes[ix] == ys.codes[iy])) / n
        m4 = float(np.count_nonzero(xs.comment_keys[ix] == ys.comment_keys[iy])) / n
        bx, ex, by, ey = xs.starts[ix], xs.ends[ix], ys.starts[iy], ys.ends[iy]
        xlo, xhi = words.ranges(bx, ex)
        ylo, yhi = words.ranges(by, ey)
        chars = 1.0 - _jaccard_arrays(bx, ex, by, ey)
        # fsum: exactly rounded, so the same pairs in any order give the same M5.
        m5 = fsum(_word_jaccard(xlo, xhi, ylo, yhi, chars).tolist()) / n
    corrected = int(np.count_nonzero(xs.corrections != "")) if n else 0
    if corrected:
        cx, cy = xs.corrections[ix], ys.corrections[iy]
        m6 = int(np.count_nonzero((cx != "") & (cx == cy))) / corrected
    else:
        m6 = 0.0 if m and np.any(ys.corrections != "") else 1.0
    return {"M2": 100 * m2, "M3": 100 * m3, "M4": 100 * m4, "M5": 100 * m5, "M6": 100 * m6}


def weighted(parts: Mapping[str, float], weights: Mapping[str, float] = DEFAULT_WEIGHTS) -> float:
    """M(X, Y) = Σ w_i M_i / Σ w_i over the metrics with a weight."""
    total = sum(weights.get(name, 0.0) for name in METRICS)
    if total <= 0:
        raise ValueError("at least one of the weights w2..w6 must be positive")
    return sum(weights.get(name, 0.0) * parts[name] for name in METRICS) / total


def pair_accuracy(
    xs: Sequence[Fragment],
    ys: Sequence[Fragment],
    text: str | Words,
    weights: Mapping[str, float] = DEFAULT_WEIGHTS,
) -> PairAccuracy:
    """The pairwise markup accuracy M(X, Y) (Appendix 2, section 1, algorithm 4)."""
    x, y = prepared(xs), prepared(ys)
    ix, iy = _match_arrays(x, y)
    words = text if isinstance(text, Words) else Words.of(text)
    parts = _metrics(x, y, words, ix, iy)
    pairs = sorted(zip(ix.tolist(), iy.tolist(), strict=True))
    return PairAccuracy(metrics=parts, value=weighted(parts, weights), pairs=pairs)


@dataclass(frozen=True)
class TextAccuracy:
    """One text's accuracy of an algorithmic markup A against its expert markups E."""

    against_experts: list[float]  # M(A, E) for each expert markup
    expert_agreement: list[float]  # M(E, E') over ordered pairs of distinct experts
    optimistic: float | None  # M_опт, percent; None when the experts agree on nothing
    mean: float | None  # M_ср, percent; None likewise

    def star_term(self, hardness: float) -> float:
        """H · avg_E M(A, E) + (1 − H) · max_E M(A, E): the text's share of СТАР."""
        return hardness * fmean(self.against_experts) + (1 - hardness) * max(self.against_experts)


def text_accuracy(
    algorithm: Sequence[Fragment],
    experts: Sequence[Sequence[Fragment]],
    text: str,
    weights: Mapping[str, float] = DEFAULT_WEIGHTS,
) -> TextAccuracy:
    """M(A, E) for every expert markup, the experts' agreement and the relative accuracies."""
    if not experts:
        raise ValueError("a text needs at least one expert markup")
    words = Words.of(text)
    algorithm = prepared(algorithm)
    markups = [prepared(e) for e in experts]
    against = [pair_accuracy(algorithm, e, words, weights).value for e in markups]
    agreement = []
    for a in range(len(markups)):
        for b in range(a + 1, len(markups)):
            # L and the tie-break are symmetric, and a pair is solved in one orientation
            # (`_match_arrays`): (E', E)'s correspondence is (E, E')'s transposed, one
            # assignment problem per unordered pair.
            ia, ib = _match_arrays(markups[a], markups[b])
            agreement.append(weighted(_metrics(markups[a], markups[b], words, ia, ib), weights))
            agreement.append(weighted(_metrics(markups[b], markups[a], words, ib, ia), weights))
    optimistic = mean = None
    if agreement and min(agreement) > 0:
        optimistic = 100 * max(against) / min(agreement)
    if agreement and fmean(agreement) > 0:
        mean = 100 * fmean(against) / fmean(agreement)
    return TextAccuracy(against, agreement, optimistic, mean)


TextMarkups = tuple[str, Sequence[Fragment], Sequence[Sequence[Fragment]]]


def _chunk_accuracy(
    chunk: Sequence[TextMarkups], weights: Mapping[str, float]
) -> list[TextAccuracy]:
    return [text_accuracy(algorithm, experts, text, weights) for text, algorithm, experts in chunk]


def texts_accuracy(
    texts: Sequence[TextMarkups],
    weights: Mapping[str, float] = DEFAULT_WEIGHTS,
    *,
    workers: int = 1,
) -> list[TextAccuracy]:
    """`text_accuracy` of many texts ((text, algorithmic markup, expert markups) each), in
    order. Texts are independent, so with `workers` > 1 they are split into that many chunks
    computed in worker processes (a scoring run of a whole corpus on a multi-core worker)."""
    if workers <= 1 or len(texts) < 2 * workers:
        return _chunk_accuracy(texts, weights)
    size = -(-len(texts) // workers)
    chunks = [texts[i : i + size] for i in range(0, len(texts), size)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        parts = pool.map(_chunk_accuracy, chunks, [dict(weights)] * len(chunks))
        return [result for part in parts for result in part]


def star(texts: Sequence[TextAccuracy], hardness: float = 0.5) -> float:
    """СТАР = avg over texts of (H · avg_E M(A, E) + (1 − H) · max_E M(A, E)), percent."""
    if not 0.0 <= hardness <= 1.0:
        raise ValueError("the hardness H lies in [0, 1]")
    if not texts:
        raise ValueError("СТАР needs at least one text")
    return fmean(t.star_term(hardness) for t in texts)
