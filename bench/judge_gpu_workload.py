"""The judge benchmark's workload and model: scales, shapes, POLLUX-shaped prompts, budgets.

A prompt is an answer's shared prefix followed by a criterion suffix (see :mod:`bench.judge_gpu`);
the model is a Qwen2 shape with random weights, built directly on the target device.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any

import torch
from transformers import AutoModelForCausalLM, Qwen2Config

from judge_worker.backends.cascade import kv_slots_for
from judge_worker.backends.cascade_attention import KVPool


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
    suffix_chunk_rows: int
    # Cascade path: key/value slots per batch (0: sized from free GPU memory), rows per batch,
    # tokens per packed prefill forward.
    cascade_budget: int
    cascade_max_rows: int
    prefill_chunk_tokens: int
    device: str
    dtype: str


SCALES: dict[str, Scale] = {
    "small": Scale(
        hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, vocab=512,
        n_answers=4, criteria=4, prefix_range=(30, 90), suffix_range=(8, 24), new_tokens=8,
        baseline_budget=8 * 120, shared_budget=16 * 140, max_rows=16, suffix_chunk_rows=8,
        cascade_budget=1200, cascade_max_rows=12, prefill_chunk_tokens=100,
        device="cpu", dtype="float32",
    ),
    "full": Scale(
        hidden=3584, layers=28, heads=28, kv_heads=4, intermediate=18944, vocab=152064,
        n_answers=48, criteria=16, prefix_range=(350, 2700), suffix_range=(150, 300),
        new_tokens=150,
        # shared_budget 0: sized from the GPU's memory at run time (see fit_budget)
        baseline_budget=128_000, shared_budget=0, max_rows=512, suffix_chunk_rows=128,
        cascade_budget=0, cascade_max_rows=1024, prefill_chunk_tokens=32_768,
        device="cuda", dtype="bfloat16",
    ),
}  # fmt: skip


# Model shapes of the full scale (random bf16 weights): POLLUX's judge family is 7B and 32B.
SHAPES: dict[str, dict[str, int]] = {
    "7b": {"hidden": 3584, "layers": 28, "heads": 28, "kv_heads": 4, "intermediate": 18944},
    "32b": {"hidden": 5120, "layers": 64, "heads": 40, "kv_heads": 8, "intermediate": 27648},
}
# The 32B shape beside ~65 GB of weights on an H100: smaller packed prefills leave room for keys.
SHAPE_OVERRIDES: dict[str, dict[str, int]] = {"32b": {"prefill_chunk_tokens": 8192}}
# Variable-length workload: each triple's judge output ends (EOS) after a length drawn
# uniformly from this range (POLLUX-like spread of rationale lengths; see docs).
VARIABLE_LENGTHS = (40, 400)
PEAK_BF16_DENSE = {"H100": 989.4e12, "H200": 989.4e12}  # vendor datasheets (SXM), TFLOP/s


def scale_for(scale: str, shape: str = "7b") -> Scale:
    sc = SCALES[scale]
    if scale == "small" or shape == "7b":
        return sc
    return Scale(**{**asdict(sc), **SHAPES[shape], **SHAPE_OVERRIDES.get(shape, {})})


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


def fit_budget(model: Any, sc: Scale) -> Scale:
    """Size the shared path's KV cache (rows x length slots) from the free GPU memory."""
    if sc.shared_budget or sc.device != "cuda":
        return sc
    slot = KVPool.slot_bytes(model)
    free, _total = torch.cuda.mem_get_info()
    # Keep ~14 GiB for prefill activations (suffix chunk of 128 rows x 300 tokens) and logits.
    budget = int((free - 14 * 2**30) / slot)
    # Cascade: what the judge backend itself sizes (room for a packed prefill and the logits).
    cascade = (
        sc.cascade_budget
        or kv_slots_for(
            model, max_rows=sc.cascade_max_rows, prefill_chunk_tokens=sc.prefill_chunk_tokens
        )
        or 0
    )
    return Scale(
        **{**asdict(sc), "shared_budget": max(budget, 64 * 3200), "cascade_budget": cascade}
    )


def draw_lengths(
    answers: list[Answer], seed: int = 3, bounds: tuple[int, int] = VARIABLE_LENGTHS
) -> list[int]:
    """One output length per triple (answer order, then criterion order)."""
    rng = random.Random(seed)
    return [rng.randint(*bounds) for a in answers for _s in a.suffixes]
