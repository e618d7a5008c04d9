"""The vectorised engine behind `lib.ratings`: one pass of Elo, Glicko-2 and Bradley–Terry's
counts over many independent battle sequences at once (bootstrap rounds, criteria).

Elo and Glicko-2 are sequential in the battles by nature, so the vectorisation runs *across*
sequences: battle t of every bootstrap round (and of every group, e.g. every criterion) is
processed in one numpy step over all sequences' states. Bradley–Terry is order-free: each
round's win matrix is counted from the same drawn battles (one `np.add.at` per block and batch)
and the MM update runs on many rounds' (m, m) matrices at once. The three systems share one
pass over the drawn battles, so their rounds are the same resamples.

The parameters and the definitions followed are described in `lib.ratings`, the public module.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Glicko-2's conversion between the Glicko scale (r, RD) and its own (mu, phi): step 2.
GLICKO2_SCALE = 173.7178

# Battle positions drawn and laid out per chunk of the sequential pass. Small on purpose: the
# chunk's arrays (about 50 bytes x chunk x sequences, ~18 MB for 11 criteria x 1,000 rounds)
# then come from the heap; big ones are fresh mmaps whose page faults cost more than the work.
_CHUNK = 32
# Bradley–Terry's MM runs on this many sequences' win matrices at a time (cache-sized blocks:
# 50 passes over one block in cache beat 50 passes over all of them in memory).
_BT_BLOCK = 512
# Battle positions whose win-matrix cells are kept and then counted in one batch.
_COUNT_BATCH = 1024
# Up to this many distinct outcome values are counted per value (REPA: 0, 0.5, 1).
_MAX_KINDS = 8
# A model's sequential state (Elo, μ, φ, ln σ²) as one opaque 32-byte item, for np.take / put.
_ROW = np.dtype((np.void, 32))


@dataclass(frozen=True)
class EloParams:
    """Arena's online Elo: K-factor, logistic scale and base, initial rating."""

    k: float = 4.0
    scale: float = 400.0
    base: float = 10.0
    initial: float = 1000.0


@dataclass(frozen=True)
class BradleyTerryParams:
    """MM iterations and the reported scale: scale·log_base(p) + anchor, with the mean of
    log p over the models that played equal to 0 (so the average model sits at `anchor`) —
    Arena's convention for its MLE ratings (400·log10 strength + 1000)."""

    iterations: int = 50
    scale: float = 400.0
    base: float = 10.0
    anchor: float = 1000.0


@dataclass(frozen=True)
class Glicko2Params:
    """Initial rating, RD and volatility on the Glicko scale; the system constant tau; the
    convergence tolerance epsilon of the Illinois iteration (Glickman's 0.000001)."""

    rating: float = 1500.0
    rd: float = 350.0
    volatility: float = 0.06
    tau: float = 0.5
    epsilon: float = 1e-6


def check_battles(
    model_a: ArrayLike, model_b: ArrayLike, outcome: ArrayLike, n_models: int
) -> tuple[IntArray, IntArray, FloatArray]:
    a = np.asarray(model_a, dtype=np.int64)
    b = np.asarray(model_b, dtype=np.int64)
    s = np.asarray(outcome, dtype=np.float64)
    if not (a.ndim == 1 and a.shape == b.shape == s.shape):
        raise ValueError("model_a, model_b and outcome must be 1-D arrays of one length")
    if len(a) and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n_models):
        raise ValueError("model indices must lie in 0..n_models-1")
    if np.any(a == b):
        raise ValueError("a model cannot battle itself")
    if np.any((s < 0) | (s > 1)):
        raise ValueError("outcome must lie in [0, 1]")
    return a, b, s


def pass_fit(
    model_a: ArrayLike,
    model_b: ArrayLike,
    outcome: ArrayLike,
    n_models: int,
    *,
    elo: EloParams | None = None,
    bt: BradleyTerryParams | None = None,
    glicko: Glicko2Params | None = None,
) -> BattlePass:
    """The pass on one sequence, the battles in their own order: the engine's plain fit of
    all three systems (the fast plain fits of `lib.ratings` are tested against it)."""
    a, b, s = check_battles(model_a, model_b, outcome, n_models)
    fit = BattlePass(n_models, [1], elo=elo, bt=bt, glicko=glicko)  # one sequence
    n = len(a)
    fit.run(a, b, s, (np.arange(i, min(n, i + _CHUNK))[:, None] for i in range(0, n, _CHUNK)))
    return fit


