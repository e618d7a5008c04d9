"""Attention over packed variable-length ("varlen") sequences, with its log-sum-exp.

On CUDA (bf16/fp16) it calls PyTorch's FlashAttention-2 kernel
(``aten._flash_attention_forward``, which returns the log-sum-exp and takes ``seqused_k`` for
sequences whose buffers are longer than their contents); elsewhere a float32 reference
implements the same contract (tests, CPU). The kernel is private, so :func:`flash_varlen_problem`
checks at start-up that it still behaves as called here. :func:`merge_attention` combines two
results over disjoint key sets exactly, which the cascade
(:mod:`judge_worker.backends.cascade`) relies on; :func:`pack_gqa` and
:func:`varlen_attention_packed` put the query heads of a key/value group into query rows for
its decode steps, so the kernel reads each key/value block once per group.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cache
from typing import Any

import torch

logger = logging.getLogger(__name__)

# The dtypes the FlashAttention kernel takes; others go to the float32 reference.
FLASH_DTYPES = (torch.bfloat16, torch.float16)

# The private kernel the cascade calls on CUDA has no stable signature between PyTorch
# releases. These are the versions (major.minor) whose CUDA cascade tests and GPU benchmark
# passed (tests/judge_worker/test_cascade.py, bench/judge_gpu.py on an H100: the device
# machine's torch 2.11.0+cu130). Any version is still tried at start-up by
# `flash_varlen_problem`; an untested one that passes is used with a warning.
FLASH_TESTED_TORCH = ("2.11",)


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
def flash_problem(device: torch.device) -> str | None:
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
    if q.is_cuda and q.dtype in FLASH_DTYPES:
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


def pack_gqa(q: torch.Tensor, kv_heads: int) -> torch.Tensor:
    """Queries ``[tokens, heads, dim]`` as ``[tokens * rep, kv_heads, dim]`` (``rep = heads //
    kv_heads``): the ``rep`` query heads that share a key/value head become ``rep`` consecutive
    query rows of that head, so a kernel that tiles query rows per head reads each key/value
    block once per group instead of once per query head. Only for non-causal attention: the
    packed rows of one token share its position (one decode token per row)."""
    tokens, heads, dim = q.shape
    rep = heads // kv_heads
    # Query head h attends with key/value head h // rep (transformers' repeat_kv order).
    return q.view(tokens, kv_heads, rep, dim).transpose(1, 2).reshape(tokens * rep, kv_heads, dim)


def unpack_gqa(x: torch.Tensor, heads: int) -> torch.Tensor:
    """The inverse of :func:`pack_gqa`, for an output ``[tokens * rep, kv_heads, dim]`` or a
    log-sum-exp ``[tokens * rep, kv_heads]``: ``[tokens, heads(, dim)]``."""
    packed, kv_heads, *rest = x.shape
    rep = heads // kv_heads
    tokens = packed // rep
    return x.view(tokens, rep, kv_heads, *rest).transpose(1, 2).reshape(tokens, heads, *rest)


def varlen_attention_packed(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_q: torch.Tensor,
    cu_k: torch.Tensor,
    max_q: int,
    max_k: int,
    *,
    rep: int,
    scale: float,
    seqused_k: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-causal :func:`varlen_attention` with the query heads of each key/value group packed
    into query rows (:func:`pack_gqa`).

    ``q`` is the packed queries ``[Tq * rep, Hk, D]`` (``rep`` query heads per key/value
    head); ``cu_q`` and ``max_q`` count unpacked tokens, as for :func:`varlen_attention`.
    Returns the packed result (output ``[Tq * rep, Hk, D]``, log-sum-exp ``[Tq * rep, Hk]``):
    :func:`merge_attention` takes it as it is, since it works per row and head, and
    :func:`unpack_gqa` turns it back.
    """
    # A token's rep rows are consecutive, so sequence i's rows start at rep * cu_q[i]. The
    # product is a device op on the layout's tensor: a CUDA graph replays it with each layout.
    return varlen_attention(
        q, k, v, cu_q * rep, cu_k, max_q * rep, max_k, causal=False, scale=scale,
        seqused_k=seqused_k,
    )  # fmt: skip


def merge_attention(
    out_a: torch.Tensor, lse_a: torch.Tensor, out_b: torch.Tensor, lse_b: torch.Tensor
) -> torch.Tensor:
    """Combine two attention results over disjoint key sets into the result over their union."""
    top = torch.maximum(lse_a, lse_b)
    w_a = torch.exp(lse_a - top)[..., None]
    w_b = torch.exp(lse_b - top)[..., None]
    merged = (out_a.float() * w_a + out_b.float() * w_b) / (w_a + w_b)
    return merged.to(out_a.dtype)
