"""The cascade's decode attention alone, with and without GQA packing (issue #33 item 2).

One layer's decode-step attention (:meth:`CascadeState.attend`) at the fixed workload's shape:
Qwen2-7B heads (28 query heads over 4 key/value heads, dim 128), 48 answers x 16 criteria = 768
rows, prefixes of 350-2,700 tokens, each row's suffix (150-300) plus 75 generated tokens (the
middle of 150). Timed with CUDA events over repeated calls, for each packing of
:data:`judge_worker.backends.cascade_attention.GQA_PACKING`; each result is compared with the
unpacked one. Bytes: the keys/values the step must read at least once (each prefix once, each
row's own keys once), against the card's copy bandwidth.

Then the parts apart (part A: rows against their group's prefix; part B: each row against its
own keys), and an experiment not in the engine: packed part A with each prefix split into
chunks of ``chunk`` keys, each chunk a sequence of its own with the group's packed queries,
merged through the chunks' log-sum-exps (FlashDecoding's split of the key range: more blocks
in flight than 48 groups x 4 key/value heads).

Run on the GPU: ``python bench/judge_gpu_gqa.py`` (prints one JSON object; ``JUDGE_BENCH_JSON``
writes it too).
"""

from __future__ import annotations

import json
import os
import random
import sys
from types import SimpleNamespace
from typing import Any, cast

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from judge_worker.backends.cascade_attention import GQA_PACKING, CascadeState, RowsLayout
from judge_worker.backends.varlen import pack_gqa, varlen_attention, varlen_attention_packed


def _case(
    answers: int, criteria: int, generated: int, seed: int = 0
) -> tuple[Any, RowsLayout, torch.Tensor]:
    rng = random.Random(seed)
    kv_heads, dim, dev, dt = 4, 128, "cuda", torch.bfloat16
    prefixes = [rng.randint(350, 2700) for _ in range(answers)]
    suffixes = [rng.randint(150, 300) for _ in range(answers * criteria)]
    width = 300 + 150
    rows = answers * criteria
    starts, at = [], 0
    for n in prefixes:
        starts.append(at)
        at += n
    pool = SimpleNamespace(
        pk=[torch.randn(at, kv_heads, dim, device=dev, dtype=dt)],
        pv=[torch.randn(at, kv_heads, dim, device=dev, dtype=dt)],
        rk=[torch.randn((rows + 1) * width, kv_heads, dim, device=dev, dtype=dt)],
        rv=[torch.randn((rows + 1) * width, kv_heads, dim, device=dev, dtype=dt)],
        row_width=width,
    )
    layout = RowsLayout(
        slots=list(range(rows)),
        suffix_lens=suffixes,
        segments=[criteria] * answers,
        prefix_starts=starts,
        prefix_lens=prefixes,
    )
    counts = torch.full((rows,), generated, dtype=torch.long, device=dev)
    return pool, layout, counts


def measure(
    answers: int = 48, criteria: int = 16, generated: int = 75, reps: int = 50
) -> dict[str, Any]:
    pool, layout, counts = _case(answers, criteria, generated)
    rows = answers * criteria
    gen = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn(rows, 28, 1, 128, device="cuda", dtype=torch.bfloat16, generator=gen)
    k = torch.randn(rows, 4, 1, 128, device="cuda", dtype=torch.bfloat16, generator=gen)
    v = torch.randn(rows, 4, 1, 128, device="cuda", dtype=torch.bfloat16, generator=gen)
    scale = 128**-0.5
    kv_token_bytes = 2 * 4 * 128 * 2  # keys and values, 4 heads, dim 128, bf16
    prefix_tokens = sum(layout.prefix_lens)
    own_tokens = sum(layout.suffix_lens) + rows * generated
    out: dict[str, Any] = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "rows": rows,
        "prefix_tokens": prefix_tokens,
        "own_tokens": own_tokens,
        "min_bytes_per_layer": (prefix_tokens + own_tokens) * kv_token_bytes,
    }
    results: dict[str, torch.Tensor] = {}
    for packing in GQA_PACKING:
        state = CascadeState(cast(Any, pool), torch.device("cuda"), packing)
        state.set_decode_layout(layout)
        state.set_decode_counts(counts)
        for _ in range(3):
            results[packing] = state.attend(0, q, k, v, scale)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            state.attend(0, q, k, v, scale)
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end) / reps
        out[packing] = {
            "ms_per_layer": ms,
            "ms_per_step_28_layers": 28 * ms,
            "tb_per_s_of_min_bytes": out["min_bytes_per_layer"] / (ms * 1e-3) / 1e12,
            "max_abs_diff_vs_off": float(
                (results[packing].float() - results["off"].float()).abs().max()
            ),
        }
    return out


def _timed(fn: Any, reps: int) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return float(start.elapsed_time(end) / reps)


