"""Greedy generation with a shared prompt prefix computed once per group.

All criteria of one answer share the prompt up to the criterion section (chat head, instruction,
reference, answer). The prefix is prefilled once per answer; its keys/values are copied into
every criterion row of a preallocated cache; only the criterion suffixes are then prefilled,
and a greedy decode loop runs over all rows.

Why not ``model.generate(past_key_values=...)``: ``DynamicCache`` grows by ``torch.cat`` and thus
copies the whole cache at every decode step (tens of GB per step at batch 256 on a 7B model), and
a cache expanded from one prefix cannot be shared across several answers of different prefix
lengths in one batch. A ``DynamicLayer`` backed by a preallocated buffer keeps the library's
mask and position handling and drops the copies.

Row layout in the cache: ``[pad][prefix, right-aligned at pmax][pad][suffix, right-aligned]``
then generated tokens. Positions are logical (RoPE is applied before caching), padding columns
are masked out, so a row's computation equals that of its unpadded prompt.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

# (generated ids so far [rows, t], next-token scores [rows, vocab]) -> scores
StepProcessor = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
# (phase name, start of the phase) -> now
NextPhase = Callable[[str, float], float]


@dataclass(frozen=True)
class DecodeStep:
    """The rows about to pick a token, for a step processor of a continuous batch.

    ``rows[i]`` is the row (in the order of the call's groups and suffixes) of score row ``i``;
    ``counts[i]`` the tokens it generated so far, which are ``history[rows[i], :counts[i]]``.
    """

    rows: torch.Tensor
    counts: torch.Tensor
    history: torch.Tensor


# (the rows, next-token scores [rows, vocab]) -> scores; rows come and go between steps
RowStepProcessor = Callable[[DecodeStep, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class PrefixGroup:
    """One shared prefix (token ids) and the suffixes (token ids) that continue it."""

    prefix: Sequence[int]
    suffixes: Sequence[Sequence[int]]


class PreallocLayer(DynamicLayer):
    """A DynamicLayer over a preallocated buffer: ``update`` writes in place, returns a view."""

    def __init__(self, k_buf: torch.Tensor, v_buf: torch.Tensor, length: int) -> None:
        super().__init__()
        self.k_buf, self.v_buf, self.length = k_buf, v_buf, length
        self.keys, self.values = k_buf[:, :, :length], v_buf[:, :, :length]
        self.device = k_buf.device
        self.dtype = k_buf.dtype
        self.is_initialized = True

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        n = key_states.shape[-2]
        if self.length + n > self.k_buf.shape[2]:
            raise RuntimeError("preallocated KV cache overflow")
        self.k_buf[:, :, self.length : self.length + n].copy_(key_states)
        self.v_buf[:, :, self.length : self.length + n].copy_(value_states)
        self.length += n
        self.keys = self.k_buf[:, :, : self.length]
        self.values = self.v_buf[:, :, : self.length]
        return self.keys, self.values


def _prealloc_cache(
    kbufs: list[torch.Tensor], vbufs: list[torch.Tensor], length: int, rows: slice
) -> DynamicCache:
    cache = DynamicCache()
    # Slicing the batch dimension gives views, so chunked prefills write the shared buffers.
    cache.layers = [
        PreallocLayer(k[rows], v[rows], length) for k, v in zip(kbufs, vbufs, strict=True)
    ]
    return cache


def text_config(model: Any) -> Any:
    """The language model's config (a multimodal model keeps it apart)."""
    cfg = model.config
    return cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg


def kv_shape(model: Any) -> tuple[int, int, int]:
    """(layers, key/value heads, head dim) of the model's attention cache."""
    cfg = text_config(model)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return cfg.num_hidden_layers, cfg.num_key_value_heads, head_dim


# SDPA backends for generate_shared: cuDNN attention is left out because it builds an execution
# plan per new shape, and a decode loop presents a new key length at every step (measured on an
# H200: ~77 ms per decode step with cuDNN chosen vs ~25 ms for the same step at a fixed shape).
SDPA_BACKENDS = [
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.MATH,
]


def generate_shared(
    model: Any,
    groups: Sequence[PrefixGroup],
    **kwargs: Any,
) -> list[list[list[int]]]:
    """Greedy-decode every suffix of every group; see :func:`_generate_shared` for arguments."""
    with torch.inference_mode(), sdpa_kernel(SDPA_BACKENDS):
        return _generate_shared(model, groups, **kwargs)


def _generate_shared(
    model: Any,
    groups: Sequence[PrefixGroup],
    *,
    max_new_tokens: int,
    eos_token_ids: Sequence[int] = (),
    pad_token_id: int = 0,
    step_processor: StepProcessor | None = None,
    suffix_chunk_rows: int = 64,
    timings: dict[str, float] | None = None,
) -> list[list[list[int]]]:
    """Greedy-decode every suffix of every group; returns ids per group per suffix.

    Generation of a row stops after its first EOS (kept in the output); the loop stops when all
    rows are done or after ``max_new_tokens``. With no EOS ids, exactly ``max_new_tokens`` are
    produced (benchmarks with random weights).
    """
    device = model.device
    dtype = model.dtype
    n_layers, kv_heads, head_dim = kv_shape(model)
    rows = [(g, s) for g, grp in enumerate(groups) for s in range(len(grp.suffixes))]
    if not rows:
        return [[] for _ in groups]
    # A suffix must not be empty: the prefill needs at least one token per row to produce the
    # first logits. Callers split off at most len(prompt) - 1 tokens as prefix.
    if any(len(groups[g].suffixes[s]) == 0 for g, s in rows):
        raise ValueError("every suffix needs at least one token")
    pmax = max(len(grp.prefix) for grp in groups)
    smax = max(len(groups[g].suffixes[s]) for g, s in rows)
    width = pmax + smax
    total = width + max_new_tokens
    n_rows = len(rows)
    kbufs = [
        torch.zeros((n_rows, kv_heads, total, head_dim), dtype=dtype, device=device)
        for _ in range(n_layers)
    ]
    vbufs = [torch.zeros_like(k) for k in kbufs]
    mask = torch.zeros((n_rows, total), dtype=torch.long)
    mask[:, width:] = 1  # generated columns; sliced per step
    suffix_ids = torch.full((n_rows, smax), pad_token_id, dtype=torch.long)
    suffix_pos = torch.zeros((n_rows, smax), dtype=torch.long)
    next_pos = torch.zeros((n_rows, 1), dtype=torch.long)

    tick = phase_timer(device, timings)
    t = time.perf_counter()
    r = 0
    for grp in groups:
        plen = len(grp.prefix)
        nsuf = len(grp.suffixes)
        if plen:
            cache = DynamicCache()
            model(
                input_ids=torch.tensor([list(grp.prefix)], device=device),
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,
            )
            for layer, (kb, vb) in enumerate(zip(kbufs, vbufs, strict=True)):
                # Full-attention models only: their cache layers always hold keys/values.
                layer_cache = cache.layers[layer]
                kb[r : r + nsuf, :, pmax - plen : pmax] = layer_cache.keys  # type: ignore[union-attr,assignment]
                vb[r : r + nsuf, :, pmax - plen : pmax] = layer_cache.values  # type: ignore[union-attr,assignment]
            del cache
        for s, suffix in enumerate(grp.suffixes):
            slen = len(suffix)
            mask[r + s, pmax - plen : pmax] = 1
            mask[r + s, width - slen : width] = 1
            suffix_ids[r + s, smax - slen :] = torch.tensor(list(suffix))
            suffix_pos[r + s, smax - slen :] = torch.arange(plen, plen + slen)
            next_pos[r + s, 0] = plen + slen
        r += nsuf
    t = tick("prefix_prefill", t)

    mask_dev = mask.to(device)
    suffix_ids_dev = suffix_ids.to(device)
    suffix_pos_dev = suffix_pos.to(device)
    first = []
    # Chunk the suffix prefill over rows: its activations (MLP, repeated KV heads in attention)
    # scale with rows x suffix length x cache length and would dominate peak memory.
    for lo in range(0, n_rows, suffix_chunk_rows):
        hi = min(n_rows, lo + suffix_chunk_rows)
        cache = _prealloc_cache(kbufs, vbufs, pmax, slice(lo, hi))
        out = model(
            input_ids=suffix_ids_dev[lo:hi],
            attention_mask=mask_dev[lo:hi, :width],
            position_ids=suffix_pos_dev[lo:hi],
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        first.append(out.logits[:, -1, :].float())
        del cache, out
    scores = torch.cat(first, dim=0)
    t = tick("suffix_prefill", t)

    cache = _prealloc_cache(kbufs, vbufs, width, slice(0, n_rows))
    pos = next_pos.to(device)

    def next_scores(step: int, generated: torch.Tensor) -> torch.Tensor:
        out = model(
            input_ids=generated[:, -1:],
            attention_mask=mask_dev[:, : width + step],
            position_ids=pos + (step - 1),
            past_key_values=cache,
            use_cache=True,
        )
        return out.logits[:, -1, :].float()

    return decode_groups(
        scores,
        next_scores,
        rows,
        len(groups),
        max_new_tokens=max_new_tokens,
        eos_token_ids=eos_token_ids,
        pad_token_id=pad_token_id,
        step_processor=step_processor,
        tick=tick,
        since=t,
    )


def phase_timer(device: torch.device, timings: dict[str, float] | None) -> NextPhase:
    """``tick(name, since) -> now``: adds the time since ``since`` to ``timings[name]``."""

    def tick(name: str, since: float) -> float:
        now = time.perf_counter()
        if timings is not None:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
                now = time.perf_counter()
            timings[name] = timings.get(name, 0.0) + now - since
        return now

    return tick


def greedy_decode(
    first_scores: torch.Tensor,
    next_scores: Callable[[int, torch.Tensor], torch.Tensor],
    *,
    max_new_tokens: int,
    eos_token_ids: Sequence[int],
    pad_token_id: int,
    step_processor: StepProcessor | None,
) -> torch.Tensor:
    """The greedy loop both engines share; returns the generated ids ``[rows, steps]``.

    ``next_scores(step, generated)`` runs the forward pass of decode step ``step`` (>= 1) on the
    last generated column. A row that produced an EOS gets ``pad_token_id`` afterwards; the loop
    stops when every row is done or after ``max_new_tokens``.
    """
    device = first_scores.device
    n_rows = first_scores.shape[0]
    eos = torch.tensor(list(eos_token_ids), dtype=torch.long, device=device)
    done = torch.zeros(n_rows, dtype=torch.bool, device=device)
    generated = torch.empty((n_rows, 0), dtype=torch.long, device=device)
    scores = first_scores
    for step in range(max_new_tokens):
        if step > 0:
            scores = next_scores(step, generated)
        if step_processor is not None:
            scores = step_processor(generated, scores)
        token = scores.argmax(-1)
        token = torch.where(done, torch.full_like(token, pad_token_id), token)
        generated = torch.cat([generated, token[:, None]], dim=1)
        if eos.numel():
            done |= torch.isin(token, eos)
            # One host sync per step to stop early; cheap next to a forward pass.
            if bool(done.all()):
                break
    return generated


def decode_groups(
    first_scores: torch.Tensor,
    next_scores: Callable[[int, torch.Tensor], torch.Tensor],
    rows: Sequence[tuple[int, int]],
    n_groups: int,
    *,
    max_new_tokens: int,
    eos_token_ids: Sequence[int],
    pad_token_id: int,
    step_processor: StepProcessor | None,
    tick: NextPhase,
    since: float,
) -> list[list[list[int]]]:
    """The decode phase both engines end with: the greedy loop (timed as "decode" since
    ``since``), then the generated ids per group per suffix; the engines differ only in
    ``next_scores``, their forward pass of one step."""
    generated = greedy_decode(
        first_scores,
        next_scores,
        max_new_tokens=max_new_tokens,
        eos_token_ids=eos_token_ids,
        pad_token_id=pad_token_id,
        step_processor=step_processor,
    )
    tick("decode", since)
    return split_by_group(rows, generated, n_groups, eos_token_ids)


def cut_at_eos(ids: Sequence[int], eos: Collection[int]) -> list[int]:
    """The ids up to and including the first EOS (all of them when there is none)."""
    for i, tok in enumerate(ids):
        if tok in eos:
            return list(ids[: i + 1])
    return list(ids)


def split_by_group(
    rows: Sequence[tuple[int, int]],
    generated: torch.Tensor,
    n_groups: int,
    eos_token_ids: Sequence[int],
) -> list[list[list[int]]]:
    """Generated ids per group per suffix, each cut after its first EOS."""
    result: list[list[list[int]]] = [[] for _ in range(n_groups)]
    eos_set = set(eos_token_ids)
    for (g, _s), ids in zip(rows, generated.tolist(), strict=True):
        result[g].append(cut_at_eos(ids, eos_set))
    return result
