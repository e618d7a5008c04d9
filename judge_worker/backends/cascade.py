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

Both parts run as variable-length ("varlen") attention over packed sequences: on CUDA through
PyTorch's FlashAttention-2 kernel (``aten._flash_attention_forward``, which returns the
log-sum-exp and takes ``seqused_k`` for rows whose buffers are longer than their contents); on
CPU, or for dtypes flash does not take, through a reference implementation in float32 (tests).

The model itself runs unchanged: its attention modules call the attention function registered
under :data:`CASCADE_ATTENTION` (transformers' ``AttentionInterface``), which receives the
per-call :class:`CascadeState` through the forward's keyword arguments; the model keeps no cache
of its own (``use_cache=False``) and builds no mask (custom implementations get none).
"""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from judge_worker.backends.prefix_decode import (
    DecodeStep,
    PrefixGroup,
    RowStepProcessor,
    cut_at_eos,
    kv_shape,
    phase_timer,
    text_config,
)

CASCADE_ATTENTION = "pollux_cascade"

logger = logging.getLogger(__name__)

# The private kernel the cascade calls on CUDA has no stable signature between PyTorch
# releases. These are the versions (major.minor) whose CUDA cascade tests and GPU benchmark
# passed (tests/judge_worker/test_cascade.py, bench/judge_gpu.py on an H100: the device
# machine's torch 2.11.0+cu130). Any version is still tried at start-up by
# `flash_varlen_problem`; an untested one that passes is used with a warning.
FLASH_TESTED_TORCH = ("2.11",)

# Model types whose modeling code forwards extra keyword arguments down to the attention
# function and whose layers all attend over the full context (no sliding window, no linear or
# recurrent layers): the cascade needs both.
CASCADE_MODEL_TYPES = frozenset({"llama", "qwen2", "qwen3", "mistral"})


def supports_cascade(model: Any) -> bool:
    """Whether :func:`generate_cascade` can run this model (its family, and on CUDA the
    FlashAttention kernel, checked once per device: see :func:`flash_varlen_problem`)."""
    device = getattr(model, "device", None)
    if isinstance(device, torch.device) and device.type == "cuda" and _flash_problem(device):
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


# --------------------------------------------------------------------------- varlen attention


def _flash_op() -> Callable[..., Any] | None:
    return getattr(torch.ops.aten, "_flash_attention_forward", None)


def flash_varlen_problem(
    device: torch.device | str, op: Callable[..., Any] | None = None
) -> str | None:
    """Why the FlashAttention varlen kernel cannot serve the cascade on `device` (None: it can).

    Calls `op` (default ``torch.ops.aten._flash_attention_forward``) the way
    :func:`varlen_attention` does, on a small causal and non-causal case with grouped-query
    heads and ``seqused_k``, and compares its output and log-sum-exp with the float32
    reference. A missing op, a changed signature (TypeError, RuntimeError) or a wrong result is
    a problem; the reason names the tested PyTorch versions. The caller falls back to the
    copy-prefix path (:mod:`judge_worker.backends.prefix_decode`).
    """
    version = torch.__version__.split("+")[0]
    tested = ", ".join(FLASH_TESTED_TORCH)
    op = op or _flash_op()
    if op is None:
        return f"torch {version} has no aten._flash_attention_forward (tested: torch {tested})"
    gen = torch.Generator(device="cpu").manual_seed(0)
    dt = torch.bfloat16
    q = torch.randn(7, 4, 64, generator=gen).to(device=device, dtype=dt)
    k = torch.randn(12, 2, 64, generator=gen).to(device=device, dtype=dt)
    v = torch.randn(12, 2, 64, generator=gen).to(device=device, dtype=dt)
    cu_q = torch.tensor([0, 3, 7], dtype=torch.int32, device=device)
    cu_k = torch.tensor([0, 6, 12], dtype=torch.int32, device=device)
    used = torch.tensor([5, 6], dtype=torch.int32, device=device)
    # The continuous batch finds sequences by their starts, in any order: the third case.
    starts_out_of_order = torch.tensor([6, 0, 0], dtype=torch.int32, device=device)
    cases = ((True, cu_k, used), (False, cu_k, used), (False, starts_out_of_order, used.flip(0)))
    try:
        for causal, starts, lens in cases:
            out, lse, *_ = op(
                q, k, v, cu_q, starts, 4, 6, 0.0, causal, False, scale=0.125, seqused_k=lens
            )
            ref_out, ref_lse = _varlen_reference(
                q, k, v, cu_q, starts, causal=causal, scale=0.125, seqused_k=lens
            )
            torch.testing.assert_close(out.float(), ref_out.float(), atol=3e-2, rtol=3e-2)
            torch.testing.assert_close(lse.transpose(0, 1).float(), ref_lse, atol=1e-2, rtol=1e-2)
    except (TypeError, RuntimeError, AssertionError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return (
            f"aten._flash_attention_forward of torch {version} does not work as the cascade "
            f"calls it ({type(exc).__name__}: {first}); tested: torch {tested}"
        )
    if not version.startswith(tuple(v + "." for v in FLASH_TESTED_TORCH)):
        logger.warning(
            "cascade attention: torch %s passed the start-up check but is untested "
            "(tested: torch %s)",
            version,
            tested,
        )
    return None


@cache
def _flash_problem(device: torch.device) -> str | None:
    """The start-up check, once per device; a problem is logged once, as an error."""
    problem = flash_varlen_problem(device)
    if problem:
        logger.error("cascade attention off, copy-prefix decoding instead: %s", problem)
    return problem


def varlen_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_q: torch.Tensor,
    cu_k: torch.Tensor,
    max_q: int,
    max_k: int,
    *,
    causal: bool,
    scale: float,
    seqused_k: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention over packed sequences; returns (output [Tq, Hq, D], log-sum-exp [Tq, Hq] fp32).

    Sequence ``i`` has queries ``q[cu_q[i]:cu_q[i+1]]`` and keys ``k[cu_k[i]:cu_k[i+1]]`` (or
    ``seqused_k[i]`` keys from ``cu_k[i]`` when given). ``Hq`` must be a multiple of ``Hk``
    (grouped-query attention). Causal masks align to the bottom right, as in FlashAttention.
    """
    if q.is_cuda and q.dtype in (torch.float16, torch.bfloat16):
        out, lse, *_ = torch.ops.aten._flash_attention_forward(
            q,
            k,
            v,
            cu_q,
            cu_k,
            max_q,
            max_k,
            0.0,
            causal,
            False,
            scale=scale,
            seqused_k=seqused_k,
        )
        # Varlen log-sum-exp comes as [heads, total_q].
        return out, lse.transpose(0, 1)
    return _varlen_reference(q, k, v, cu_q, cu_k, causal=causal, scale=scale, seqused_k=seqused_k)


def _varlen_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_q: torch.Tensor,
    cu_k: torch.Tensor,
    *,
    causal: bool,
    scale: float,
    seqused_k: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same contract as :func:`varlen_attention`, in float32 over padded sequences."""
    total_q, hq, dim = q.shape
    rep = hq // k.shape[1]
    cu_q, cu_k = cu_q.long(), cu_k.long()
    q_len = cu_q[1:] - cu_q[:-1]
    k_len = seqused_k.long() if seqused_k is not None else cu_k[1:] - cu_k[:-1]
    max_q, max_k = int(q_len.max()), int(k_len.max())
    qi = torch.arange(max_q, device=q.device)
    ki = torch.arange(max_k, device=q.device)
    q_valid = qi[None] < q_len[:, None]  # [S, max_q]
    k_valid = ki[None] < k_len[:, None]  # [S, max_k]
    q_idx = (cu_q[:-1, None] + qi[None]).clamp(max=total_q - 1)
    k_idx = (cu_k[:-1, None] + ki[None]).clamp(max=k.shape[0] - 1)
    qs = q[q_idx].float()  # [S, max_q, H, D]
    # Padding positions point at arbitrary slots (buffers are allocated uninitialised, NaN is
    # possible): zero them, since 0 * NaN would leak through the masked probabilities.
    pad = ~k_valid[:, :, None, None]
    ks = k[k_idx].float().masked_fill(pad, 0.0).repeat_interleave(rep, dim=2)
    vs = v[k_idx].float().masked_fill(pad, 0.0).repeat_interleave(rep, dim=2)
    scores = torch.einsum("sqhd,skhd->shqk", qs, ks) * scale
    allowed = k_valid[:, None, :]  # [S, 1, max_k]
    if causal:  # bottom-right aligned: query i sees keys up to i + (k_len - q_len)
        shift = (k_len - q_len)[:, None, None]
        allowed = allowed & (ki[None, None, :] <= qi[None, :, None] + shift)
    scores = scores.masked_fill(~allowed[:, None], float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)  # [S, H, max_q]
    probs = torch.exp(scores - lse[..., None]).nan_to_num(0.0)
    out = torch.einsum("shqk,skhd->sqhd", probs, vs)
    flat_out = torch.empty((total_q, hq, dim), dtype=q.dtype, device=q.device)
    flat_lse = torch.empty((total_q, hq), dtype=torch.float32, device=q.device)
    flat_out[q_idx[q_valid]] = out[q_valid].to(q.dtype)
    flat_lse[q_idx[q_valid]] = lse.transpose(1, 2)[q_valid]
    return flat_out, flat_lse


def merge_attention(
    out_a: torch.Tensor, lse_a: torch.Tensor, out_b: torch.Tensor, lse_b: torch.Tensor
) -> torch.Tensor:
    """Combine two attention results over disjoint key sets into the result over their union."""
    top = torch.maximum(lse_a, lse_b)
    w_a = torch.exp(lse_a - top)[..., None]
    w_b = torch.exp(lse_b - top)[..., None]
    merged = (out_a.float() * w_a + out_b.float() * w_b) / (w_a + w_b)
    return merged.to(out_a.dtype)


# --------------------------------------------------------------------------- storage and layout


class KVPool:
    """Key/value storage of a continuous batch, allocated once for the whole call.

    Prefix keys/values live in a token arena (per layer ``[arena tokens, kv heads, head dim]``);
    a group's prefix takes one contiguous range, first fit, and gives it back when the group's
    last row finishes. Row keys/values live in fixed-width slots (per layer ``[slots *
    row_width, kv heads, head dim]``): a row takes a free slot, holds its suffix then its
    generated tokens, and frees the slot when it finishes, for a waiting row to take. Nothing is
    moved: attention finds each sequence by its start (``cu_k``) and its length (``seqused_k``),
    so the starts of one call need not be in order.
    """

    def __init__(self, model: Any, arena_tokens: int, slots: int, row_width: int) -> None:
        n_layers, kv_heads, head_dim = kv_shape(model)
        dev, dtype = model.device, model.dtype
        shape_p = (arena_tokens, kv_heads, head_dim)
        # One more slot than rows: the scratch slot padding rows of a CUDA graph write to.
        shape_r = ((slots + 1) * row_width, kv_heads, head_dim)
        self.pk = [torch.empty(shape_p, dtype=dtype, device=dev) for _ in range(n_layers)]
        self.pv = [torch.empty(shape_p, dtype=dtype, device=dev) for _ in range(n_layers)]
        self.rk = [torch.empty(shape_r, dtype=dtype, device=dev) for _ in range(n_layers)]
        self.rv = [torch.empty(shape_r, dtype=dtype, device=dev) for _ in range(n_layers)]
        self.row_width = row_width
        self.slots = slots
        self.scratch = slots
        self._free_slots = list(range(slots - 1, -1, -1))  # pop() gives the lowest
        self._free_ranges: list[tuple[int, int]] = [(0, arena_tokens)]  # (start, size), sorted

    @staticmethod
    def slot_bytes(model: Any) -> int:
        """Bytes of one key/value token slot over all layers (keys and values)."""
        n_layers, kv_heads, head_dim = kv_shape(model)
        return 2 * n_layers * kv_heads * head_dim * (torch.finfo(model.dtype).bits // 8)

    @property
    def free_slots(self) -> int:
        return len(self._free_slots)

    def take_slot(self) -> int:
        return self._free_slots.pop()

    def give_slot(self, slot: int) -> None:
        self._free_slots.append(slot)

    def take_prefix(self, n: int) -> int | None:
        """Start of a free range of ``n`` arena tokens (first fit), or None when none is free."""
        for i, (start, size) in enumerate(self._free_ranges):
            if size >= n:
                if size == n:
                    del self._free_ranges[i]
                else:
                    self._free_ranges[i] = (start + n, size - n)
                return start
        return None

    def give_prefix(self, start: int, n: int) -> None:
        ranges = self._free_ranges
        i = bisect.bisect(ranges, (start, n))
        ranges.insert(i, (start, n))
        # Merge with the following, then with the preceding range.
        if i + 1 < len(ranges) and ranges[i][0] + ranges[i][1] == ranges[i + 1][0]:
            ranges[i] = (ranges[i][0], ranges[i][1] + ranges[i + 1][1])
            del ranges[i + 1]
        if i > 0 and ranges[i - 1][0] + ranges[i - 1][1] == ranges[i][0]:
            ranges[i - 1] = (ranges[i - 1][0], ranges[i - 1][1] + ranges[i][1])
            del ranges[i]


@dataclass(frozen=True)
class RowsLayout:
    """Rows in group order: each row's slot and suffix length; per group (a run of
    ``segments[j]`` consecutive rows) its prefix's arena start and length."""

    slots: list[int]
    suffix_lens: list[int]
    segments: list[int]
    prefix_starts: list[int]
    prefix_lens: list[int]


