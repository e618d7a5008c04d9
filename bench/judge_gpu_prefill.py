"""Where the cascade's packed prefill spends its time, and the fused prefill against it.

On the judge benchmark's fixed workload (``bench/judge_gpu.py``: Qwen2-7B shape, random bf16
weights, 48 answers x 16 criteria; 246 k distinct prompt tokens: prefixes once, suffixes per
row) it runs the engine's prefill alone: ``generate_cascade(..., max_new_tokens=1)`` prefills
every prefix and suffix and picks each row's first token, so no decode step runs. Per prefill
mode (``model``: transformers' modules; ``fused``: fused projections; ``compiled``: fused
projections and compiled pointwise kernels, see
:mod:`judge_worker.backends.cascade_prefill`) and packed chunk size (tokens per forward) it
reports the prefill seconds, the linear layers' FLOPs over them as TFLOP/s and as a fraction of
the H200's bf16 peak (790 TFLOP/s, the rate a 8192^3 product reaches there, also measured
here), and whether the first tokens equal the ``model`` mode's at 32 k.

Also measured: the layer's matrix products alone at 32 k tokens (each projection, and fused),
the ceiling the prefill could reach with nothing else; and one prefill per mode under
``torch.profiler``: GPU time by kind of kernel (matrix products, attention, the rest), the
number of kernels, and the GPU's idle time (wall minus kernels: launches and host work).

Run: ``python bench/judge_gpu_prefill.py --scale full`` (GPU; ``small``: CPU smoke). Env:
``JUDGE_PREFILL_CHUNKS`` (default ``32768,65536,131072``), ``JUDGE_PREFILL_MODES`` (default
``model,fused,compiled``), ``JUDGE_BENCH_JSON`` (where the JSON goes). The last line is
``judge-gpu-prefill: BEST % of peak (model at 32k: M %)``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench.judge_gpu_workload import build_model, make_workload, scale_for, sync
from judge_worker.backends.cascade import generate_cascade
from judge_worker.backends.cascade_prefill import PREFILL_MODES
from judge_worker.backends.prefix_decode import PrefixGroup

PEAK_TFLOPS = 790.0  # H200 bf16, what a large square product reaches (device docs)


def linear_flops_per_token(model: Any) -> int:
    """2 x the parameters of the layers' linear maps (not embeddings or the output head)."""
    n = 0
    for layer in model.model.layers:
        for mod in layer.modules():
            if isinstance(mod, torch.nn.Linear):
                n += mod.weight.numel()
    return 2 * n


def _events_ms(fn: Any, n: int, device: str) -> float:
    """Median milliseconds of ``fn`` over ``n`` calls (CUDA events; host clock off CUDA)."""
    times = []
    for _ in range(n):
        if device == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        else:
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def matmuls(model: Any, tokens: int, device: str) -> dict[str, Any]:
    """TFLOP/s of each of a layer's products at ``tokens`` rows, separate and fused."""
    layer = model.model.layers[0]
    a, m = layer.self_attn, layer.mlp
    hidden = a.q_proj.weight.shape[1]
    x = torch.randn(tokens, hidden, device=device, dtype=model.dtype)
    inter = torch.randn(tokens, m.down_proj.weight.shape[1], device=device, dtype=model.dtype)
    qkv = torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight])
    gate_up = torch.cat([m.gate_proj.weight, m.up_proj.weight])
    cases = {
        "q": (x, a.q_proj.weight), "k": (x, a.k_proj.weight), "v": (x, a.v_proj.weight),
        "qkv_fused": (x, qkv), "o": (x, a.o_proj.weight), "gate": (x, m.gate_proj.weight),
        "up": (x, m.up_proj.weight), "gate_up_fused": (x, gate_up),
        "down": (inter, m.down_proj.weight),
    }  # fmt: skip
    out: dict[str, Any] = {}
    for name, (inp, w) in cases.items():
        torch.nn.functional.linear(inp, w)
        ms = _events_ms(lambda i=inp, w=w: torch.nn.functional.linear(i, w), 5, device)
        flops = 2 * inp.shape[0] * inp.shape[1] * w.shape[0]
        out[name] = {"ms": ms, "tflops": flops / ms / 1e9}
    sep = sum(out[k]["ms"] for k in ("q", "k", "v", "o", "gate", "up", "down"))
    fused = sum(out[k]["ms"] for k in ("qkv_fused", "o", "gate_up_fused", "down"))
    per_token = linear_flops_per_token(model) / len(model.model.layers)
    out["layer_separate"] = {"ms": sep, "tflops": per_token * tokens / sep / 1e9}
    out["layer_fused"] = {"ms": fused, "tflops": per_token * tokens / fused / 1e9}
    if device == "cuda":
        big = torch.randn(8192, 8192, device=device, dtype=model.dtype)
        ms = _events_ms(lambda: big @ big, 10, device)
        out["square_8192"] = {"ms": ms, "tflops": 2 * 8192**3 / ms / 1e9}
    return out


def prefill_once(
    model: Any, groups: list[PrefixGroup], mode: str, chunk: int, device: str
) -> dict[str, Any]:
    timings: dict[str, float] = {}
    sync(device)
    t = time.perf_counter()
    got = generate_cascade(
        model, groups, max_new_tokens=1, prefill=mode, prefill_chunk_tokens=chunk,
        max_rows=1024, timings=timings,
    )  # fmt: skip
    sync(device)
    firsts = [row[0] for per in got for row in per]
    return {"seconds": time.perf_counter() - t, "timings": timings, "firsts": firsts}


