"""The cascade's decode attention alone, with and without GQA packing (issue #33 item 2).

One layer's decode-step attention (:meth:`CascadeState.attend`) at the fixed workload's shape:
Qwen2-7B heads (28 query heads over 4 key/value heads, dim 128), 48 answers x 16 criteria = 768
rows, prefixes of 350-2,700 tokens, each row's suffix (150-300) plus 75 generated tokens (the
middle of 150). Timed with CUDA events over repeated calls, for each packing of
:data:`judge_worker.backends.cascade_attention.GQA_PACKING`; each result is compared with the
unpacked one. Bytes: the keys/values the step must read at least once (each prefix once, each
row's own keys once), against the card's copy bandwidth.

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


if __name__ == "__main__":
    info = measure()
    text = json.dumps(info, indent=2)
    print(text)
    path = os.environ.get("JUDGE_BENCH_JSON")
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
