"""GPU throughput benchmark of the LLM-judge step: POLLUX-shaped prompts, Qwen2-7B shape.

Workload: ``n_answers`` answers, each judged on ``criteria`` criteria. A prompt is the answer's
shared prefix (chat head + instruction + reference + answer, ~350-2,700 tokens) followed by a
criterion-specific suffix (criterion name + rubric, ~150-300 tokens), so prompts are ~500-3,000
tokens. Every triple generates exactly ``new_tokens`` tokens (random weights: EOS is ignored).

Measured in the same run (:func:`main`):

* the fixed workload through the "transformers" backend's engine
  (``judge_worker/backends/cascade.py``: each prefix stored and read once, continuous
  batching, CUDA graphs for decode steps), and with eager decode steps (``JUDGE_BENCH_EAGER=1``);
* a variable-length workload: twice the answers, each triple's output ending with EOS after a
  length drawn in 40-400 tokens, at most 768 rows at once: continuous batching against static
  batching (waves; finished rows stay in the batch);
* the baseline (7B): plain ``model.generate`` per criterion prompt, rows sorted by length and
  batched under a token budget, no prefix sharing, cuDNN attention off (the faster choice).

The cascade runs once per GQA packing of its decode attention (``off``: one query row per head;
``prefix``: the query heads of a key/value group packed into query rows against the shared
prefix; ``both``: against the row's own keys too; ``JUDGE_BENCH_GQA=off,prefix`` picks some),
on the fixed and the variable workload; ``cascade`` and ``variable_continuous`` report the
engine's default packing, ``cascade_by_gqa_packing`` and ``variable_continuous_gqa_*`` the
others. ``bench/judge_gpu_gqa.py`` times one layer's decode attention alone.

Prefill forwards run as ``JUDGE_BENCH_PREFILL`` says (``model``, ``fused``, ``compiled``; default
the engine's, ``judge_worker/backends/cascade_prefill.py``); ``JUDGE_BENCH_PREFILL_COMPARE=MODE``
runs the fixed workload once more with prefill ``MODE`` (``cascade_prefill_MODE``, with its
agreement with the main run). Each fixed run reports its prefill seconds and
``prefill_fraction_of_peak`` (the linear layers' FLOPs over them against 790 TFLOP/s);
``bench/judge_gpu_prefill.py`` times the prefill alone.

``--model 32b`` runs the Qwen2.5-32B shape (no baseline: static batching is its comparison).
``JUDGE_BENCH_COPY_PREFIX=1`` adds the earlier copy-prefix path (``prefix_decode.py``).

Run: ``python bench/judge_gpu.py --scale small`` (CPU smoke, seconds) or ``--scale full`` (GPU).
The last line printed (and returned by :func:`main`) is
``judge-gpu: VALUE tokens/s (baseline VALUE tokens/s, ratio R)`` (7B) or
``judge-gpu-32b: VALUE tokens/s variable lengths (baseline static batching VALUE tokens/s, ...)``.
Two GPUs through Celery: ``bench/judge_gpu_celery.py``.

The workload and model are in :mod:`bench.judge_gpu_workload`, the timed paths in
:mod:`bench.judge_gpu_paths`; this module runs them and reports.

``--generation`` measures answer generation instead (2,100 POLLUX-like instructions through
``HFBackend.generate``, see :func:`bench.judge_gpu_generation.run_generation`); its last line is
``generation-gpu: VALUE tokens/s (baseline VALUE tokens/s, ratio R; 2100 instructions in M min)``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from typing import Any

import torch

# Runnable as a script from the repo root: make the repo importable for bench and judge_worker.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench.judge_gpu_generation import run_generation
from bench.judge_gpu_paths import (
    check_varlen,
    compute_bound_seconds,
    run_baseline,
    run_baseline_no_cudnn,
    run_cascade,
    run_shared,
)
from bench.judge_gpu_prefill import PEAK_TFLOPS, linear_flops_per_token
from bench.judge_gpu_workload import (
    SCALES,
    SHAPES,
    VARIABLE_LENGTHS,
    Answer,
    Scale,
    build_model,
    draw_lengths,
    fit_budget,
    make_workload,
    scale_for,
    sync,
)
from judge_worker.backends.cascade import DEFAULT_GQA_PACKING, DEFAULT_PREFILL
from judge_worker.backends.cascade_attention import GQA_PACKING

# --------------------------------------------------------------------------- reporting


def agreement(a: list[list[int]], b: list[list[int]]) -> dict[str, float]:
    rows_equal = sum(x == y for x, y in zip(a, b, strict=True))
    first_equal = sum(x[:1] == y[:1] for x, y in zip(a, b, strict=True))
    return {"rows_identical": rows_equal / len(a), "first_token_equal": first_equal / len(a)}


def _with_oom_retry(
    fn: Any, model: Any, answers: list[Answer], sc: Scale, budget_field: str, info: dict[str, Any]
) -> dict[str, Any]:
    """Run a path; on CUDA OOM halve its token budget and retry (a lease is too short to lose)."""
    for _ in range(3):
        try:
            return fn(model, answers, sc)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            sc = Scale(**{**asdict(sc), budget_field: getattr(sc, budget_field) // 2})
            info.setdefault("oom_retries", []).append(
                f"{budget_field}->{getattr(sc, budget_field)}"
            )
    return fn(model, answers, sc)


def _peak(sc: Scale, info: dict[str, Any], key: str) -> None:
    if sc.device == "cuda":
        info[key] = torch.cuda.max_memory_allocated() / 2**30
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def _rates(run: dict[str, Any], n_triples: int, gen_tokens: int) -> dict[str, Any]:
    return {
        "seconds": run["seconds"],
        "tokens_per_s": gen_tokens / run["seconds"],
        "triples_per_s": n_triples / run["seconds"],
        "batches": run["batches"],
        **({"timings": run["timings"]} if "timings" in run else {}),
    }


def _save(info: dict[str, Any]) -> None:
    out_path = os.environ.get("JUDGE_BENCH_JSON")
    if out_path:
        with open(out_path, "w", encoding="utf-8") as fh:
            json.dump(info, fh, indent=2, default=str)


def main(scale: str = "small", shape: str = "7b", n_answers: int | None = None) -> str:
    """Fixed-length and variable-length workloads through the continuous cascade engine, the
    static-batching comparison on the variable one, and (7B) the plain-generate baseline."""
    sc = scale_for(scale, shape)
    if n_answers:
        sc = Scale(**{**asdict(sc), "n_answers": n_answers})
    if sc.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--scale full needs a CUDA GPU")
    baseline = shape == "7b" and os.environ.get("JUDGE_BENCH_BASELINE", "1") == "1"
    info: dict[str, Any] = {
        "scale": scale,
        "shape": shape,
        "config": asdict(sc),
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
    }
    if sc.device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
    dtype = getattr(torch, sc.dtype)
    info["varlen_check_max_abs_error"] = check_varlen(sc.device, dtype)
    t = time.perf_counter()
    model = build_model(sc)
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    info["build_seconds"] = time.perf_counter() - t
    info["weight_bytes"] = weight_bytes
    sc = fit_budget(model, sc)
    info["cascade_budget"] = sc.cascade_budget
    answers = make_workload(sc)
    # The variable workload has twice the answers and fewer rows at once than the fixed one,
    # so that groups wait: continuous batching refills the batch, static batching runs waves.
    var_sc = Scale(
        **{**asdict(sc), "n_answers": 2 * sc.n_answers,
           "cascade_max_rows": min(sc.cascade_max_rows, 12 * sc.n_answers)}
    )  # fmt: skip
    var_answers = make_workload(var_sc, seed=4)
    lengths = draw_lengths(var_answers, bounds=VARIABLE_LENGTHS if scale != "small" else (2, 16))
    warm_sc = Scale(**{**asdict(sc), "new_tokens": 4})
    warm = make_workload(Scale(**{**asdict(warm_sc), "n_answers": 2, "criteria": 2}), seed=1)
    # The decode attention's GQA packings measured on both workloads (JUDGE_BENCH_GQA:
    # comma-separated, default all).
    packings = [
        p
        for p in GQA_PACKING
        if p in os.environ.get("JUDGE_BENCH_GQA", ",".join(GQA_PACKING)).split(",")
    ]
    if DEFAULT_GQA_PACKING not in packings:
        packings.append(DEFAULT_GQA_PACKING)
    # Warm up every path (kernel selection, allocator) outside the timed region.
    for packing in packings:
        run_cascade(model, warm, warm_sc, gqa_packing=packing)
    run_cascade(model, warm, warm_sc, [3, 1, 4, 2])
    if baseline:
        run_baseline(model, warm, warm_sc)
    compare_prefill = os.environ.get("JUDGE_BENCH_PREFILL_COMPARE")
    if compare_prefill:
        run_cascade(model, warm, warm_sc, prefill=compare_prefill)

    n_triples = sum(len(a.suffixes) for a in answers)
    gen_tokens = n_triples * sc.new_tokens
    prefill_tokens = sum(len(a.prefix) + sum(len(s) for s in a.suffixes) for a in answers)
    info.update(
        triples=n_triples,
        generated_tokens=gen_tokens,
        variable_generated_tokens=sum(lengths),
        variable_lengths=VARIABLE_LENGTHS,
        prompt_tokens=sum(len(a.prefix) + len(s) for a in answers for s in a.suffixes),
        prefill_tokens_shared=prefill_tokens,
    )
    if sc.device == "cuda":
        torch.cuda.reset_peak_memory_stats()

    var_triples = len(lengths)

    def rates(run: dict[str, Any], tokens: int, triples: int = n_triples) -> dict[str, Any]:
        out = _rates(run, triples, tokens)
        out["stats"] = run["stats"]
        out["decode_tokens_per_s"] = (tokens - triples) / run["timings"]["decode"]
        tm = run["timings"]
        prefill_s = tm.get("prefix_prefill", 0.0) + tm.get("suffix_prefill", 0.0)
        if prefill_s and tokens == gen_tokens:  # the fixed workload's prefill tokens
            out["prefill_seconds"] = prefill_s
            out["prefill_fraction_of_peak"] = (
                linear_flops_per_token(model) * prefill_tokens / prefill_s / 1e12 / PEAK_TFLOPS
            )
        return out

    # The fixed workload once per GQA packing of the decode attention (issue #33 item 2), in
    # the same run; the engine's default packing is the one reported as "cascade".
    by_packing: dict[str, dict[str, Any]] = {}
    runs: dict[str, dict[str, Any]] = {}
    bound = compute_bound_seconds(model, prefill_tokens + gen_tokens)
    for packing in packings:
        runs[packing] = _with_oom_retry(
            lambda m, a, s, p=packing: run_cascade(m, a, s, gqa_packing=p),
            model, answers, sc, "cascade_budget", info,
        )  # fmt: skip
        by_packing[packing] = rates(runs[packing], gen_tokens)
        if bound:
            by_packing[packing]["fraction_of_compute_bound"] = bound / runs[packing]["seconds"]
        if packing != "off" and "off" in runs:
            by_packing[packing]["agreement_vs_off"] = agreement(
                runs[packing]["outputs"], runs["off"]["outputs"]
            )
        print(f"fixed, gqa_packing={packing}:", json.dumps(by_packing[packing]), flush=True)
    info["cascade_by_gqa_packing"] = by_packing
    fixed = runs[DEFAULT_GQA_PACKING]
    _peak(sc, info, "cascade_peak_gib")
    info["cascade"] = by_packing[DEFAULT_GQA_PACKING]
    info["cascade_gqa_packing"] = DEFAULT_GQA_PACKING
    info["cascade_prefill"] = os.environ.get("JUDGE_BENCH_PREFILL") or (
        DEFAULT_PREFILL if sc.device == "cuda" else "model"
    )
    if bound:
        info["compute_bound_seconds"] = bound
        info["fraction_of_compute_bound"] = bound / fixed["seconds"]
    info["projected_minutes_33600_triples"] = 33600 / (n_triples / fixed["seconds"]) / 60
    _save(info)
    print("fixed:", json.dumps(info["cascade"]), flush=True)
    if compare_prefill:
        # The same fixed workload with another prefill forward (issue #33 item 3).
        other = run_cascade(model, answers, sc, prefill=compare_prefill)
        key = f"cascade_prefill_{compare_prefill}"
        info[key] = rates(other, gen_tokens)
        info[key]["agreement_vs_main_run"] = agreement(other["outputs"], fixed["outputs"])
        print(f"fixed, prefill={compare_prefill}:", json.dumps(info[key]), flush=True)
    if os.environ.get("JUDGE_BENCH_PROBE") == "1":
        # Is a decode step bound by the GPU or by the host? Time per step at 1/8 of the rows.
        few = run_cascade(model, answers[: max(1, len(answers) // 8)], sc)
        info["decode_ms_per_step"] = {
            "all_rows": 1e3 * fixed["timings"]["decode"] / fixed["stats"]["decode_steps"],
            "eighth_of_rows": 1e3 * few["timings"]["decode"] / few["stats"]["decode_steps"],
        }
        print("probe:", info["decode_ms_per_step"], flush=True)
    if os.environ.get("JUDGE_BENCH_EAGER") == "1":
        # The same fixed workload with eager decode steps (no CUDA graphs): what graphs gain.
        eager = run_cascade(model, answers, sc, cuda_graphs=False)
        info["cascade_eager_decode"] = rates(eager, gen_tokens)
        print("eager:", json.dumps(info["cascade_eager_decode"]), flush=True)
    var_c = run_cascade(model, var_answers, var_sc, lengths, continuous=True)
    _peak(sc, info, "variable_continuous_peak_gib")
    info["variable_continuous"] = rates(var_c, sum(lengths), var_triples)
    info["variable_continuous"]["gqa_packing"] = DEFAULT_GQA_PACKING
    for packing in packings:
        if packing != DEFAULT_GQA_PACKING:
            other = run_cascade(model, var_answers, var_sc, lengths, gqa_packing=packing)
            other_rates = rates(other, sum(lengths), var_triples)
            info[f"variable_continuous_gqa_{packing}"] = other_rates
            print(f"variable, gqa_packing={packing}:", json.dumps(other_rates), flush=True)
    var_s = run_cascade(model, var_answers, var_sc, lengths, continuous=False)
    _peak(sc, info, "variable_static_peak_gib")
    info["variable_static"] = rates(var_s, sum(lengths), var_triples)
    info["agreement_variable_continuous_vs_static"] = agreement(var_c["outputs"], var_s["outputs"])
    assert [len(o) for o in var_c["outputs"]] == lengths, "a row did not stop at its length"
    info["variable_projected_minutes_33600_triples"] = 33600 / (var_triples / var_c["seconds"]) / 60
    _save(info)
    print("variable:", json.dumps(info["variable_continuous"]), flush=True)
    var_by = {
        p: info.get(f"variable_continuous_gqa_{p}", info["variable_continuous"]) for p in packings
    }
    gqa_line = (
        "judge-gpu gqa packing (tok/s): fixed "
        + ", ".join(f"{p} {by_packing[p]['tokens_per_s']:.0f}" for p in packings)
        + "; variable "
        + ", ".join(f"{p} {var_by[p]['tokens_per_s']:.0f}" for p in packings)
    )
    info["gqa_line"] = gqa_line
    var_line = (
        f"judge-gpu variable lengths: {sum(lengths) / var_c['seconds']:.0f} tokens/s, "
        f"{var_triples / var_c['seconds']:.1f} triples/s (static batching "
        f"{sum(lengths) / var_s['seconds']:.0f} tokens/s, "
        f"ratio {var_s['seconds'] / var_c['seconds']:.2f})"
    )
    if os.environ.get("JUDGE_BENCH_COPY_PREFIX") == "1":
        shared = _with_oom_retry(run_shared, model, answers, sc, "shared_budget", info)
        _peak(sc, info, "shared_peak_gib")
        info["shared_copy_prefix"] = _rates(shared, n_triples, gen_tokens)
    if not baseline:
        print(json.dumps(info, indent=2, default=str))
        print(gqa_line)
        print(var_line)
        line = (
            f"judge-gpu-{shape}: {sum(lengths) / var_c['seconds']:.0f} tokens/s variable "
            f"lengths (baseline static batching {sum(lengths) / var_s['seconds']:.0f} tokens/s, "
            f"ratio {var_s['seconds'] / var_c['seconds']:.2f}); fixed "
            f"{gen_tokens / fixed['seconds']:.0f} tokens/s, 33600 triples in "
            f"{info['projected_minutes_33600_triples']:.1f} min"
        )
        print(line)
        return line
    base = _with_oom_retry(run_baseline_no_cudnn, model, answers, sc, "baseline_budget", info)
    _peak(sc, info, "baseline_peak_gib")
    if os.environ.get("JUDGE_BENCH_BASELINE_DEFAULT") == "1":
        # PyTorch's default SDPA choice (cuDNN attention re-plans at every key length): slower.
        info["baseline_default_kernels"] = _rates(
            run_baseline(model, answers, sc), n_triples, gen_tokens
        )
    info["baseline"] = _rates(base, n_triples, gen_tokens)
    info["agreement_cascade_vs_baseline"] = agreement(fixed["outputs"], base["outputs"])
    base_tps = gen_tokens / base["seconds"]
    best_tps = gen_tokens / fixed["seconds"]
    print(json.dumps(info, indent=2, default=str))
    _save(info)
    print(gqa_line)
    print(var_line)
    line = (
        f"judge-gpu: {best_tps:.0f} tokens/s "
        f"(baseline {base_tps:.0f} tokens/s, ratio {best_tps / base_tps:.2f})"
    )
    print(line)
    return line


def profile_decode(scale: str = "full", rows: int = 256, length: int = 1650) -> None:
    """Diagnose one decode step at a POLLUX-like cache size: SDPA variants and a kernel table."""
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    from judge_worker.backends.prefix_decode import _prealloc_cache

    sc = SCALES[scale]
    dev = sc.device
    dtype = getattr(torch, sc.dtype)
    kvh, hd, nh = sc.kv_heads, sc.hidden // sc.heads, sc.heads

    def timed(fn: Any, n: int = 10) -> float:
        for _ in range(2):
            fn()
        sync(dev)
        ts = []
        for _ in range(n):
            t = time.perf_counter()
            fn()
            sync(dev)
            ts.append(time.perf_counter() - t)
        return sorted(ts)[n // 2] * 1e3

    k = torch.randn(rows, kvh, length + 16, hd, dtype=dtype, device=dev)[:, :, :length]
    v = torch.randn_like(k)
    q = torch.randn(rows, nh, 1, hd, dtype=dtype, device=dev)
    bmask = torch.ones(rows, 1, 1, length, dtype=torch.bool, device=dev)
    bmask[:, :, :, :100] = False
    fmask = torch.zeros(rows, 1, 1, length, dtype=dtype, device=dev).masked_fill(~bmask, -1e30)
    qp = q.reshape(rows, kvh, nh // kvh, hd)
    kc, vc = k.contiguous(), v.contiguous()
    rep = nh // kvh
    res = {
        "packgqa_boolmask_view": timed(lambda: sdpa(qp, k, v, attn_mask=bmask)),
        "packgqa_boolmask_contig": timed(lambda: sdpa(qp, kc, vc, attn_mask=bmask)),
        "packgqa_floatmask_contig": timed(lambda: sdpa(qp, kc, vc, attn_mask=fmask)),
        "gqa_nomask_contig": timed(lambda: sdpa(q, kc, vc, enable_gqa=True)),
        "gqa_nomask_view": timed(lambda: sdpa(q, k, v, enable_gqa=True)),
        "repeatkv_boolmask": timed(
            lambda: sdpa(q, kc.repeat_interleave(rep, 1), vc.repeat_interleave(rep, 1), bmask)
        ),
    }
    print("sdpa ms per layer call:", json.dumps(res, indent=1))
    del res
    model = build_model(sc)
    kb = [
        torch.randn(rows, kvh, length + 160, hd, dtype=dtype, device=dev) for _ in range(sc.layers)
    ]
    vb = [torch.randn_like(x) for x in kb]
    mask = torch.ones(rows, length + 160, dtype=torch.long, device=dev)
    mask[:, :100] = 0
    tok = torch.randint(10, min(1000, sc.vocab), (rows, 1), device=dev)
    pos = torch.full((rows, 1), length, device=dev)

    def step(use_mask: bool) -> None:
        cache = _prealloc_cache(kb, vb, length, slice(0, rows))
        with torch.inference_mode():
            model(
                input_ids=tok,
                attention_mask=mask[:, : length + 1] if use_mask else None,
                position_ids=pos,
                past_key_values=cache,
                use_cache=True,
            )

    print("model step ms, mask:", timed(lambda: step(True), 5))
    print("model step ms, no mask:", timed(lambda: step(False), 5))
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step(True)
        sync(dev)
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=18))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--profile", action="store_true", help="diagnose one decode step")
    parser.add_argument("--model", choices=sorted(SHAPES), default="7b", help="model shape")
    parser.add_argument("--answers", type=int, help="answers in the workload (16 triples each)")
    parser.add_argument(
        "--generation", action="store_true", help="answer generation instead of judging"
    )
    parser.add_argument(
        "--measure", type=int, metavar="N", help="generation: instructions timed when batched"
    )
    parser.add_argument(
        "--batch-sizes", metavar="B,B", help="generation: HFBackend batch sizes, e.g. 64,128"
    )
    parser.add_argument(
        "--no-cudnn", action="store_true", help="generation: SDPA without cuDNN attention"
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.generation:
        sizes = tuple(int(b) for b in args.batch_sizes.split(",")) if args.batch_sizes else None
        run_generation(args.scale, args.measure, sizes, args.no_cudnn)
    elif args.profile:
        profile_decode(args.scale, *((256, 1650) if args.scale == "full" else (8, 60)))
    else:
        main(args.scale, args.model, args.answers)
    sys.exit(0)
