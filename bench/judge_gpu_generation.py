"""Answer generation through ``HFBackend.generate`` on POLLUX-like instructions (random weights).

Run through ``python bench/judge_gpu.py --generation`` (see :func:`run_generation`); the model
and scales are the judge benchmark's (:mod:`bench.judge_gpu_workload`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any
from unittest import mock

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from bench.judge_gpu_workload import SCALES, Scale, build_model, sync
from judge_worker.types import GenerationItem


@dataclass(frozen=True)
class GenScale:
    """The answer-generation workload (see :func:`run_generation`); lengths are in tokens."""

    instructions: int  # the set the minutes are projected to
    measured: int  # first instructions of the set timed on the batched path(s)
    batch_sizes: tuple[int, ...]  # HFBackend batch sizes tried, the first one always
    baseline_items: int  # first instructions of the set timed at batch size 1
    prompt_median: int
    prompt_sigma: float  # lognormal sigma of the prompt length
    prompt_range: tuple[int, int]
    answer_median: int
    answer_sigma: float  # lognormal sigma of the drawn answer length
    answer_range: tuple[int, int]
    max_new_tokens: int  # every item's limit: above answer_range, so every row ends on EOS
    # Lease guards, seconds since the run started: no baseline item / batch of the first batch
    # size starts after these; further batch sizes start only before more_start_s and stop
    # starting batches after more_stop_s. A path cut short reports its completed batches.
    baseline_stop_s: float
    batched_stop_s: float
    more_start_s: float
    more_stop_s: float


GEN_SCALES: dict[str, GenScale] = {
    "small": GenScale(
        instructions=12, measured=12, batch_sizes=(4, 8), baseline_items=4,
        prompt_median=35, prompt_sigma=0.885, prompt_range=(4, 300),
        answer_median=35, answer_sigma=0.65, answer_range=(4, 100),
        max_new_tokens=128, baseline_stop_s=600, batched_stop_s=600, more_start_s=600,
        more_stop_s=600,
    ),
    "full": GenScale(
        instructions=2100, measured=256, batch_sizes=(64, 128), baseline_items=4,
        prompt_median=350, prompt_sigma=0.885, prompt_range=(16, 3000),
        answer_median=350, answer_sigma=0.65, answer_range=(40, 1000),
        max_new_tokens=1024, baseline_stop_s=150, batched_stop_s=300, more_start_s=230,
        more_stop_s=330,
    ),
}  # fmt: skip

GEN_TEMPERATURE = 0.7
GEN_TOP_P = 0.95
_GEN_EOS = 1
_GEN_PAD = 0


def make_generation_workload(
    gs: GenScale, vocab: int, seed: int = 0
) -> list[tuple[list[int], int]]:
    """``gs.instructions`` pairs (prompt token ids, drawn answer length), independent draws.

    Prompt length: lognormal, median ``prompt_median``, sigma ``prompt_sigma`` (0.885: 5 % of the
    prompts above 4.3 x the median, i.e. > 1,500 at full scale), clipped to ``prompt_range``.
    Answer length: lognormal, median ``answer_median``, sigma ``answer_sigma`` (0.65), clipped to
    ``answer_range`` (full: 40-1,000, ~5.5 % at the cap, mean ~420).
    """
    rng = random.Random(seed)
    out, seen = [], set()
    for _ in range(gs.instructions):
        plen = round(rng.lognormvariate(math.log(gs.prompt_median), gs.prompt_sigma))
        plen = min(max(plen, gs.prompt_range[0]), gs.prompt_range[1])
        alen = round(rng.lognormvariate(math.log(gs.answer_median), gs.answer_sigma))
        alen = min(max(alen, gs.answer_range[0]), gs.answer_range[1])
        prompt = [rng.randrange(10, vocab - 10) for _ in range(plen)]
        assert tuple(prompt) not in seen  # a prompt names its row's answer length
        seen.add(tuple(prompt))
        out.append((prompt, alen))
    return out


class _IdTokenizer:
    """Stands in for a tokenizer under :class:`HFBackend`: a prompt's text is its token ids.

    No chat template: ``HFBackend.encode_messages`` then tokenizes the user message's text, so
    the drawn prompt length is the whole prompt (what a chat template would produce).
    """

    chat_template = None
    eos_token_id = _GEN_EOS
    pad_token_id = _GEN_PAD

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        return {"input_ids": [int(t) for t in text.split()]}

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return " ".join(str(t) for t in ids)


class _MaskEOS(LogitsProcessor):
    """Before the sampler: random weights must not end a row early by drawing EOS."""

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        scores[:, _GEN_EOS] = float("-inf")
        return scores


class _ForceEOS(LogitsProcessor):
    """After the sampler: a row's drawn-length-th token is EOS (what a real model would emit).

    Also times the prefill: the first call comes right after the prompt forward.
    """

    def __init__(self, width: int, lengths: list[int], device: str, record: dict[str, Any]):
        self.width = width
        self.device = device
        self.record = record
        self.due: dict[int, list[int]] = {}
        for row, n in enumerate(lengths):
            self.due.setdefault(n - 1, []).append(row)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        step = input_ids.shape[1] - self.width
        if step == 0:
            sync(self.device)
            self.record["first_token_at"] = time.perf_counter()
        rows = self.due.get(step)
        if rows:
            idx = torch.tensor(rows, device=scores.device)
            scores[idx] = float("-inf")
            scores[idx, _GEN_EOS] = 0.0
        return scores


class _StopPath(BaseException):
    """CUDA OOM in a batch, or the path's time is up. A BaseException so that ``HFBackend`` does
    not catch it and retry the batch item by item (that would take the rest of the lease); the
    harness reports the batches completed before it."""


class _LengthForcingModel:
    """What ``HFBackend`` sees as its model: the real one, whose ``generate`` gets the length
    forcing processors around the backend's own (its ``RowSampler``) and is timed per batch."""

    def __init__(
        self, model: Any, lengths: dict[tuple[int, ...], int], device: str, stop_at: float
    ) -> None:
        self.model = model
        self.generation_config = model.generation_config
        self.lengths = lengths
        self.device = device
        self.stop_at = stop_at
        self.batches: list[dict[str, Any]] = []

    def generate(self, **kwargs: Any) -> Any:
        if time.perf_counter() > self.stop_at:
            raise _StopPath("time: no further batch started")
        ids, mask = kwargs["input_ids"], kwargs["attention_mask"]
        width = ids.shape[1]
        used = mask.sum(dim=1).tolist()
        rows = ids.tolist()
        lengths = [self.lengths[tuple(r[width - n :])] for r, n in zip(rows, used, strict=True)]
        record: dict[str, Any] = {"rows": len(rows), "width": width, "prompt_tokens": sum(used)}
        record["answer_tokens"] = sum(lengths)
        record["steps"] = max(lengths)
        procs = LogitsProcessorList(
            [
                _MaskEOS(),
                *(kwargs.get("logits_processor") or []),
                _ForceEOS(width, lengths, self.device, record),
            ]
        )
        sync(self.device)
        start = time.perf_counter()
        try:
            out = self.model.generate(**{**kwargs, "logits_processor": procs})
        except torch.cuda.OutOfMemoryError as exc:
            raise _StopPath(f"OOM at {len(rows)} rows x {width} prompt tokens: {exc}") from exc
        sync(self.device)
        end = time.perf_counter()
        record["seconds"] = end - start
        record["prefill_seconds"] = record.pop("first_token_at") - start
        decode_steps = record["steps"] - 1
        if decode_steps:
            record["decode_ms_per_step"] = (
                (end - start - record["prefill_seconds"]) / decode_steps * 1e3
            )
        self.batches.append(record)
        return out