class CascadeState:
    """The pool and the current forward's layout, shared by all layers of one forward.

    Three kinds of forward: ``prefix`` (prefixes of new groups, packed, causal), ``suffix``
    (suffixes of new rows, packed: part A against their group's prefix, part B causal within
    the suffix) and ``decode`` (one token per active row: part A against the group's prefix,
    part B against the row's own slot).
    """

    def __init__(self, pool: KVPool, device: torch.device) -> None:
        self.pool = pool
        self.device = device
        self.mode = ""
        self.meta: dict[str, Any] = {}

    def _i32(self, values: Sequence[int]) -> torch.Tensor:
        return torch.tensor(list(values), dtype=torch.int32, device=self.device)

    def _long(self, values: Sequence[int]) -> torch.Tensor:
        return torch.tensor(list(values), dtype=torch.long, device=self.device)

    @staticmethod
    def _cu(lengths: Sequence[int]) -> list[int]:
        out = [0]
        for n in lengths:
            out.append(out[-1] + n)
        return out

    def set_prefix_call(self, starts: Sequence[int], lengths: Sequence[int]) -> None:
        """Next forward: these prefixes packed; prefix ``i`` goes to arena ``starts[i]``."""
        self.mode = "prefix"
        self.meta = {
            "cu": self._i32(self._cu(lengths)),
            "max": max(lengths),
            "write": self._long(
                [s + i for s, n in zip(starts, lengths, strict=True) for i in range(n)]
            ),
        }

    def set_suffix_call(self, rows: RowsLayout) -> None:
        """Next forward: these rows' suffixes packed (part A per group, part B per row)."""
        width = self.pool.row_width
        seg_q, i = [], 0
        for n in rows.segments:
            seg_q.append(sum(rows.suffix_lens[i : i + n]))
            i += n
        self.mode = "suffix"
        self.meta = {
            "cu_rows": self._i32(self._cu(rows.suffix_lens)),
            "max_row": max(rows.suffix_lens),
            "cu_seg": self._i32(self._cu(seg_q)),
            "max_seg": max(seg_q),
            "k_seg": self._i32([*rows.prefix_starts, 0]),
            "used_seg": self._i32(rows.prefix_lens),
            "max_k": max(rows.prefix_lens),
            "write": self._long(
                [
                    s * width + i
                    for s, n in zip(rows.slots, rows.suffix_lens, strict=True)
                    for i in range(n)
                ]
            ),
        }

    def set_decode_layout(self, rows: RowsLayout) -> None:
        """The active rows for the next decode forwards, until they change."""
        width = self.pool.row_width
        self.mode = "decode"
        self.meta = {
            "cu_q_groups": self._i32(self._cu(rows.segments)),
            "max_q_groups": max(rows.segments),
            "k_groups": self._i32([*rows.prefix_starts, 0]),
            "used_groups": self._i32(rows.prefix_lens),
            "max_prefix": max(rows.prefix_lens),
            "cu_q_rows": torch.arange(len(rows.slots) + 1, dtype=torch.int32, device=self.device),
            "k_rows": self._i32([*(s * width for s in rows.slots), 0]),
            "row_base": self._long([s * width for s in rows.slots]),
            "suffix_lens": self._long(rows.suffix_lens),
            "max_k": width,
        }

    def set_decode_counts(self, counts: torch.Tensor) -> None:
        """Next decode forward: ``counts[i]`` tokens generated so far by active row ``i``; the
        last of them is the forward's input, its keys/values go after the row's suffix."""
        m = self.meta
        used = m["suffix_lens"] + counts
        m["write"] = m["row_base"] + used - 1
        m["used"] = used.to(torch.int32)

    # -- attention (called by every layer) --------------------------------------------------

    def attend(
        self,
        layer: int,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        scale: float,
    ) -> torch.Tensor:
        """Attention output ``[batch, tokens, heads, dim]`` for the current call's layout."""
        m, pool = self.meta, self.pool
        if self.mode == "decode":
            # [rows, heads, 1, dim] -> [rows, heads, dim]
            q, k, v = query[:, :, 0], key[:, :, 0], value[:, :, 0]
            pool.rk[layer].index_copy_(0, m["write"], k)
            pool.rv[layer].index_copy_(0, m["write"], v)
            out_a, lse_a = varlen_attention(
                q,
                pool.pk[layer],
                pool.pv[layer],
                m["cu_q_groups"],
                m["k_groups"],
                m["max_q_groups"],
                m["max_prefix"],
                causal=False,
                scale=scale,
                seqused_k=m["used_groups"],
            )
            out_b, lse_b = varlen_attention(
                q,
                pool.rk[layer],
                pool.rv[layer],
                m["cu_q_rows"],
                m["k_rows"],
                1,
                m["max_k"],
                causal=False,
                scale=scale,
                seqused_k=m["used"],
            )
            return merge_attention(out_a, lse_a, out_b, lse_b)[:, None]
        # Prefill: one packed sequence batch, [1, heads, tokens, dim] -> [tokens, heads, dim].
        q = query[0].transpose(0, 1)
        k = key[0].transpose(0, 1)
        v = value[0].transpose(0, 1)
        if self.mode == "prefix":
            pool.pk[layer].index_copy_(0, m["write"], k)
            pool.pv[layer].index_copy_(0, m["write"], v)
            out, _ = varlen_attention(
                q, k, v, m["cu"], m["cu"], m["max"], m["max"], causal=True, scale=scale
            )
            return out[None]
        if self.mode == "suffix":
            pool.rk[layer].index_copy_(0, m["write"], k)
            pool.rv[layer].index_copy_(0, m["write"], v)
            out_a, lse_a = varlen_attention(
                q,
                pool.pk[layer],
                pool.pv[layer],
                m["cu_seg"],
                m["k_seg"],
                m["max_seg"],
                m["max_k"],
                causal=False,
                scale=scale,
                seqused_k=m["used_seg"],
            )
            out_b, lse_b = varlen_attention(
                q,
                k,
                v,
                m["cu_rows"],
                m["cu_rows"],
                m["max_row"],
                m["max_row"],
                causal=True,
                scale=scale,
            )
            return merge_attention(out_a, lse_a, out_b, lse_b)[None]
        raise RuntimeError(f"cascade state has no call layout (mode {self.mode!r})")


