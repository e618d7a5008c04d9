"""The cascade's key/value storage and its attention function, called by every layer.

:class:`KVPool` holds the keys/values of a continuous batch (prefixes once, in an arena; rows in
fixed-width slots); :class:`CascadeState` holds the pool and the layout of the current forward
and computes each layer's attention in two parts merged through their log-sum-exp (see
:mod:`judge_worker.backends.cascade`). The model calls it through the attention function
registered under :data:`CASCADE_ATTENTION` (transformers' ``AttentionInterface``), which
receives the state through the forward's keyword arguments.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from judge_worker.backends.prefix_decode import kv_shape
from judge_worker.backends.varlen import (
    merge_attention,
    pack_gqa,
    unpack_gqa,
    varlen_attention,
    varlen_attention_packed,
)

CASCADE_ATTENTION = "pollux_cascade"

# How a decode step's attention treats the query heads that share a key/value head
# (grouped-query attention, 7 per key/value head in Qwen2-7B). "off": one query row per head,
# so the kernel reads each key/value block once per query head; "prefix": part A (the rows of a
# group against their prefix) with the group's query heads packed into query rows, each prefix
# block read once per key/value head; "both": part B (each row against its own keys) packed
# too. The merge is the same in all three (it works per row and head).
GQA_PACKING = ("off", "prefix", "both")


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

    def __init__(self, pool: KVPool, device: torch.device, gqa_packing: str = "off") -> None:
        if gqa_packing not in GQA_PACKING:
            raise ValueError(f"gqa_packing must be one of {GQA_PACKING}, not {gqa_packing!r}")
        self.pool = pool
        self.device = device
        self.gqa_packing = gqa_packing
        self.mode = ""
        self.meta: dict[str, Any] = {}
        # The suffix call's merge of its two parts; the fused prefill swaps in a compiled one.
        self.merge: Callable[..., torch.Tensor] = merge_attention

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
            if self.gqa_packing == "off":
                return self._decode_unpacked(layer, q, scale)[:, None]
            return self._decode_packed(layer, q, scale)[:, None]
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
            return self.merge(out_a, lse_a, out_b, lse_b)[None]
        raise RuntimeError(f"cascade state has no call layout (mode {self.mode!r})")

    def _decode_unpacked(self, layer: int, q: torch.Tensor, scale: float) -> torch.Tensor:
        m, pool = self.meta, self.pool
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
        return merge_attention(out_a, lse_a, out_b, lse_b)

    def _decode_packed(self, layer: int, q: torch.Tensor, scale: float) -> torch.Tensor:
        """The decode step's two parts with GQA packing (see :data:`GQA_PACKING`)."""
        m, pool = self.meta, self.pool
        heads, kv_heads = q.shape[1], pool.pk[layer].shape[1]
        rep = heads // kv_heads
        qp = pack_gqa(q, kv_heads)
        out_a, lse_a = varlen_attention_packed(
            qp,
            pool.pk[layer],
            pool.pv[layer],
            m["cu_q_groups"],
            m["k_groups"],
            m["max_q_groups"],
            m["max_prefix"],
            rep=rep,
            scale=scale,
            seqused_k=m["used_groups"],
        )
        if self.gqa_packing == "both":
            out_b, lse_b = varlen_attention_packed(
                qp,
                pool.rk[layer],
                pool.rv[layer],
                m["cu_q_rows"],
                m["k_rows"],
                1,
                m["max_k"],
                rep=rep,
                scale=scale,
                seqused_k=m["used"],
            )
            # Merged in the packed layout (per row and head), unpacked once.
            merged = merge_attention(out_a, lse_a, out_b, lse_b)
            return unpack_gqa(merged, heads)
        out_a, lse_a = unpack_gqa(out_a, heads), unpack_gqa(lse_a, heads)
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
        return merge_attention(out_a, lse_a, out_b, lse_b)


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
def cascade_implementation(model: Any) -> Iterator[None]:
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