def _kind(name: str) -> str:
    low = name.lower()
    if "flash" in low or "fmha" in low:
        return "attention"
    if any(s in low for s in ("gemm", "nvjet", "cutlass", "xmma", "cublas")):
        return "matmul"
    if low.startswith("triton"):
        return "compiled_pointwise"
    return "other"


def profile(model: Any, groups: list[PrefixGroup], mode: str, chunk: int) -> dict[str, Any]:
    """GPU time by kind of kernel over one prefill of ``groups``, and the idle time."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    sync("cuda")
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t = time.perf_counter()
        generate_cascade(
            model, groups, max_new_tokens=1, prefill=mode, prefill_chunk_tokens=chunk, max_rows=1024
        )
        sync("cuda")
        wall = time.perf_counter() - t
    by_kind: dict[str, float] = {}
    kernels = 0
    top: list[tuple[float, str, int]] = []
    for evt in prof.key_averages():
        if evt.device_type != DeviceType.CUDA:  # CPU ops also count their kernels' time
            continue
        us = getattr(evt, "self_device_time_total", None)
        if us is None:
            us = evt.self_cuda_time_total
        if not us:
            continue
        kind = _kind(evt.key)
        by_kind[kind] = by_kind.get(kind, 0.0) + us / 1e6
        kernels += evt.count
        top.append((us / 1e6, evt.key[:90], evt.count))
    busy = sum(by_kind.values())
    top.sort(reverse=True)
    return {
        "wall_s_under_profiler": wall,
        "gpu_seconds_by_kind": by_kind,
        "gpu_busy_s": busy,
        "kernels": kernels,
        "top_kernels": [{"s": s, "name": n, "count": c} for s, n, c in top[:15]],
    }


def main(scale: str = "small") -> str:
    sc = scale_for(scale)
    dev = sc.device if torch.cuda.is_available() or sc.device == "cpu" else "cpu"
    model = build_model(sc)
    groups = [PrefixGroup(a.prefix, a.suffixes) for a in make_workload(sc)]
    prefix_tokens = sum(len(g.prefix) for g in groups)
    suffix_tokens = sum(len(s) for g in groups for s in g.suffixes)
    per_token = linear_flops_per_token(model)
    flops = per_token * (prefix_tokens + suffix_tokens)
    default_chunks = "32768,65536,131072" if scale == "full" else "100,400"
    chunks = [int(c) for c in os.environ.get("JUDGE_PREFILL_CHUNKS", default_chunks).split(",")]
    modes = os.environ.get("JUDGE_PREFILL_MODES", ",".join(PREFILL_MODES)).split(",")
    info: dict[str, Any] = {
        "scale": scale,
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
        "prefix_tokens": prefix_tokens,
        "suffix_tokens": suffix_tokens,
        "linear_tflop": flops / 1e12,
        "peak_tflops": PEAK_TFLOPS,
    }
    info["matmuls"] = matmuls(model, chunks[0], dev)
    # Warm-up of each mode on a few groups (compiles the pointwise kernels once).
    for mode in list(modes):
        t = time.perf_counter()
        try:
            prefill_once(model, groups[:4], mode, chunks[0], dev)
            prefill_once(model, groups[:3], mode, chunks[0], dev)
        except Exception as exc:  # a compiler missing on the machine: report, go on
            info[f"error_{mode}"] = repr(exc)[:2000]
            print(f"{mode}: {exc!r}"[:2000], flush=True)
            modes.remove(mode)
        info[f"warmup_seconds_{mode}"] = time.perf_counter() - t
    runs: dict[str, Any] = {}
    ref: list[int] | None = None
    for chunk in chunks:
        for mode in modes:
            try:
                res = prefill_once(model, groups, mode, chunk, dev)
            except torch.OutOfMemoryError:
                torch.cuda.empty_cache()
                runs[f"{mode}@{chunk}"] = {"oom": True}
                continue
            tm = res["timings"]
            secs = tm.get("prefix_prefill", 0.0) + tm.get("suffix_prefill", 0.0)
            if ref is None:
                ref = res["firsts"]
            same = sum(a == b for a, b in zip(res["firsts"], ref, strict=True)) / len(ref)
            runs[f"{mode}@{chunk}"] = {
                "prefill_s": secs,
                "prefix_s": tm.get("prefix_prefill"),
                "suffix_s": tm.get("suffix_prefill"),
                "tflops": flops / secs / 1e12,
                "fraction_of_peak": flops / secs / 1e12 / PEAK_TFLOPS,
                "first_tokens_equal_to_first_run": same,
                "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if dev == "cuda" else 0,
            }
            if dev == "cuda":
                torch.cuda.reset_peak_memory_stats()
            print(f"{mode}@{chunk}: {json.dumps(runs[f'{mode}@{chunk}'])}", flush=True)
    info["runs"] = runs
    if dev == "cuda" and os.environ.get("JUDGE_PREFILL_PROFILE", "1") == "1":
        info["profile"] = {m: profile(model, groups, m, chunks[0]) for m in modes}
    out_path = os.environ.get("JUDGE_BENCH_JSON")
    if out_path:
        with open(out_path, "w") as f:
            json.dump(info, f, indent=1)
    ok = {k: v for k, v in runs.items() if "oom" not in v}
    best = max(ok, key=lambda k: ok[k]["fraction_of_peak"])
    base = ok.get(f"model@{chunks[0]}", ok[best])
    line = (
        f"judge-gpu-prefill: {100 * ok[best]['fraction_of_peak']:.1f} % of peak ({best}; "
        f"model at {chunks[0]}: {100 * base['fraction_of_peak']:.1f} %)"
    )
    print(line)
    return line


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=["small", "full"], default="small")
    main(parser.parse_args().scale)