def resample_chunks(
    starts: list[int],
    sizes: list[int],
    rounds: int,
    rngs: list[np.random.Generator],
    given: list[IntArray] | None,
    *,
    fits: bool = False,
) -> Iterator[IntArray]:
    """(chunk, groups x rounds [+ groups]) battle positions, -1 past a group's end (a no-op
    battle). Group g draws from its own generator, so its rounds do not depend on the other
    groups. With `fits`, one more column per group after all the rounds: its battles in their
    own order (the plain fit rides along in the same pass)."""
    longest = max(sizes)
    n_groups = len(sizes)
    width = n_groups * rounds + (n_groups if fits else 0)
    for begin in range(0, longest, _CHUNK):
        end = min(longest, begin + _CHUNK)
        chunk = np.full((end - begin, width), -1, dtype=np.int64)
        for g, (first, n) in enumerate(zip(starts, sizes, strict=True)):
            take = min(n, end) - begin
            if take <= 0:
                continue
            cols = slice(g * rounds, (g + 1) * rounds)
            if given is None:
                chunk[:take, cols] = rngs[g].integers(first, first + n, size=(take, rounds))
            else:
                chunk[:take, cols] = given[g][:, begin : begin + take].T + first
            if fits:
                chunk[:take, n_groups * rounds + g] = np.arange(first + begin, first + begin + take)
        yield chunk