def _cascade_attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    cascade: CascadeState | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    if cascade is None:
        # Outside generate_cascade the model behaves as with SDPA.
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
        )
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    return cascade.attend(module.layer_idx, query, key, value, scale), None  # type: ignore[arg-type]


AttentionInterface.register(CASCADE_ATTENTION, _cascade_attention_forward)


@contextmanager
def _cascade_implementation(model: Any) -> Iterator[None]:
    """Route the model's attention through the cascade function for the duration."""
    configs = {
        id(mod.config): mod.config
        for mod in model.modules()
        if hasattr(mod, "layer_idx") and hasattr(mod, "config")
    }
    before = {key: cfg._attn_implementation for key, cfg in configs.items()}
    for cfg in configs.values():
        cfg._attn_implementation = CASCADE_ATTENTION
    try:
        yield
    finally:
        for key, cfg in configs.items():
            cfg._attn_implementation = before[key]


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
    (:class:`_DecodeGraphs`) unless ``cuda_graphs`` is False.
    """
    if not any(grp.suffixes for grp in groups):
        return [[] for _ in groups]
    live = [grp for grp in groups if grp.suffixes]
    if any(len(grp.prefix) == 0 for grp in live):
        raise ValueError("every prefix needs at least one token")
    if any(len(s) == 0 for grp in live for s in grp.suffixes):
        raise ValueError("every suffix needs at least one token")
    arena, slots, width = pool_shape(live, max_new_tokens, max_rows=max_rows, kv_slots=kv_slots)
    with torch.inference_mode(), _cascade_implementation(model):
        run = _ContinuousRun(
            model,
            live,
            KVPool(model, arena, slots, width),
            max_new_tokens=max_new_tokens,
            eos_token_ids=eos_token_ids,
            pad_token_id=pad_token_id,
            step_processor=step_processor,
            prefill_chunk_tokens=prefill_chunk_tokens,
            timings=timings,
        )
        if cuda_graphs and run.device.type == "cuda" and model.dtype in _FLASH_DTYPES:
            run.graphs = _DecodeGraphs(run)
        try:
            per_live = run.run(continuous=continuous)
        finally:
            run.graphs = None  # the graphs refer to the run: free the pool with the run
    if stats is not None:
        stats.update(run.stats)
    it = iter(per_live)
    return [next(it) if grp.suffixes else [] for grp in groups]


class _ContinuousRun:
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
        timings: dict[str, float] | None,
    ) -> None:
        self.model, self.groups, self.pool = model, groups, pool
        self.device = device = model.device
        self.state = CascadeState(pool, device)
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
        self.graphs: _DecodeGraphs | None = None
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
            self.model(
                input_ids=torch.tensor([ids], device=self.device),
                position_ids=torch.tensor([pos], device=self.device),
                use_cache=False,
                logits_to_keep=1,
                cascade=self.state,
            )
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
            out = self.model(
                input_ids=torch.tensor([ids], device=self.device),
                position_ids=torch.tensor([pos], device=self.device),
                use_cache=False,
                logits_to_keep=torch.tensor(last, device=self.device),
                cascade=self.state,
            )
            scores = out.logits[0].float()
            del out
            rows_t = torch.tensor(part, dtype=torch.long, device=self.device)
            done = self._record(part, rows_t, torch.zeros_like(rows_t), scores)
            self.active.extend(r for r in part if r not in done)
            self._finish(done)
        self.tick("suffix_prefill", t)

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


_FLASH_DTYPES = (torch.bfloat16, torch.float16)
# Padded row counts of the decode graphs: at most a third of a step's rows are padding.
_GRAPH_BUCKETS = (8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048)


class _DecodeGraphs:
    """The decode forward as CUDA graphs, one per padded row count, captured when first needed.

    Eagerly a decode step launches some 40 kernels per layer from Python; with few rows the GPU
    waits on the host (H100, 7B shape: 16-32 ms a step at 96 rows against 46-50 ms at 768),
    while at 768 rows the step is the GPU's own (the fixed workload's decode: 6.83 s with
    graphs, 7.03 s eager). A graph launches them at once: it pays where batches are small (a
    32B model beside its weights, the tail of a variable-length run). The active rows are
    padded to the next bucket: a padding row belongs to no group (part A skips it), attends to
    and writes the pool's scratch slot (part B), and its output is dropped. The layout goes
    into the graph's own input tensors before each replay; the maxima the kernels take as
    plain numbers are fixed for the run (the largest group, the longest prefix, the row
    width). All graphs share one memory pool.
    """

    def __init__(self, run: _ContinuousRun) -> None:
        self.run = run
        self.mempool = torch.cuda.graph_pool_handle()
        self.graphs: dict[int, tuple[Any, dict[str, Any], torch.Tensor]] = {}

    def _inputs(self, rows: int) -> dict[str, Any]:
        dev, pool = self.run.device, self.run.pool
        scratch = pool.scratch * pool.row_width

        def i32(n: int, fill: int) -> torch.Tensor:
            return torch.full((n,), fill, dtype=torch.int32, device=dev)

        return {
            "cu_q_groups": i32(rows + 1, 0),
            "max_q_groups": self.run.largest_group,
            "k_groups": i32(rows + 1, 0),
            "used_groups": i32(rows, 0),
            "max_prefix": self.run.longest_prefix,
            "cu_q_rows": torch.arange(rows + 1, dtype=torch.int32, device=dev),
            "k_rows": i32(rows + 1, scratch),
            "max_k": pool.row_width,
            "write": torch.full((rows,), scratch, dtype=torch.long, device=dev),
            "used": i32(rows, 1),
            "ids": torch.zeros((rows, 1), dtype=torch.long, device=dev),
            "pos": torch.zeros((rows, 1), dtype=torch.long, device=dev),
        }

    def _forward(self, inputs: dict[str, Any]) -> torch.Tensor:
        state = self.run.state
        state.mode, state.meta = "decode", inputs
        out = self.run.model(
            input_ids=inputs["ids"], position_ids=inputs["pos"], use_cache=False, cascade=state
        )
        logits: torch.Tensor = out.logits
        return logits

    def _capture(self, rows: int) -> tuple[Any, dict[str, Any], torch.Tensor]:
        inputs = self._inputs(rows)
        dev = self.run.device
        # The graph's memory pool is its own: hand the prefills' cached blocks back first.
        torch.cuda.empty_cache()
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):  # warm-up off the capture (lazy inits, allocator)
            for _ in range(2):
                self._forward(inputs)
        torch.cuda.current_stream(dev).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.mempool):
            logits = self._forward(inputs)
        self.run.stats["graphs"] += 1
        return graph, inputs, logits

    def step(self, ids: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """Replay the decode forward for the layout in ``run.state.meta``; float32 scores."""
        real = self.run.state.meta
        n = ids.shape[0]
        rows = next((b for b in _GRAPH_BUCKETS if b >= n), n)
        if rows not in self.graphs:
            try:
                self.graphs[rows] = self._capture(rows)
            finally:
                self.run.state.meta = real
        graph, inputs, logits = self.graphs[rows]
        pool = self.run.pool
        scratch = pool.scratch * pool.row_width
        groups = real["used_groups"].shape[0]
        inputs["cu_q_groups"][: groups + 1].copy_(real["cu_q_groups"])
        inputs["cu_q_groups"][groups + 1 :].fill_(n)
        inputs["k_groups"][:groups].copy_(real["k_groups"][:groups])
        inputs["used_groups"][:groups].copy_(real["used_groups"])
        inputs["used_groups"][groups:].zero_()
        inputs["k_rows"][:n].copy_(real["k_rows"][:n])
        inputs["k_rows"][n:].fill_(scratch)
        inputs["write"][:n].copy_(real["write"])
        inputs["write"][n:].fill_(scratch)
        inputs["used"][:n].copy_(real["used"])
        inputs["used"][n:].fill_(1)
        inputs["ids"][:n].copy_(ids)
        inputs["ids"][n:].zero_()
        inputs["pos"][:n].copy_(pos)
        inputs["pos"][n:].zero_()
        graph.replay()
        return logits[:n, -1, :].float()


def _runs(keys: Sequence[int]) -> list[tuple[int, int]]:
    """(key, length) of each run of equal consecutive keys."""
    out: list[tuple[int, int]] = []
    for k in keys:
        if out and out[-1][0] == k:
            out[-1] = (k, out[-1][1] + 1)
        else:
            out.append((k, 1))
    return out
