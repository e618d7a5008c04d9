"""Greedy generation with cascade attention: each shared prefix is stored and read once.

All criteria of one answer share the prompt up to the criterion section (chat head, instruction,
reference, answer). :mod:`judge_worker.backends.prefix_decode` prefills that prefix once but then
copies its keys/values into every criterion row, so a decode step still reads the prefix once per
row (16 times per answer) and the copies bound the batch size. Here the prefix keys/values live
once, packed, and attention is split in two parts whose results are merged exactly through their
log-sum-exp (the "cascade" or "shared-prefix" attention of vLLM, SGLang and FlashInfer):

* part A: the queries of all rows of a group against the group's prefix (non-causal: every
  prefix token precedes every query);
* part B: each row's queries against its own keys (criterion suffix, then generated tokens),
  causal within the suffix.

``softmax([a, b]) @ [Va; Vb] == (exp(lse_a) * out_a + exp(lse_b) * out_b) / (exp(lse_a) +
exp(lse_b))``, so the merge is exact up to floating-point rounding.

Both parts run as variable-length ("varlen") attention over packed sequences
(:mod:`judge_worker.backends.varlen`: FlashAttention-2 on CUDA, a float32 reference on CPU or
for dtypes flash does not take). In a decode step the query heads that share a key/value head
are packed into query rows (``gqa_packing``): the kernel tiles query rows per head, so
unpacked it reads each key/value block once per query head (7 times for Qwen2-7B's 28 over 4),
packed once per key/value head.

The model itself runs unchanged: its attention modules call the attention function registered
under :data:`judge_worker.backends.cascade_attention.CASCADE_ATTENTION` (transformers'
``AttentionInterface``), which receives the per-call
:class:`~judge_worker.backends.cascade_attention.CascadeState` through the forward's keyword
arguments; the model keeps no cache of its own (``use_cache=False``) and builds no mask (custom
implementations get none). This module holds the continuous batch: admission of groups, the
decode loop, the pool's shape; :mod:`judge_worker.backends.cascade_graphs` replays its decode
forward as CUDA graphs; :mod:`judge_worker.backends.cascade_prefill` can run its packed prefill
forwards with fused projections and compiled pointwise kernels (``prefill=``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import torch

from judge_worker.backends.cascade_attention import (
    GQA_PACKING,
    CascadeState,
    KVPool,
    RowsLayout,
    cascade_implementation,
)
from judge_worker.backends.cascade_graphs import DecodeGraphs
from judge_worker.backends.cascade_prefill import PREFILL_MODES, FusedPrefill, fused_prefill_for
from judge_worker.backends.prefix_decode import (
    DecodeStep,
    PrefixGroup,
    RowStepProcessor,
    cut_at_eos,
    phase_timer,
    text_config,
)
from judge_worker.backends.varlen import FLASH_DTYPES, flash_problem, merge_attention

logger = logging.getLogger(__name__)

# Model types whose modeling code forwards extra keyword arguments down to the attention
# function and whose layers all attend over the full context (no sliding window, no linear or
# recurrent layers): the cascade needs both.
CASCADE_MODEL_TYPES = frozenset({"llama", "qwen2", "qwen3", "mistral"})

# The decode attention's GQA packing when the caller names none (see
# :data:`judge_worker.backends.cascade_attention.GQA_PACKING`). "both" was the fastest on an
# H200 with the Qwen2-7B shape (docs/judge_gpu_bench.md: decode attention 0.82 -> 0.48 ms a
# layer at 768 rows; fixed workload 8,498 -> 9,616 tok/s, variable 7,436 -> 8,779, same run,
# same tokens). "off" is the earlier path, kept selectable so the benchmark measures both.
DEFAULT_GQA_PACKING = "both"

# How packed prefill forwards run on CUDA when the caller names none (see
# :data:`judge_worker.backends.cascade_prefill.PREFILL_MODES`); elsewhere "model", as the
# fused forward gains nothing on a CPU. "compiled" prefilled the fixed workload 1.16x faster on
# an H200 (6.88 -> 5.93 s, 59 -> 69 % of the bf16 peak; 9,548 -> 10,347 tok/s in all), but
# its sums in another order change the random-weight benchmark's tokens (first tokens 91 %
# equal, docs/judge_gpu_bench.md), so the default stays the model's own forward until an
# agreement rule for it is set.
DEFAULT_PREFILL = "model"


def supports_cascade(model: Any) -> bool:
    """Whether :func:`generate_cascade` can run this model (its family, and on CUDA the
    FlashAttention kernel, checked once per device: see
    :func:`judge_worker.backends.varlen.flash_varlen_problem`)."""
    device = getattr(model, "device", None)
    if isinstance(device, torch.device) and device.type == "cuda" and flash_problem(device):
        return False
    cfg = text_config(model)
    if getattr(cfg, "model_type", None) not in CASCADE_MODEL_TYPES:
        return False
    if getattr(cfg, "use_sliding_window", False):  # Qwen2/3 opt-in sliding window
        return False
    if cfg.model_type == "mistral" and getattr(cfg, "sliding_window", None):
        return False
    layer_types = getattr(cfg, "layer_types", None)
    return not layer_types or all(t == "full_attention" for t in layer_types)


# --------------------------------------------------------------------------- generation


def _chunks(lengths: Sequence[int], budget: int) -> list[tuple[int, int]]:
    """Consecutive [lo, hi) ranges whose lengths sum to at most budget (at least one item)."""
    out, lo, total = [], 0, 0
    for i, n in enumerate(lengths):
        if i > lo and total + n > budget:
            out.append((lo, i))
            lo, total = i, 0
        total += n
    if lo < len(lengths):
        out.append((lo, len(lengths)))
    return out


def pool_shape(
    groups: Sequence[PrefixGroup],
    max_new_tokens: int,
    *,
    max_rows: int | None = None,
    kv_slots: int | None = None,
) -> tuple[int, int, int]:
    """(arena tokens, row slots, row width) of the pool :func:`generate_cascade` allocates.

    Rows decoded at once: ``max_rows`` (default all, or what holds every row and prefix at
    once), never fewer than the largest group's rows (a group is admitted whole). With
    ``kv_slots`` the pool fits that many token slots, split between row slots and prefix space
    as the groups' mean rows and prefix are (at least the longest prefix, at most all of them).
    """
    live = [g for g in groups if g.suffixes]
    n_rows = sum(len(g.suffixes) for g in live)
    width = max(len(s) for g in live for s in g.suffixes) + max_new_tokens
    largest = max(len(g.suffixes) for g in live)
    longest = max(len(g.prefix) for g in live)
    all_prefixes = sum(len(g.prefix) for g in live)
    slots = min(n_rows, max(max_rows or n_rows, largest))
    if kv_slots is None:
        return all_prefixes, slots, width
    # Rows and prefixes in proportion to the groups' own: as many whole groups (their mean
    # prefix and rows) as fit, so rows are not left waiting for prefix space.
    mean_rows = n_rows / len(live)
    per_group = all_prefixes / len(live) + mean_rows * width
    balanced = int(kv_slots // per_group * mean_rows)
    slots = min(slots, max(largest, balanced), (kv_slots - longest) // width)
    if slots < largest:
        raise ValueError(
            f"{kv_slots} key/value slots cannot hold a group of {largest} rows "
            f"(rows of {width} slots) beside a prefix of {longest} tokens"
        )
    return min(all_prefixes, kv_slots - slots * width), slots, width


def kv_slots_for(
    model: Any, *, max_rows: int, prefill_chunk_tokens: int = 32_768, headroom: float = 0.9
) -> int | None:
    """Key/value token slots that fit the free GPU memory beside the activations (None off CUDA).

    What stays free: a packed prefill of ``prefill_chunk_tokens`` (the MLP's gate, up and
    product at the intermediate width, a few hidden-width tensors, bf16) and the decode step's
    logits (``max_rows`` x vocab, in the model's dtype and in float32), then ``headroom`` of
    the rest.
    """
    device = getattr(model, "device", None)
    if not isinstance(device, torch.device) or device.type != "cuda":
        return None
    cfg = text_config(model)
    width = torch.finfo(model.dtype).bits // 8
    prefill = prefill_chunk_tokens * (3 * cfg.intermediate_size + 8 * cfg.hidden_size) * width
    logits = max_rows * cfg.vocab_size * (width + 4 + 4)
    free, _total = torch.cuda.mem_get_info(device)
    spare = (free - prefill - logits - 2**30) * headroom
    return max(0, int(spare // KVPool.slot_bytes(model)))


def generate_cascade(
    model: Any,
    groups: Sequence[PrefixGroup],
    *,
    max_new_tokens: int,
    eos_token_ids: Sequence[int] = (),
    pad_token_id: int = 0,
    step_processor: RowStepProcessor | None = None,
    prefill_chunk_tokens: int = 32_768,
    max_rows: int | None = None,
    kv_slots: int | None = None,
    continuous: bool = True,
    cuda_graphs: bool = True,
    gqa_packing: str = DEFAULT_GQA_PACKING,
    prefill: str | None = None,
    timings: dict[str, float] | None = None,
    stats: dict[str, int] | None = None,
) -> list[list[list[int]]]:
    """Greedy-decode every suffix of every group; returns ids per group per suffix.

    The contract of :func:`judge_worker.backends.prefix_decode.generate_shared`: generation of
    a row stops after its first EOS (kept in the output) or after ``max_new_tokens``; with no
    EOS ids exactly ``max_new_tokens`` are produced. Every prefix and every suffix needs at
    least one token.

    Continuous batching: at most ``max_rows`` rows decode at once (see :func:`pool_shape`); a
    row that finishes leaves the batch at once and frees its slot, and whole groups waiting in
    order enter when enough slots are free (their prefixes and suffixes prefilled, packed,
    between two decode steps). ``continuous=False`` is static batching, for comparison: a wave
    of groups enters only once the batch is empty, and rows that are done stay in the batch
    (decoded, their tokens discarded) until its longest row ends. ``stats`` receives
    ``decode_steps``, ``row_steps`` (rows decoded, summed over steps), ``admissions`` and
    ``graphs`` (CUDA graphs captured).

    On CUDA with FlashAttention (bf16/fp16) decode steps replay CUDA graphs
    (:class:`DecodeGraphs`) unless ``cuda_graphs`` is False. ``gqa_packing`` says which parts
    of a decode step's attention pack the query heads of a key/value group into query rows
    (:data:`~judge_worker.backends.cascade_attention.GQA_PACKING`: "off", "prefix", "both").
    ``prefill`` says how packed prefill forwards run
    (:data:`~judge_worker.backends.cascade_prefill.PREFILL_MODES`: "model", "fused",
    "compiled"; default :data:`DEFAULT_PREFILL` on CUDA, "model" elsewhere); a model whose
    layers the fused forward does not cover runs as "model".
    """
    if gqa_packing not in GQA_PACKING:
        raise ValueError(f"gqa_packing must be one of {GQA_PACKING}, not {gqa_packing!r}")
    if prefill is None:
        prefill = DEFAULT_PREFILL if model.device.type == "cuda" else "model"
    if prefill not in PREFILL_MODES:
        raise ValueError(f"prefill must be one of {PREFILL_MODES}, not {prefill!r}")
    if not any(grp.suffixes for grp in groups):
        return [[] for _ in groups]
    live = [grp for grp in groups if grp.suffixes]
    if any(len(grp.prefix) == 0 for grp in live):
        raise ValueError("every prefix needs at least one token")
    if any(len(s) == 0 for grp in live for s in grp.suffixes):
        raise ValueError("every suffix needs at least one token")
    arena, slots, width = pool_shape(live, max_new_tokens, max_rows=max_rows, kv_slots=kv_slots)
    with torch.inference_mode(), cascade_implementation(model):
        run = ContinuousRun(
            model,
            live,
            KVPool(model, arena, slots, width),
            max_new_tokens=max_new_tokens,
            eos_token_ids=eos_token_ids,
            pad_token_id=pad_token_id,
            step_processor=step_processor,
            prefill_chunk_tokens=prefill_chunk_tokens,
            gqa_packing=gqa_packing,
            timings=timings,
        )
        if prefill != "model":
            run.fused = fused_prefill_for(model, compiled=prefill == "compiled")
        if cuda_graphs and run.device.type == "cuda" and model.dtype in FLASH_DTYPES:
            run.graphs = DecodeGraphs(run)
        try:
            per_live = run.run(continuous=continuous)
        finally:
            run.graphs = None  # the graphs refer to the run: free the pool with the run
    if stats is not None:
        stats.update(run.stats)
    it = iter(per_live)
    return [next(it) if grp.suffixes else [] for grp in groups]


class ContinuousRun:
    """One call of :func:`generate_cascade`: rows, groups, the pool and the decode loop."""

    def __init__(
        self,
        model: Any,
        groups: Sequence[PrefixGroup],
        pool: KVPool,
        *,
        max_new_tokens: int,
        eos_token_ids: Sequence[int],
        pad_token_id: int,
        step_processor: RowStepProcessor | None,
        prefill_chunk_tokens: int,
        gqa_packing: str,
        timings: dict[str, float] | None,
    ) -> None:
        self.model, self.groups, self.pool = model, groups, pool
        self.device = device = model.device
        self.state = CascadeState(pool, device, gqa_packing)
        self.max_new = max_new_tokens
        self.processor = step_processor
        self.chunk = prefill_chunk_tokens
        self.eos = torch.tensor(list(eos_token_ids), dtype=torch.long, device=device)
        self.eos_set = set(eos_token_ids)
        self.tick = phase_timer(device, timings)
        self.rows_of: list[list[int]] = []
        self.row_group: list[int] = []
        self.suffix_len: list[int] = []
        for g, grp in enumerate(groups):
            self.rows_of.append(
                list(range(len(self.row_group), len(self.row_group) + len(grp.suffixes)))
            )
            self.row_group.extend([g] * len(grp.suffixes))
            self.suffix_len.extend(len(s) for s in grp.suffixes)
        n_rows = len(self.row_group)
        self.prefix_len = [len(grp.prefix) for grp in groups]
        self.prefix_start = [-1] * len(groups)
        self.rows_left = [len(grp.suffixes) for grp in groups]
        self.slot = [-1] * n_rows
        self.count = [0] * n_rows
        self.history = torch.full(
            (n_rows, max_new_tokens), pad_token_id, dtype=torch.long, device=device
        )
        self.counts = torch.zeros(n_rows, dtype=torch.long, device=device)
        self.last = torch.zeros(n_rows, dtype=torch.long, device=device)
        self.first_pos = torch.tensor(
            [self.prefix_len[g] + n for g, n in zip(self.row_group, self.suffix_len, strict=True)],
            dtype=torch.long,
            device=device,
        )
        self.active: list[int] = []
        self.next_group = 0
        self.stats = {"decode_steps": 0, "row_steps": 0, "admissions": 0, "graphs": 0}
        self.graphs: DecodeGraphs | None = None
        self.fused: FusedPrefill | None = None
        # Fixed for the run, so a captured graph's kernel parameters hold for every layout.
        self.largest_group = max(len(r) for r in self.rows_of)
        self.longest_prefix = max(self.prefix_len)

    # -- admission ------------------------------------------------------------------------

    def _wants_admission(self, continuous: bool) -> bool:
        if self.next_group >= len(self.groups):
            return False
        if not self.active:
            return True
        if not continuous:
            return False
        # Admitting costs a prefill between decode steps: wait for a useful number of slots.
        need = max(len(self.rows_of[self.next_group]), self.pool.slots // 8)
        return self.pool.free_slots >= need

    def _admit(self) -> None:
        new: list[int] = []
        while self.next_group < len(self.groups):
            g = self.next_group
            if len(self.rows_of[g]) > self.pool.free_slots:
                break
            start = self.pool.take_prefix(self.prefix_len[g])
            if start is None:
                break
            self.prefix_start[g] = start
            for r in self.rows_of[g]:
                self.slot[r] = self.pool.take_slot()
            new.append(g)
            self.next_group += 1
        if not new:
            if not self.active:  # pool_shape sizes the pool for any one group
                raise RuntimeError("the key/value pool cannot hold the next group")
            return
        self.stats["admissions"] += 1
        t = time.perf_counter()
        for lo, hi in _chunks([self.prefix_len[g] for g in new], self.chunk):
            part = new[lo:hi]
            ids = [tok for g in part for tok in self.groups[g].prefix]
            pos = [i for g in part for i in range(self.prefix_len[g])]
            self.state.set_prefix_call(
                [self.prefix_start[g] for g in part], [self.prefix_len[g] for g in part]
            )
            self._prefill(ids, pos, None)
        t = self.tick("prefix_prefill", t)
        rows = [r for g in new for r in self.rows_of[g]]
        for lo, hi in _chunks([self.suffix_len[r] for r in rows], self.chunk):
            part = rows[lo:hi]
            ids, pos, last = [], [], []
            for r in part:
                g = self.row_group[r]
                suffix = self.groups[g].suffixes[r - self.rows_of[g][0]]
                ids.extend(suffix)
                pos.extend(range(self.prefix_len[g], self.prefix_len[g] + len(suffix)))
                last.append(len(ids) - 1)
            self.state.set_suffix_call(self._rows_layout(part))
            scores = self._prefill(ids, pos, last)
            assert scores is not None
            rows_t = torch.tensor(part, dtype=torch.long, device=self.device)
            done = self._record(part, rows_t, torch.zeros_like(rows_t), scores)
            self.active.extend(r for r in part if r not in done)
            self._finish(done)
        self.tick("suffix_prefill", t)

    def _prefill(self, ids: list[int], pos: list[int], keep: list[int] | None) -> Any:
        """One packed prefill forward; float32 logits of the ``keep`` tokens (None: none)."""
        ids_t = torch.tensor(ids, device=self.device)
        pos_t = torch.tensor(pos, device=self.device)
        keep_t = None if keep is None else torch.tensor(keep, device=self.device)
        if self.fused is not None:
            try:
                return self.fused.forward(self.state, ids_t, pos_t, keep_t)
            except torch.OutOfMemoryError:
                raise
            except Exception as exc:  # a compile that failed here (no Triton, no compiler)
                # The call only wrote keys/values the model's forward writes again.
                logger.warning("cascade prefill by the model instead: %s", exc, exc_info=True)
                self.fused = None
                self.state.merge = merge_attention
        out = self.model(
            input_ids=ids_t[None],
            position_ids=pos_t[None],
            use_cache=False,
            logits_to_keep=1 if keep_t is None else keep_t,
            cascade=self.state,
        )
        return None if keep_t is None else out.logits[0].float()

    # -- decode ---------------------------------------------------------------------------

    def _record(
        self, rows: list[int], rows_t: torch.Tensor, counts: torch.Tensor, scores: torch.Tensor
    ) -> set[int]:
        """Pick each row's next token; returns the rows that are now done."""
        if self.processor is not None:
            scores = self.processor(DecodeStep(rows_t, counts, self.history), scores)
        token = scores.argmax(-1)
        self.history[rows_t, counts] = token
        self.last[rows_t] = token
        self.counts[rows_t] = counts + 1
        # One host sync per step, and only when an EOS can end a row early.
        is_eos = torch.isin(token, self.eos).tolist() if self.eos.numel() else None
        done = set()
        for i, r in enumerate(rows):
            self.count[r] += 1
            if self.count[r] >= self.max_new or (is_eos is not None and is_eos[i]):
                done.add(r)
        return done

    def _finish(self, done: set[int]) -> None:
        for r in done:
            self.pool.give_slot(self.slot[r])
            g = self.row_group[r]
            self.rows_left[g] -= 1
            if self.rows_left[g] == 0:
                self.pool.give_prefix(self.prefix_start[g], self.prefix_len[g])

    def _decode(
        self, rows_t: torch.Tensor, first_pos: torch.Tensor, counts: torch.Tensor
    ) -> torch.Tensor:
        """Next-token scores [active rows, vocab] (float32) of one decode forward."""
        ids, pos = self.last[rows_t][:, None], (first_pos + counts - 1)[:, None]
        if self.graphs is not None:
            try:
                return self.graphs.step(ids, pos)
            except RuntimeError as exc:  # a capture refused (an op that syncs, an old driver)
                logger.warning("cascade decode without CUDA graphs: %s", exc, exc_info=True)
                self.graphs = None
        self.state.mode = "decode"
        out = self.model(input_ids=ids, position_ids=pos, use_cache=False, cascade=self.state)
        return out.logits[:, -1, :].float()

    def _rows_layout(self, rows: list[int]) -> RowsLayout:
        segs = _runs([self.row_group[r] for r in rows])
        return RowsLayout(
            slots=[self.slot[r] for r in rows],
            suffix_lens=[self.suffix_len[r] for r in rows],
            segments=[n for _g, n in segs],
            prefix_starts=[self.prefix_start[g] for g, _n in segs],
            prefix_lens=[self.prefix_len[g] for g, _n in segs],
        )

    def _layout(self) -> tuple[torch.Tensor, torch.Tensor]:
        rows = self.active
        self.state.set_decode_layout(self._rows_layout(rows))
        rows_t = torch.tensor(rows, dtype=torch.long, device=self.device)
        return rows_t, self.first_pos[rows_t]

    def run(self, *, continuous: bool) -> list[list[list[int]]]:
        t = time.perf_counter()
        layout: tuple[torch.Tensor, torch.Tensor] | None = None
        # Static batching only: rows that are done but stay in the batch (decoded, discarded)
        # until the batch's longest row ends, as in a plain batched generate.
        idle: set[int] = set()
        while self.active or self.next_group < len(self.groups):
            if self._wants_admission(continuous):
                t = self.tick("decode", t)
                self._admit()
                t = time.perf_counter()
                layout = None
                if not self.active:
                    continue
            if layout is None:
                layout = self._layout()
            rows_t, first_pos = layout
            counts = self.counts[rows_t]
            self.state.set_decode_counts(counts)
            scores = self._decode(rows_t, first_pos, counts)
            self.stats["decode_steps"] += 1
            self.stats["row_steps"] += len(self.active)
            if idle:
                keep = [i for i, r in enumerate(self.active) if r not in idle]
                at = torch.tensor(keep, dtype=torch.long, device=self.device)
                live = [self.active[i] for i in keep]
                done = self._record(live, rows_t[at], counts[at], scores[at])
            else:
                done = self._record(self.active, rows_t, counts, scores)
            if not done:
                continue
            self._finish(done)
            if continuous:
                self.active = [r for r in self.active if r not in done]
                layout = None
            else:
                idle |= done
                if len(idle) == len(self.active):
                    self.active, idle, layout = [], set(), None
        self.tick("decode", t)
        history = self.history.tolist()
        result: list[list[list[int]]] = [[] for _ in self.groups]
        for r, g in enumerate(self.row_group):
            result[g].append(cut_at_eos(history[r][: self.count[r]], self.eos_set))
        return result


def _runs(keys: Sequence[int]) -> list[tuple[int, int]]:
    """(key, length) of each run of equal consecutive keys."""
    out: list[tuple[int, int]] = []
    for k in keys:
        if out and out[-1][0] == k:
            out[-1] = (k, out[-1][1] + 1)
        else:
            out.append((k, 1))
    return out