class BattlePass:
    """The shared pass of the three systems over `sum(blocks)` independent battle sequences.

    Sequences come in blocks (one per group, `rounds` sequences each). The sequential state of
    sequence q and model i is row q·(m+1) + i of one (cells, 4) array — Elo rating, Glicko-2 μ,
    φ and ln σ² side by side — so one fancy index reads (and one writes) all that battle t of every
    sequence needs, one cache line per model where four arrays would cost four. Rows are
    moved as 32-byte opaque items (`np.take` / `put` on a void view: several times faster than
    2-D row indexing). Column m of each sequence is a scratch model: padding battles (position
    -1) are the scratch model against itself, never meet a real model, and are dropped. Within
    a battle the two rows differ, so the writes of one step never collide.
    """

    def __init__(
        self,
        n_models: int,
        blocks: list[int],
        *,
        elo: EloParams | None,
        bt: BradleyTerryParams | None,
        glicko: Glicko2Params | None,
    ) -> None:
        self.m = n_models
        self.width = n_models + 1
        self.blocks = blocks
        self.q = sum(blocks)
        self.elo_p = elo or EloParams()
        self.bt_p = bt or BradleyTerryParams()
        self.gl_p = glicko or Glicko2Params()
        self.offsets = np.arange(self.q, dtype=np.int64) * self.width
        self.state = np.empty((self.q * self.width, 4))
        self.state[:] = [
            self.elo_p.initial,
            (self.gl_p.rating - 1500.0) / GLICKO2_SCALE,
            self.gl_p.rd / GLICKO2_SCALE,
            math.log(self.gl_p.volatility**2),
        ]
        self._pending = 0

    def run(self, a: IntArray, b: IntArray, s: FloatArray, chunks: Iterator[IntArray]) -> None:
        # Position -1 (padding) reads the appended scratch battle: scratch vs itself, a tie.
        a_ext = np.append(a, self.m)
        b_ext = np.append(b, self.m)
        s_ext = np.append(s, 0.5)
        # For Bradley–Terry each battle is one cell of a sequence's win matrix, a·(m+1) + b,
        # and one of the K distinct outcomes: one integer per battle, counted without weights.
        self.outcomes, kind = np.unique(s_ext, return_inverse=True)
        w, k = self.width, len(self.outcomes)
        if k > _MAX_KINDS:  # outcomes on a continuum: cells and weights instead
            self.outcomes = np.empty(0)
            k, kind = 1, np.zeros(len(s_ext), dtype=np.int64)
        cell_ext = (a_ext * w + b_ext) * k + kind
        # Buffers allocated once: fresh big arrays per chunk would each be a new mmap whose
        # page faults cost more than the work on them.
        q = self.q
        rows = np.empty((_CHUNK, 2 * q), dtype=np.int64)
        score = np.empty((_CHUNK, 2 * q))
        self.kinds = k
        cells = w * w * k
        # Per block, battle by battle: the bin of (sequence in the block, cell, outcome kind);
        # the counts of each sequence's bins; and, for continuous outcomes, the scores.
        self._base = [np.arange(size, dtype=np.int64) * cells for size in self.blocks]
        self._bins = [np.empty((_COUNT_BATCH, size), dtype=np.int64) for size in self.blocks]
        self._counts = [np.zeros(size * cells, dtype=np.int64) for size in self.blocks]
        self._scores = (
            None if len(self.outcomes) else [np.empty((_COUNT_BATCH, s)) for s in self.blocks]
        )
        self._won = [np.zeros(size * cells) for size in self.blocks] if self._scores else []
        self._lost = [np.zeros(size * cells) for size in self.blocks] if self._scores else []
        for pos in chunks:
            n = len(pos)
            # Indices of battle t: [A of every sequence, B of every sequence], and each side's
            # score; the opponent's values are the other half.
            np.add(a_ext[pos], self.offsets, out=rows[:n, :q])
            np.add(b_ext[pos], self.offsets, out=rows[:n, q:])
            np.take(s_ext, pos, out=score[:n, :q])
            np.subtract(1.0, score[:n, :q], out=score[:n, q:])
            self._collect(cell_ext, pos, score[:n, :q])
            self._steps(rows[:n], score[:n])
        self._count()

    def _steps(self, rows: IntArray, score: FloatArray) -> None:
        q = self.q
        items = self.state.view(_ROW).ravel()
        elo_k, elo_c = self.elo_p.k, math.log(self.elo_p.base) / self.elo_p.scale
        tau, eps = self.gl_p.tau, self.gl_p.epsilon
        c3 = 3.0 / math.pi**2
        new = np.empty((2 * q, 4))
        new_items = new.view(_ROW).ravel()
        for t in range(len(rows)):
            i = rows[t]
            s = score[t]
            # Gathered rows, transposed into contiguous columns (numpy's loops are faster on
            # contiguous operands than on the rows' 32-byte stride).
            r, mu, phi, log_sig2 = np.take(items, i).view(np.float64).reshape(2 * q, 4).T.copy()
            # Elo (Arena): E_A = 1 / (1 + base^((R_B − R_A)/scale)), both from pre-battle values.
            d = elo_k * (s[:q] - 1.0 / (1.0 + np.exp(elo_c * (r[q:] - r[:q]))))
            np.add(r[:q], d, out=new[:q, 0])
            np.subtract(r[q:], d, out=new[q:, 0])
            # Glicko-2, one game per period (steps 3–7): g of the opponent's φ, E, v, Δ.
            phi2 = phi * phi
            g_own = 1.0 / np.sqrt(1.0 + c3 * phi2)
            g = np.concatenate([g_own[q:], g_own[:q]])
            e = 1.0 / (1.0 + np.exp(g * (np.concatenate([mu[q:], mu[:q]]) - mu)))
            v = 1.0 / (g * g * e * (1.0 - e))
            gs = g * (s - e)
            log_new = new_log_volatility(log_sig2, phi2, v, v * gs, tau, eps)
            phi_new = 1.0 / np.sqrt(1.0 / (phi2 + np.exp(log_new)) + 1.0 / v)
            new[:, 1] = mu + phi_new * phi_new * gs
            new[:, 2] = phi_new
            new[:, 3] = log_new
            items[i] = new_items

    def _collect(self, cell_ext: IntArray, pos: IntArray, cs: FloatArray) -> None:
        """Keep this chunk's bins for Bradley–Terry; they are counted in batches (one
        numpy call per block and batch rather than per chunk)."""
        if self._pending + len(pos) > _COUNT_BATCH:
            self._count()
        at = slice(self._pending, self._pending + len(pos))
        col = 0
        for j, size in enumerate(self.blocks):
            blk = slice(col, col + size)
            col += size
            np.add(cell_ext[pos[:, blk]], self._base[j], out=self._bins[j][at])
            if self._scores is not None:
                self._scores[j][at] = cs[:, blk]
        self._pending += len(pos)

    def _count(self) -> None:
        """Count the kept bins per block of sequences (`ufunc.at` adds in place: no fresh
        bin array per call, as bincount would allocate)."""
        n, self._pending = self._pending, 0
        if not n:
            return
        for j, counts in enumerate(self._counts):
            flat = self._bins[j][:n].ravel()
            if self._scores is None:
                np.add.at(counts, flat, 1)
            else:
                s = self._scores[j][:n].ravel()
                np.add.at(self._won[j], flat, s)
                np.add.at(self._lost[j], flat, 1.0 - s)

    def _wins(self, j: int) -> FloatArray:
        """Block j's (sequences, m, m) win matrices: W[a, b] = A's points in the battles of
        a (as A) against b, plus B's points in the battles of b (as A) against a."""
        w, k, size = self.width, self.kinds, self.blocks[j]
        if self._scores is None:
            counts = self._counts[j].reshape(size * w * w, k)
            won = sum(counts[:, i] * self.outcomes[i] for i in range(k))
            lost = sum(counts[:, i] * (1.0 - self.outcomes[i]) for i in range(k))
        else:
            won, lost = self._won[j], self._lost[j]
        full = np.reshape(won, (size, w, w)) + np.swapaxes(np.reshape(lost, (size, w, w)), 1, 2)
        return full[:, : self.m, : self.m]

    def _models(self, column: int) -> FloatArray:
        return self.state[:, column].reshape(self.q, self.width)[:, : self.m].copy()

    def elo_ratings(self) -> FloatArray:
        return self._models(0)

    def glicko_ratings(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        return (
            GLICKO2_SCALE * self._models(1) + 1500.0,
            GLICKO2_SCALE * self._models(2),
            np.exp(0.5 * self._models(3)),
        )

    def bt_ratings(self) -> FloatArray:
        parts = []
        for j, size in enumerate(self.blocks):
            wins = self._wins(j)
            parts += [
                bradley_terry_mm(wins[i : i + _BT_BLOCK], self.bt_p)
                for i in range(0, size, _BT_BLOCK)
            ]
        return np.concatenate(parts)


def bradley_terry_mm(wins: FloatArray, params: BradleyTerryParams) -> FloatArray:
    """Hunter's MM update on (sequences, m, m) win matrices; ratings on the params' scale.

    Laid out as (m, m, sequences), so every numpy loop runs along the sequences (long and
    contiguous) rather than along a row of 20 models.
    """
    w = np.ascontiguousarray(np.moveaxis(wins, 0, -1))  # W[i, j, q]
    games = w + np.swapaxes(w, 0, 1)  # N_ij, symmetric
    won = w.sum(axis=1)  # W_i, (m, q)
    played = games.sum(axis=1) > 0
    p = np.ones(won.shape)
    pair = np.empty_like(games)
    for _ in range(params.iterations):
        np.add(p[:, None, :], p[None, :, :], out=pair)
        # p_i + p_j = 0 only for two models without a win or tie, and those never met (N_ij = 0
        # there): the floor turns that 0/0 into 0/tiny = 0 and changes nothing else.
        np.maximum(pair, _TINY, out=pair)
        np.divide(games, pair, out=pair)
        denom = pair.sum(axis=1)
        # A model without battles keeps its p (denominator 0).
        p = np.where(played, won / np.where(played, denom, 1.0), p)
        # The update is scale-free (p -> c·p maps p' to c·p'): normalise only to keep p in range.
        p /= p.max(axis=0)
    with np.errstate(divide="ignore"):
        logp = np.log(p) / math.log(params.base)
    finite = played & np.isfinite(logp)
    centre = np.where(finite, logp, 0.0).sum(axis=0) / np.maximum(finite.sum(axis=0), 1)
    logp = np.where(played, logp - centre, 0.0)
    return (params.scale * logp + params.anchor).T


_TINY = 1e-300


# Illinois rounds run on every element before the working set is compacted: with one game per
# period nearly all elements need two (measured: >80 % finish at the second, <1 % at the first).
_FULL_ROUNDS = 2
# Below this many unfinished elements the Illinois rounds go on in scalar Python.
_SCALAR_TAIL = 12


def new_log_volatility(
    a: FloatArray,
    phi2: FloatArray,
    v: FloatArray,
    delta: FloatArray,
    tau: float,
    eps: float,
) -> FloatArray:
    """Glickman's step 5, elementwise: from a = ln σ² to the new A = ln σ'² (σ' = e^(A/2)),
    by the Illinois algorithm. (The pass keeps ln σ² as its state: an exp is cheaper than a log.)

    f(x) = e^x (Δ² − φ² − v − e^x) / (2 (φ² + v + e^x)²) − (x − a) / τ², a = ln σ².
    Every element follows the scalar iteration of the paper. Three values need no exp: f(a) has
    e^a = σ²; f(a − τ) has e^(a−τ) = σ² e^−τ; f(ln(Δ² − φ² − v)) has e^x (Δ² − φ² − v − e^x) = 0.
    The search stops at |B − A| <= ε, so σ' is defined to about ε: a last-bit difference in an
    exp can end it one step earlier, in this as in any implementation.
    """
    sig2 = np.exp(a)
    p2v = phi2 + v
    c1 = delta * delta - p2v
    inv_t2 = 1.0 / (tau * tau)

    def f(x: FloatArray, c1: FloatArray, p2v: FloatArray, a: FloatArray) -> FloatArray:
        ex = np.exp(x)
        den = p2v + ex
        return ex * (c1 - ex) / (2.0 * den * den) - (x - a) * inv_t2

    den = p2v + sig2
    fa = sig2 * (c1 - sig2) / (2.0 * den * den)
    low = sig2 * math.exp(-tau)
    den = p2v + low
    f_low = low * (c1 - low) / (2.0 * den * den) + 1.0 / tau
    big = c1 > 0
    # Δ² > φ² + v: B = ln(Δ² − φ² − v), where f(B) = −(B − a)/τ²; otherwise B = a − τ first.
    # (Masked ufuncs and np.where: cheaper than boolean-mask indexing at these sizes.)
    xb = a - tau
    np.log(c1, out=xb, where=big)
    fb = np.where(big, (a - xb) * inv_t2, f_low)
    negative = f_low < 0
    deeper = np.flatnonzero(negative & ~big) if negative.any() else np.empty(0, dtype=np.int64)
    k = 1.0
    while len(deeper):
        # B = a − kτ for the smallest k >= 1 with f(a − kτ) >= 0 (k > 1 is rare: a surprise).
        k += 1.0
        x = a[deeper] - k * tau
        fx = f(x, c1[deeper], p2v[deeper], a[deeper])
        xb[deeper] = x
        fb[deeper] = fx
        deeper = deeper[fx < 0]
    out = a.copy()
    xa = a
    todo = np.abs(xb - xa) > eps
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # The first rounds on every element; a finished one goes on (its result is taken
        # when it finishes, later values are ignored), which is cheaper than compacting.
        for _ in range(_FULL_ROUNDS):
            xa, xb, fa, fb = _illinois(xa, xb, fa, fb, c1, p2v, a, inv_t2)
            now = todo & (np.abs(xb - xa) <= eps)
            np.copyto(out, xa, where=now)
            todo &= ~now
        idx = np.flatnonzero(todo)
        xa, xb, fa, fb, c1, p2v, a = (x[idx] for x in (xa, xb, fa, fb, c1, p2v, a))
        while len(idx) > _SCALAR_TAIL:
            xa, xb, fa, fb = _illinois(xa, xb, fa, fb, c1, p2v, a, inv_t2)
            fin = np.abs(xb - xa) <= eps
            out[idx[fin]] = xa[fin]
            keep = ~fin
            idx, xa, xb, fa, fb = idx[keep], xa[keep], xb[keep], fa[keep], fb[keep]
            c1, p2v, a = c1[keep], p2v[keep], a[keep]
    # The few slow ones (a long tail of up to ~10 more rounds) one by one: a numpy call on a
    # handful of values costs more than the scalar arithmetic.
    for j, x_a, x_b, f_a, f_b, c, pv, a_j in zip(
        idx.tolist(),
        xa.tolist(),
        xb.tolist(),
        fa.tolist(),
        fb.tolist(),
        c1.tolist(),
        p2v.tolist(),
        a.tolist(),
        strict=True,
    ):
        while abs(x_b - x_a) > eps:
            x_c = x_a + (x_a - x_b) * f_a / (f_b - f_a)
            ex = math.exp(x_c)
            f_c = ex * (c - ex) / (2.0 * (pv + ex) ** 2) - (x_c - a_j) * inv_t2
            if f_c * f_b <= 0:
                x_a, f_a = x_b, f_b
            else:
                f_a *= 0.5
            x_b, f_b = x_c, f_c
        out[j] = x_a
    return out


def _illinois(
    xa: FloatArray,
    xb: FloatArray,
    fa: FloatArray,
    fb: FloatArray,
    c1: FloatArray,
    p2v: FloatArray,
    a: FloatArray,
    inv_t2: float,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """One step of Glickman's 5.4: C = A + (A − B) f_A / (f_B − f_A); if f(C) f(B) <= 0 then
    A <- B, f_A <- f_B, else f_A <- f_A / 2; B <- C, f_B <- f(C)."""
    # In place where possible (the same operations in the same order): fewer fresh arrays.
    xc = xa - xb
    xc *= fa
    xc /= fb - fa
    xc += xa
    ex = np.exp(xc)
    den = p2v + ex
    den *= den
    den *= 2.0
    fc = c1 - ex
    fc *= ex
    fc /= den
    tail = xc - a
    tail *= inv_t2
    fc -= tail
    np.multiply(fc, fb, out=tail)
    flip = tail <= 0
    fa = fa * 0.5
    np.copyto(fa, fb, where=flip)
    return np.where(flip, xb, xa), xc, fa, fc
