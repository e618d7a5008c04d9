"""GPU throughput benchmark of the LLM-judge step: POLLUX-shaped prompts, Qwen2-7B shape.

Workload: ``n_answers`` answers, each judged on ``criteria`` criteria. A prompt is the answer's
shared prefix (chat head + instruction + reference + answer, ~350-2,700 tokens) followed by a
criterion-specific suffix (criterion name + rubric, ~150-300 tokens), so prompts are ~500-3,000
tokens. Every triple generates exactly ``new_tokens`` tokens (random weights: EOS is ignored).

Two paths, measured in the same run on the same prompts:

* baseline: plain ``model.generate`` per criterion prompt, rows sorted by length and batched
  under a token budget, no prefix sharing (every criterion re-prefills the answer).
* shared: the answer prefix is prefilled once per answer, its KV copied into every criterion row
  of a preallocated cache, then only the criterion suffixes are prefilled (one batched forward)
  and a greedy decode loop runs over all rows. The cache is preallocated so that decoding does
  not ``torch.cat`` the whole KV cache at every step (what ``DynamicCache`` does).

Run: ``python bench/judge_gpu.py --scale small`` (CPU smoke, seconds) or ``--scale full`` (GPU).
The last line printed (and returned by :func:`main`) is
``judge-gpu: VALUE tokens/s (baseline VALUE tokens/s, ratio R)``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

import torch
from transformers import AutoModelForCausalLM, DynamicCache, Qwen2Config
from transformers.cache_utils import DynamicLayer


@dataclass(frozen=True)
class Scale:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    n_answers: int
    criteria: int
    prefix_range: tuple[int, int]
    suffix_range: tuple[int, int]
    new_tokens: int
    # Token budgets (rows x padded length) bound memory: the baseline's prefill activations, the
    # shared path's preallocated KV cache.
    baseline_budget: int
    shared_budget: int
    max_rows: int
    device: str
    dtype: str


SCALES: dict[str, Scale] = {
    "small": Scale(
        hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, vocab=512,
        n_answers=4, criteria=4, prefix_range=(30, 90), suffix_range=(8, 24), new_tokens=8,
        baseline_budget=8 * 120, shared_budget=16 * 140, max_rows=16,
        device="cpu", dtype="float32",
    ),
    "full": Scale(
        hidden=3584, layers=28, heads=28, kv_heads=4, intermediate=18944, vocab=152064,
        n_answers=32, criteria=16, prefix_range=(350, 2700), suffix_range=(150, 300),
        new_tokens=150,
        baseline_budget=256_000, shared_budget=256 * 2600, max_rows=256,
        device="cuda", dtype="bfloat16",
    ),
}  # fmt: skip


@dataclass
class Answer:
    prefix: list[int]
    suffixes: list[list[int]]


def make_workload(scale: Scale, seed: int = 0) -> list[Answer]:
    rng = random.Random(seed)
    answers = []
    for _ in range(scale.n_answers):
        plen = rng.randint(*scale.prefix_range)
        prefix = [rng.randrange(10, scale.vocab - 10) for _ in range(plen)]
        suffixes = []
        for _ in range(scale.criteria):
            slen = rng.randint(*scale.suffix_range)
            suffixes.append([rng.randrange(10, scale.vocab - 10) for _ in range(slen)])
        answers.append(Answer(prefix, suffixes))
    return answers


def build_model(scale: Scale) -> torch.nn.Module:
    config = Qwen2Config(
        hidden_size=scale.hidden,
        num_hidden_layers=scale.layers,
        num_attention_heads=scale.heads,
        num_key_value_heads=scale.kv_heads,
        intermediate_size=scale.intermediate,
        vocab_size=scale.vocab,
        max_position_embeddings=32768,
        tie_word_embeddings=False,
    )
    dtype = getattr(torch, scale.dtype)
    torch.manual_seed(0)
    # Random init directly on the target device: initialising 7.6B parameters on the CPU first
    # would take minutes of the lease.
    with torch.device(scale.device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation="sdpa")
    model.eval()
    # Random weights: never stop on an "EOS"; generate exactly new_tokens.
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


# --------------------------------------------------------------------------- baseline


def run_baseline(model: Any, answers: list[Answer], scale: Scale) -> dict[str, Any]:
    rows = [a.prefix + s for a in answers for s in a.suffixes]
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    outputs: dict[int, list[int]] = {}
    batches = _chunk_by_budget([len(rows[i]) for i in order], scale.baseline_budget, 10**9)
    dev = scale.device
    sync(dev)
    start = time.perf_counter()
    pos = 0
    for size in batches:
        idx = order[pos : pos + size]
        pos += size
        width = max(len(rows[i]) for i in idx)
        ids = torch.zeros((size, width), dtype=torch.long)
        mask = torch.zeros((size, width), dtype=torch.long)
        for r, i in enumerate(idx):  # left padding, as generate expects for decoder-only models
            ids[r, width - len(rows[i]) :] = torch.tensor(rows[i])
            mask[r, width - len(rows[i]) :] = 1
        with torch.inference_mode():
            out = model.generate(
                input_ids=ids.to(dev),
                attention_mask=mask.to(dev),
                max_new_tokens=scale.new_tokens,
                min_new_tokens=scale.new_tokens,
                do_sample=False,
                pad_token_id=0,
            )
        for r, i in enumerate(idx):
            outputs[i] = out[r, width:].tolist()
    sync(dev)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "outputs": [outputs[i] for i in range(len(rows))], "batches": batches}


def _chunk_by_budget(lengths: list[int], budget: int, max_rows: int) -> list[int]:
    """Split sorted lengths into batch sizes so that rows x max length stays under budget."""
    sizes, count, longest = [], 0, 0
    for n in lengths:
        if count and (max(longest, n) * (count + 1) > budget or count >= max_rows):
            sizes.append(count)
            count, longest = 0, 0
        count += 1
        longest = max(longest, n)
    if count:
        sizes.append(count)
    return sizes


# --------------------------------------------------------------------------- shared prefix


class PreallocLayer(DynamicLayer):
    """A DynamicLayer whose storage is preallocated: ``update`` writes in place and returns a view.

    ``DynamicLayer.update`` concatenates, i.e. copies the whole layer cache at every decode step;
    at batch 256 x 2,000 tokens that is ~30 GB moved per step on a 7B model. Everything else
    (mask sizes, sequence length) keeps DynamicLayer semantics because ``keys`` is the live view.
    """

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
        self.k_buf[:, :, self.length : self.length + n].copy_(key_states)
        self.v_buf[:, :, self.length : self.length + n].copy_(value_states)
        self.length += n
        self.keys = self.k_buf[:, :, : self.length]
        self.values = self.v_buf[:, :, : self.length]
        return self.keys, self.values


def shared_batches(answers: list[Answer], scale: Scale) -> list[list[int]]:
    """Group answers (sorted by prefix length) so rows x cache length stays under budget."""
    order = sorted(range(len(answers)), key=lambda i: len(answers[i].prefix))
    groups: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        trial = [*cur, i]
        rows = sum(len(answers[j].suffixes) for j in trial)
        width = max(len(answers[j].prefix) for j in trial) + max(
            len(s) for j in trial for s in answers[j].suffixes
        )
        if cur and (rows * (width + scale.new_tokens) > scale.shared_budget or rows > scale.max_rows):
            groups.append(cur)
            cur = [i]
        else:
            cur = trial
    if cur:
        groups.append(cur)
    return groups


def run_shared(model: Any, answers: list[Answer], scale: Scale) -> dict[str, Any]:
    dev = scale.device
    cfg = model.config
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    dtype = getattr(torch, scale.dtype)
    outputs: dict[tuple[int, int], list[int]] = {}
    timings = {"prefix_prefill": 0.0, "suffix_prefill": 0.0, "decode": 0.0}
    groups = shared_batches(answers, scale)
    sync(dev)
    start = time.perf_counter()
    for group in groups:
        rows = [(a, c) for a in group for c in range(len(answers[a].suffixes))]
        pmax = max(len(answers[a].prefix) for a in group)
        smax = max(len(answers[a].suffixes[c]) for a, c in rows)
        width = pmax + smax
        total = width + scale.new_tokens
        n_rows = len(rows)
        # Layout per row: [pad][prefix (right-aligned at pmax)][pad][suffix (right-aligned)].
        # Positions are logical (RoPE is applied before caching), so columns may hold padding.
        kbufs = [
            torch.empty((n_rows, cfg.num_key_value_heads, total, head_dim), dtype=dtype, device=dev)
            for _ in range(cfg.num_hidden_layers)
        ]
        vbufs = [torch.empty_like(k) for k in kbufs]
        mask = torch.zeros((n_rows, total), dtype=torch.long)
        suffix_ids = torch.zeros((n_rows, smax), dtype=torch.long)
        suffix_pos = torch.zeros((n_rows, smax), dtype=torch.long)
        next_pos = torch.zeros((n_rows, 1), dtype=torch.long)

        t0 = time.perf_counter()
        r = 0
        with torch.inference_mode():
            for a in group:
                prefix = answers[a].prefix
                plen = len(prefix)
                cache = DynamicCache()
                model(
                    input_ids=torch.tensor([prefix], device=dev),
                    past_key_values=cache,
                    use_cache=True,
                    logits_to_keep=1,
                )
                nsuf = len(answers[a].suffixes)
                for layer, (kb, vb) in enumerate(zip(kbufs, vbufs, strict=True)):
                    kb[r : r + nsuf, :, pmax - plen : pmax] = cache.layers[layer].keys
                    vb[r : r + nsuf, :, pmax - plen : pmax] = cache.layers[layer].values
                del cache
                for c, suffix in enumerate(answers[a].suffixes):
                    slen = len(suffix)
                    mask[r + c, pmax - plen : pmax] = 1
                    mask[r + c, width - slen : width] = 1
                    suffix_ids[r + c, smax - slen :] = torch.tensor(suffix)
                    suffix_pos[r + c, smax - slen :] = torch.arange(plen, plen + slen)
                    next_pos[r + c, 0] = plen + slen
                r += nsuf
            sync(dev)
            t1 = time.perf_counter()
            timings["prefix_prefill"] += t1 - t0

            cache = DynamicCache()
            cache.layers = [
                PreallocLayer(kb, vb, pmax) for kb, vb in zip(kbufs, vbufs, strict=True)
            ]
            mask_dev = mask.to(dev)
            mask_dev[:, width:] = 1  # generated tokens are always attended; sliced per step
            out = model(
                input_ids=suffix_ids.to(dev),
                attention_mask=mask_dev[:, :width],
                position_ids=suffix_pos.to(dev),
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,
            )
            token = out.logits[:, -1, :].argmax(-1, keepdim=True)
            sync(dev)
            t2 = time.perf_counter()
            timings["suffix_prefill"] += t2 - t1

            generated = [token]
            pos = next_pos.to(dev)
            for step in range(1, scale.new_tokens):
                out = model(
                    input_ids=token,
                    attention_mask=mask_dev[:, : width + step],
                    position_ids=pos + (step - 1),
                    past_key_values=cache,
                    use_cache=True,
                )
                token = out.logits[:, -1, :].argmax(-1, keepdim=True)
                generated.append(token)
            result = torch.cat(generated, dim=1).tolist()
            sync(dev)
            timings["decode"] += time.perf_counter() - t2
        for (a, c), toks in zip(rows, result, strict=True):
            outputs[(a, c)] = toks
        del kbufs, vbufs, cache
    sync(dev)
    seconds = time.perf_counter() - start
    ordered = [outputs[(a, c)] for a in range(len(answers)) for c in range(len(answers[a].suffixes))]
    return {
        "seconds": seconds,
        "outputs": ordered,
        "timings": timings,
        "batches": [sum(len(answers[a].suffixes) for a in g) for g in groups],
    }


# --------------------------------------------------------------------------- reporting


def measure_bandwidth(device: str) -> float | None:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read plus written."""
    if device != "cuda":
        return None
    n = 1 << 30  # 2 GiB of bf16 per buffer, far past the L2
    src = torch.randn(n, dtype=torch.bfloat16, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        dst.copy_(src)
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * n * 2 / sorted(times)[len(times) // 2]


def agreement(a: list[list[int]], b: list[list[int]]) -> dict[str, float]:
    rows_equal = sum(x == y for x, y in zip(a, b, strict=True))
    first_equal = sum(x[:1] == y[:1] for x, y in zip(a, b, strict=True))
    return {"rows_identical": rows_equal / len(a), "first_token_equal": first_equal / len(a)}


def main(scale: str = "small") -> str:
    sc = SCALES[scale]
    if sc.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--scale full needs a CUDA GPU")
    info: dict[str, Any] = {
        "scale": scale,
        "config": asdict(sc),
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
    }
    if sc.device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
    t = time.perf_counter()
    model = build_model(sc)
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    info["build_seconds"] = time.perf_counter() - t
    info["weight_bytes"] = weight_bytes
    answers = make_workload(sc)
    warm = make_workload(
        Scale(**{**asdict(sc), "n_answers": 2, "criteria": 2, "new_tokens": 4}), seed=1
    )
    # Warm up both paths (kernel selection, allocator) outside the timed region.
    run_baseline(model, warm, Scale(**{**asdict(sc), "new_tokens": 4}))
    run_shared(model, warm, Scale(**{**asdict(sc), "new_tokens": 4}))

    n_triples = sum(len(a.suffixes) for a in answers)
    gen_tokens = n_triples * sc.new_tokens
    prompt_tokens = sum(len(a.prefix) + len(s) for a in answers for s in a.suffixes)
    prefill_tokens_shared = sum(len(a.prefix) + sum(len(s) for s in a.suffixes) for a in answers)
    info.update(
        triples=n_triples,
        generated_tokens=gen_tokens,
        prompt_tokens=prompt_tokens,
        prefill_tokens_shared=prefill_tokens_shared,
    )

    if sc.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    base = run_baseline(model, answers, sc)
    if sc.device == "cuda":
        info["baseline_peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    shared = run_shared(model, answers, sc)
    if sc.device == "cuda":
        info["shared_peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
        torch.cuda.empty_cache()

    base_tps = gen_tokens / base["seconds"]
    shared_tps = gen_tokens / shared["seconds"]
    info["baseline"] = {
        "seconds": base["seconds"],
        "tokens_per_s": base_tps,
        "triples_per_s": n_triples / base["seconds"],
        "batches": base["batches"],
    }
    decode_s = shared["timings"]["decode"]
    info["shared"] = {
        "seconds": shared["seconds"],
        "tokens_per_s": shared_tps,
        "triples_per_s": n_triples / shared["seconds"],
        "timings": shared["timings"],
        "batches": shared["batches"],
        # decode-only rate: tokens produced by the decode loop (all but the first of each row)
        "decode_tokens_per_s": n_triples * (sc.new_tokens - 1) / decode_s if decode_s else None,
    }
    info["agreement_shared_vs_baseline"] = agreement(shared["outputs"], base["outputs"])
    info["projected_minutes_33600_triples"] = 33600 / (n_triples / shared["seconds"]) / 60
    bw = measure_bandwidth(sc.device)
    if bw:
        rows = sum(shared["batches"]) / len(shared["batches"])
        ideal = rows * bw / weight_bytes  # weights read once per decode step, KV ignored
        info["hbm_bytes_per_s"] = bw
        info["decode_bound_tokens_per_s"] = ideal
        info["decode_fraction_of_bound"] = info["shared"]["decode_tokens_per_s"] / ideal
        info["end_to_end_fraction_of_bound"] = shared_tps / ideal
    print(json.dumps(info, indent=2, default=str))
    line = (
        f"judge-gpu: {shared_tps:.0f} tokens/s "
        f"(baseline {base_tps:.0f} tokens/s, ratio {shared_tps / base_tps:.2f})"
    )
    print(line)
    return line


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main(args.scale)
    sys.exit(0)
