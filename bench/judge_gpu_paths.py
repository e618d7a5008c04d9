"""The paths the judge benchmark times on one workload: the plain-generate baseline, the
copy-prefix path, and the cascade engine; the varlen kernel's check and the compute bound."""

from __future__ import annotations

import os
import time
from typing import Any

import torch

from bench.judge_gpu_workload import PEAK_BF16_DENSE, Answer, Scale, sync
from judge_worker.backends.cascade import DEFAULT_GQA_PACKING, generate_cascade
from judge_worker.backends.prefix_decode import DecodeStep, PrefixGroup, generate_shared
from judge_worker.backends.varlen import _varlen_reference, varlen_attention

# --------------------------------------------------------------------------- baseline


def run_baseline_no_cudnn(model: Any, answers: list[Answer], scale: Scale) -> dict[str, Any]:
    """The baseline with cuDNN attention disabled (it re-plans at every new key length)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    with sdpa_kernel(backends):
        return run_baseline(model, answers, scale)


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
    return {
        "seconds": seconds,
        "outputs": [outputs[i] for i in range(len(rows))],
        "batches": batches,
    }


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
        if cur and (
            rows * (width + scale.new_tokens) > scale.shared_budget or rows > scale.max_rows
        ):
            groups.append(cur)
            cur = [i]
        else:
            cur = trial
    if cur:
        groups.append(cur)
    return groups


def _run_batches(
    answers: list[Answer], batches: list[list[int]], scale: Scale, generate: Any
) -> dict[str, Any]:
    """Time ``generate(groups, timings)`` over batches of answers; outputs in answer order."""
    timings: dict[str, float] = {}
    outputs: dict[tuple[int, int], list[int]] = {}
    sync(scale.device)
    start = time.perf_counter()
    for batch in batches:
        result = generate(
            [PrefixGroup(answers[a].prefix, answers[a].suffixes) for a in batch], timings
        )
        for a, per_suffix in zip(batch, result, strict=True):
            for c, toks in enumerate(per_suffix):
                outputs[(a, c)] = toks
    sync(scale.device)
    seconds = time.perf_counter() - start
    ordered = [
        outputs[(a, c)] for a in range(len(answers)) for c in range(len(answers[a].suffixes))
    ]
    return {
        "seconds": seconds,
        "outputs": ordered,
        "timings": timings,
        "batches": [sum(len(answers[a].suffixes) for a in b) for b in batches],
    }


def run_shared(model: Any, answers: list[Answer], scale: Scale) -> dict[str, Any]:
    return _run_batches(
        answers,
        shared_batches(answers, scale),
        scale,
        lambda groups, timings: generate_shared(
            model,
            groups,
            max_new_tokens=scale.new_tokens,
            eos_token_ids=(),
            suffix_chunk_rows=scale.suffix_chunk_rows,
            timings=timings,
        ),
    )


class EosAt:
    """Row step processor: row r ends with ``eos`` as its token number ``lengths[r]``; the EOS
    id is suppressed elsewhere (random weights would emit it anywhere)."""

    def __init__(self, lengths: list[int], eos: int, device: str) -> None:
        self.target = torch.tensor(lengths, device=device)
        self.eos = eos

    def __call__(self, step: DecodeStep, scores: torch.Tensor) -> torch.Tensor:
        scores[:, self.eos] = float("-inf")
        at = step.counts + 1 == self.target[step.rows]
        scores.masked_fill_(at[:, None], float("-inf"))
        scores[:, self.eos] = torch.where(at, 0.0, float("-inf"))
        return scores


def run_cascade(
    model: Any,
    answers: list[Answer],
    scale: Scale,
    lengths: list[int] | None = None,
    continuous: bool = True,
    cuda_graphs: bool = True,
    gqa_packing: str = DEFAULT_GQA_PACKING,
    prefill: str | None = None,
) -> dict[str, Any]:
    """All answers through one continuous-batching call (the engine admits them as rows
    finish); ``lengths``: rows end with EOS at these lengths (variable workload);
    ``gqa_packing``: the decode attention's packing (see ``cascade_attention.GQA_PACKING``);
    ``prefill``: how prefill forwards run (``cascade_prefill.PREFILL_MODES``; None:
    ``JUDGE_BENCH_PREFILL``, else the engine's default)."""
    timings: dict[str, float] = {}
    stats: dict[str, int] = {}
    prefill = prefill or os.environ.get("JUDGE_BENCH_PREFILL") or None
    eos = scale.vocab - 1
    kwargs: dict[str, Any] = {}
    if lengths is not None:
        kwargs = {"eos_token_ids": [eos], "step_processor": EosAt(lengths, eos, scale.device)}
    sync(scale.device)
    start = time.perf_counter()
    result = generate_cascade(
        model,
        [PrefixGroup(a.prefix, a.suffixes) for a in answers],
        max_new_tokens=max(lengths) if lengths is not None else scale.new_tokens,
        prefill_chunk_tokens=scale.prefill_chunk_tokens,
        max_rows=scale.cascade_max_rows,
        kv_slots=scale.cascade_budget or None,
        continuous=continuous,
        cuda_graphs=cuda_graphs,
        gqa_packing=gqa_packing,
        prefill=prefill,
        timings=timings,
        stats=stats,
        **kwargs,
    )
    sync(scale.device)
    seconds = time.perf_counter() - start
    outputs = [toks for per_answer in result for toks in per_answer]
    return {
        "seconds": seconds,
        "outputs": outputs,
        "timings": timings,
        "stats": stats,
        "batches": [stats["row_steps"] / max(1, stats["decode_steps"])],
        "generated_tokens": sum(len(o) for o in outputs),
    }


def matmul_flops(model: Any, tokens: int) -> float:
    """2 x parameters x tokens over the layers and the output head (attention's own products
    and the embedding lookup left out): the dense bf16 work a token costs."""
    n = sum(p.numel() for name, p in model.named_parameters() if "embed_tokens" not in name)
    return 2.0 * n * tokens


def compute_bound_seconds(model: Any, tokens: int) -> float | None:
    if not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name(0)
    peak = next((v for k, v in PEAK_BF16_DENSE.items() if k in name), None)
    return matmul_flops(model, tokens) / peak if peak else None


def check_varlen(device: str, dtype: torch.dtype) -> dict[str, float]:
    """Max abs error of ``varlen_attention`` (flash on CUDA) against the float32 reference."""
    gen = torch.Generator(device="cpu").manual_seed(0)
    errors: dict[str, float] = {}
    h, kvh, d = 28, 4, 128

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen).to(device=device, dtype=dtype)

    def i32(values: list[int]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.int32, device=device)

    cases: dict[str, tuple[Any, ...]] = {}
    # prefix prefill: causal, packed, equal q/k segments
    lens = [37, 300, 5]
    cu = [0, 37, 337, 342]
    cases["causal_packed"] = (
        rand(342, h, d),
        rand(342, kvh, d),
        rand(342, kvh, d),
        i32(cu),
        i32(cu),
        max(lens),
        max(lens),
        True,
        None,
    )
    # decode part A: rows of a group against its prefix
    cases["groups_vs_prefix"] = (
        rand(7, h, d),
        rand(342, kvh, d),
        rand(342, kvh, d),
        i32([0, 3, 4, 7]),
        i32(cu),
        3,
        300,
        False,
        None,
    )
    # decode part B: one query per row against a row buffer with seqused_k
    width = 64
    cases["rows_seqused"] = (
        rand(5, h, d),
        rand(5 * width, kvh, d),
        rand(5 * width, kvh, d),
        i32([0, 1, 2, 3, 4, 5]),
        i32([r * width for r in range(6)]),
        1,
        60,
        False,
        i32([1, 17, 60, 33, 2]),
    )
    for name, (q, k, v, cq, ck, mq, mk, causal, used) in cases.items():
        scale = d**-0.5
        out, lse = varlen_attention(
            q, k, v, cq, ck, mq, mk, causal=causal, scale=scale, seqused_k=used
        )
        ref_out, ref_lse = _varlen_reference(
            q, k, v, cq, ck, causal=causal, scale=scale, seqused_k=used
        )
        errors[name + "_out"] = float((out.float() - ref_out.float()).abs().max())
        errors[name + "_lse"] = float((lse - ref_lse).abs().max())
    return errors