def _gen_items(work: list[tuple[list[int], int]], max_new: int) -> list[GenerationItem]:
    return [
        GenerationItem(
            item_id=f"i{i}",
            messages=[{"role": "user", "content": " ".join(str(t) for t in prompt)}],
            max_new_tokens=max_new,
            temperature=GEN_TEMPERATURE,
            top_p=GEN_TOP_P,
            seed=i,
        )
        for i, (prompt, _n) in enumerate(work)
    ]


def run_generation_path(
    model: Any,
    work: list[tuple[list[int], int]],
    sc: Scale,
    gs: GenScale,
    batch_size: int,
    stop_at: float = math.inf,
) -> dict[str, Any]:
    """Time ``HFBackend.generate`` itself (batch size ``batch_size``) on ``work``.

    No batch starts after ``stop_at`` (``time.perf_counter``); a path cut short (time or OOM)
    reports the batches it completed (``complete`` false, ``stopped`` says why).
    """
    from judge_worker.backends import hf

    wrapped = _LengthForcingModel(model, {tuple(p): n for p, n in work}, sc.device, stop_at)
    loaded = hf.LoadedModel(
        model=wrapped,
        tokenizer=_IdTokenizer(),
        device=torch.device(sc.device),
        lock=threading.Lock(),
    )
    # The backend's constructor loads weights from a path; hand it the random model instead.
    with mock.patch.object(hf, "load_model", lambda path, device=None: loaded):
        backend = hf.HFBackend(
            "random-weights", max_new_tokens=gs.max_new_tokens, batch_size=batch_size
        )
    items = _gen_items(work, gs.max_new_tokens)
    if sc.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    stopped = ""
    wrong: list[str] = []
    sync(sc.device)
    start = time.perf_counter()
    try:
        outputs = backend.generate(items)
    except _StopPath as exc:
        stopped = str(exc)[:300]
        if sc.device == "cuda":
            torch.cuda.empty_cache()
    else:
        wrong = [
            o.item_id
            for o, (_p, n) in zip(outputs, work, strict=True)
            if o.finish_reason != "stop" or o.generated_tokens != n
        ]
    sync(sc.device)
    done = wrapped.batches
    # Complete: the whole wall time; cut short: the completed batches' own times.
    seconds = sum(b["seconds"] for b in done) if stopped else time.perf_counter() - start
    instructions = sum(b["rows"] for b in done)
    answer_tokens = sum(b["answer_tokens"] for b in done)
    prompt_tokens = sum(b["prompt_tokens"] for b in done)
    computed = sum(b["rows"] * b["steps"] for b in done)
    prefill = sum(b["rows"] * b["width"] for b in done)
    steps = [b for b in done if "decode_ms_per_step" in b]
    res: dict[str, Any] = {
        "batch_size": batch_size,
        "complete": not stopped,
        "stopped": stopped,
        "instructions": instructions,
        "seconds": seconds,
        "answer_tokens": answer_tokens,
    }
    if not done:
        return res
    res.update(
        tokens_per_s=answer_tokens / seconds,
        instructions_per_s=instructions / seconds,
        # decode positions computed for rows that had already ended, per useful token
        padding_waste=(computed - answer_tokens) / answer_tokens,
        prompt_padding_waste=(prefill - prompt_tokens) / prompt_tokens,
        prefill_seconds=sum(b["prefill_seconds"] for b in done),
        decode_ms_per_step_mean=(
            sum(b["decode_ms_per_step"] for b in steps) / len(steps) if steps else None
        ),
        peak_gib=torch.cuda.max_memory_allocated() / 2**30 if sc.device == "cuda" else None,
        outputs_wrong=wrong,
        batches=[
            {k: (round(v, 3) if isinstance(v, float) else v) for k, v in b.items()} for b in done
        ],
    )
    return res