def _split_layout(layout: RowsLayout, rep: int, chunk: int, device: str = "cuda") -> dict[str, Any]:
    """Host-side layout of the split part A: one sequence per (group, chunk of its prefix)."""
    q_index: list[int] = []
    seq_q, k_starts, k_used = [], [], []
    row = 0
    for g, n in enumerate(layout.segments):
        p0, plen = layout.prefix_starts[g], layout.prefix_lens[g]
        for c0 in range(0, plen, chunk):
            k_starts.append(p0 + c0)
            k_used.append(min(chunk, plen - c0))
            seq_q.append(n)
            q_index.extend(range(row * rep, (row + n) * rep))
        row += n
    cu = [0]
    for n in seq_q:
        cu.append(cu[-1] + n)

    def i32(values: list[int]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.int32, device=device)

    return {
        "index": torch.tensor(q_index, dtype=torch.long, device=device),
        "cu_q": i32(cu),
        "k_starts": i32([*k_starts, 0]),
        "k_used": i32(k_used),
        "max_q": max(seq_q),
        "sequences": len(seq_q),
    }


def split_prefix_attention(
    qp: torch.Tensor, k: torch.Tensor, v: torch.Tensor, split: dict[str, Any], chunk: int,
    rep: int, scale: float,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """Packed part A over chunks of each prefix, merged exactly (log-sum-exp per row, head)."""
    idx = split["index"]
    out, lse = varlen_attention_packed(
        qp.index_select(0, idx), k, v, split["cu_q"], split["k_starts"], split["max_q"], chunk,
        rep=rep, scale=scale, seqused_k=split["k_used"],
    )  # fmt: skip
    rows, heads = qp.shape[0], qp.shape[1]
    top = torch.full((rows, heads), float("-inf"), device=qp.device)
    top = top.scatter_reduce(0, idx[:, None].expand(-1, heads), lse, "amax")
    w = torch.exp(lse - top[idx])
    den = torch.zeros((rows, heads), device=qp.device).index_add_(0, idx, w)
    num = torch.zeros((rows, heads, qp.shape[2]), device=qp.device)
    num.index_add_(0, idx, out.float() * w[..., None])
    return (num / den[..., None]).to(qp.dtype), top + torch.log(den)


def measure_parts(
    answers: int = 48, criteria: int = 16, generated: int = 75, reps: int = 50
) -> dict[str, Any]:
    """Part A and part B apart, packed and not; part A split into key chunks (experiment)."""
    pool, layout, counts = _case(answers, criteria, generated)
    rows = answers * criteria
    gen = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn(rows, 28, 128, device="cuda", dtype=torch.bfloat16, generator=gen)
    scale, rep = 128**-0.5, 7
    state = CascadeState(cast(Any, pool), torch.device("cuda"), "off")
    state.set_decode_layout(layout)
    state.set_decode_counts(counts)
    m = state.meta
    pk, pv, rk, rv = pool.pk[0], pool.pv[0], pool.rk[0], pool.rv[0]
    qp = pack_gqa(q, 4)
    a_args = (m["cu_q_groups"], m["k_groups"], m["max_q_groups"], m["max_prefix"])
    b_args = (m["cu_q_rows"], m["k_rows"], 1, m["max_k"])
    out: dict[str, Any] = {
        "part_a_off_ms": _timed(lambda: varlen_attention(
            q, pk, pv, *a_args, causal=False, scale=scale, seqused_k=m["used_groups"]), reps),
        "part_a_packed_ms": _timed(lambda: varlen_attention_packed(
            qp, pk, pv, *a_args, rep=rep, scale=scale, seqused_k=m["used_groups"]), reps),
        "part_b_off_ms": _timed(lambda: varlen_attention(
            q, rk, rv, *b_args, causal=False, scale=scale, seqused_k=m["used"]), reps),
        "part_b_packed_ms": _timed(lambda: varlen_attention_packed(
            qp, rk, rv, *b_args, rep=rep, scale=scale, seqused_k=m["used"]), reps),
        "pack_ms": _timed(lambda: pack_gqa(q, 4), reps),
    }  # fmt: skip
    ref_out, ref_lse = varlen_attention_packed(
        qp, pk, pv, *a_args, rep=rep, scale=scale, seqused_k=m["used_groups"]
    )
    for chunk in (256, 512, 1024):
        split = _split_layout(layout, rep, chunk)
        got_out, got_lse = split_prefix_attention(qp, pk, pv, split, chunk, rep, scale)
        out[f"part_a_packed_split_{chunk}"] = {
            "ms": _timed(
                lambda s=split, c=chunk: split_prefix_attention(qp, pk, pv, s, c, rep, scale), reps
            ),
            "sequences": split["sequences"],
            "max_abs_diff_out": float((got_out.float() - ref_out.float()).abs().max()),
            "max_abs_diff_lse": float((got_lse - ref_lse).abs().max()),
        }
    return out


if __name__ == "__main__":
    info = measure()
    info["parts"] = measure_parts()
    text = json.dumps(info, indent=2)
    print(text)
    path = os.environ.get("JUDGE_BENCH_JSON")
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