def run_generation(
    scale: str = "small",
    measured: int | None = None,
    batch_sizes: tuple[int, ...] | None = None,
    no_cudnn: bool = False,
) -> str:
    """Answer generation for ``instructions`` POLLUX-like instructions through ``HFBackend``.

    Workload (:func:`make_generation_workload`): full scale 2,100 instructions, prompts lognormal
    median 350 tokens (5 % > 1,500, capped at 3,000), answers lognormal median 350 tokens clipped
    to 40-1,000; every item sampled at temperature 0.7, top_p 0.95, seeded (``RowSampler``),
    ``max_new_tokens`` 1,024. Random weights never end an answer, so EOS is masked until the row's
    drawn length and forced there (logits processors around the backend's own): every answer is
    exactly its drawn length, ending "stop". Qwen2-7B shape, bf16 on the GPU.

    Paths, on the same instructions in the same run, both ``HFBackend.generate`` itself (the
    random model handed to its constructor in place of a loaded one):

    * batched: the backend's batching, ``batch_size`` rows (prompts sorted by length, left
      padding, one ``model.generate`` per batch: a batch runs until its longest answer ends, the
      ended rows computed along). Timed on the first ``measured`` instructions (full: 256),
      minutes scaled by instructions to the 2,100.
    * baseline: batch size 1 on the first ``baseline_items`` instructions (full: 4), minutes
      scaled by answer tokens to the 2,100.

    Last line: ``generation-gpu: VALUE tokens/s (baseline VALUE tokens/s, ratio R; 2100
    instructions in M min)``, VALUE the fastest batch size that fit. ``no_cudnn``: SDPA may not
    pick cuDNN attention (which plans anew for every key length, i.e. every decode step); by
    default the kernels are the backend's, as in the product.
    """
    t_start = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if no_cudnn:
            from torch.nn.attention import SDPBackend, sdpa_kernel

            kernels = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
            stack.enter_context(sdpa_kernel(kernels))
        return _run_generation(scale, measured, batch_sizes, no_cudnn, t_start)


def _run_generation(
    scale: str,
    measured: int | None,
    batch_sizes: tuple[int, ...] | None,
    no_cudnn: bool,
    t_start: float,
) -> str:
    sc = SCALES[scale]
    gs = GEN_SCALES[scale]
    if measured:
        gs = GenScale(**{**asdict(gs), "measured": measured})
    if batch_sizes:
        gs = GenScale(**{**asdict(gs), "batch_sizes": batch_sizes})
    if sc.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--scale full needs a CUDA GPU")
    info: dict[str, Any] = {
        "scale": scale,
        "workload": asdict(gs),
        "temperature": GEN_TEMPERATURE,
        "top_p": GEN_TOP_P,
        "sdpa_no_cudnn": no_cudnn,
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
    }
    if sc.device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
    t = time.perf_counter()
    model = build_model(sc)
    info["build_seconds"] = time.perf_counter() - t
    work = make_generation_workload(gs, sc.vocab)
    set_tokens = sum(n for _p, n in work)
    answers = [n for _p, n in work]
    info["set"] = {
        "instructions": len(work),
        "answer_tokens": set_tokens,
        "answer_mean": set_tokens / len(work),
        "answer_median": sorted(answers)[len(answers) // 2],
        "answer_at_cap": sum(n == gs.answer_range[1] for n in answers) / len(answers),
        "prompt_tokens": sum(len(p) for p, _n in work),
        "prompt_median": sorted(len(p) for p, _n in work)[len(work) // 2],
        "prompt_over_1500": sum(len(p) > 1500 for p, _n in work) / len(work),
    }
    measured_work = work[: gs.measured]
    info["measured_answer_tokens"] = sum(n for _p, n in measured_work)
    # Warm-up outside the timed region (kernel selection, allocator), both batch shapes.
    warm_gs = GenScale(**{**asdict(gs), "max_new_tokens": 8})
    warm = [(p[:32], 4) for p, _n in work[-4:]]
    run_generation_path(model, warm, sc, warm_gs, 4)
    run_generation_path(model, warm[:1], sc, warm_gs, 1)

    def report(key: str, res: dict[str, Any]) -> None:
        info[key] = res
        print(
            f"{key}: " + json.dumps({k: v for k, v in res.items() if k != "batches"}, default=str),
            flush=True,
        )
        out_path = os.environ.get("JUDGE_BENCH_JSON")
        if out_path:
            with open(out_path, "w", encoding="utf-8") as fh:
                json.dump(info, fh, indent=2, default=str)

    # Baseline first: its few items have a predictable cost, and a ratio needs it.
    base_work = work[: gs.baseline_items]
    base = run_generation_path(model, base_work, sc, gs, 1, t_start + gs.baseline_stop_s)
    report("baseline_batch_1", base)
    batched: list[dict[str, Any]] = []
    for k, bs in enumerate(gs.batch_sizes):
        if k and time.perf_counter() - t_start > gs.more_start_s:
            report(f"batched_{bs}", {"batch_size": bs, "stopped": "skipped: time"})
            continue
        stop_at = t_start + (gs.more_stop_s if k else gs.batched_stop_s)
        res = run_generation_path(model, measured_work, sc, gs, bs, stop_at)
        report(f"batched_{bs}", res)
        batched.append(res)
    # A path cut short counts only if complete ones are missing (its batches are the shortest
    # prompts: it is flagged in the JSON).
    ok = [r for r in batched if r["complete"]] or [r for r in batched if "tokens_per_s" in r]
    if not ok or "tokens_per_s" not in base:
        raise SystemExit("no batched result or no baseline: see above")
    best = max(ok, key=lambda r: r["tokens_per_s"])
    for r in batched:
        if "instructions_per_s" in r:
            r["minutes_2100"] = gs.instructions / r["instructions_per_s"] / 60
    base["minutes_2100"] = set_tokens / base["tokens_per_s"] / 60
    info["best_batch_size"] = best["batch_size"]
    report("best", best)
    print(json.dumps(info, indent=2, default=str))
    line = (
        f"generation-gpu: {best['tokens_per_s']:.0f} tokens/s "
        f"(baseline {base['tokens_per_s']:.0f} tokens/s, "
        f"ratio {best['tokens_per_s'] / base['tokens_per_s']:.2f}; "
        f"{gs.instructions} instructions in {best['minutes_2100']:.1f} min)"
    )
    print(line)
    return line
