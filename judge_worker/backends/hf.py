"""The "transformers" backend: a local model judged in-process.

The model is loaded once per process (a directory, or a GGUF file which transformers
dequantizes), bf16 on CUDA, float32 on CPU, SDPA attention. Items sharing an (instruction,
answer) prefix are batched together; their common prompt prefix is prefilled once and, for the
model families :mod:`judge_worker.backends.cascade` supports (Llama, Qwen2/3, Mistral without a
sliding window), stored and read once per answer in decoding (cascade attention); other models
copy it into every row (:mod:`judge_worker.backends.prefix_decode`). Decoding is greedy, and the
score after ``[RESULT]`` can be constrained to the criterion's scale (:class:`ScoreConstraint`).

The same model also answers prompts with free text (:meth:`HFBackend.generate`, generation
runs): plain left-padded batches, greedy or sampled per item (:class:`RowSampler`), each sampled
row drawing from a random stream of its own so a seeded item's text does not depend on the
other items of its batch.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch
from torch.nn.attention import sdpa_kernel
from transformers import AutoModelForCausalLM, AutoTokenizer, LogitsProcessor, LogitsProcessorList

from judge_worker.backends.cascade import generate_cascade, kv_slots_for, supports_cascade
from judge_worker.backends.prefix_decode import (
    SDPA_BACKENDS,
    DecodeStep,
    PrefixGroup,
    cut_at_eos,
    generate_shared,
)
from judge_worker.engine import chunk_items, order_items
from judge_worker.parsing import format_score, parse_judge_output
from judge_worker.types import GenerationItem, GenerationOutput, JudgeItem, JudgeOutput

# Tokens after which the decoded tail is checked for "[RESULT]": only those whose text could
# end the tag or follow it ("]", "*", whitespace). Decoding every row at every step would cost
# more than the forward pass on CPU.
_TRIGGER_CHARS = ("]", "*", " ", "\n", "\t")
_RESULT_TAIL_RE = re.compile(r"\[\s*result\s*\]\**\s*$", re.IGNORECASE)


@dataclass
class LoadedModel:
    model: Any
    tokenizer: Any
    device: torch.device
    lock: threading.Lock


def _resolve(path: str | os.PathLike[str]) -> tuple[str, dict[str, str]]:
    p = Path(path)
    if p.is_file() and p.suffix == ".gguf":
        return str(p.parent), {"gguf_file": p.name}
    return str(p), {}


@lru_cache(maxsize=4)
def load_model(path: str, device: str | None = None) -> LoadedModel:
    """Load (once per process and path) a causal LM and its tokenizer from a dir or GGUF file."""
    where, extra = _resolve(path)
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    tokenizer = AutoTokenizer.from_pretrained(where, **extra)
    model = AutoModelForCausalLM.from_pretrained(
        where, dtype=dtype, attn_implementation="sdpa", **extra
    )
    model.to(dev)  # type: ignore[arg-type]  # transformers' stub misreads nn.Module.to
    model.eval()
    return LoadedModel(model=model, tokenizer=tokenizer, device=dev, lock=threading.Lock())


class ScoreConstraint:
    """Greedy-step processor: right after ``[RESULT]`` only a value of the row's scale may follow.

    Per row, once the generated text ends with ``[RESULT]`` (optionally bold, optionally a space)
    the allowed next tokens are the first tokens of the spellings of the scale's values; the
    following tokens walk a trie of those spellings. Once a spelling is complete (or the model
    leaves the trie) the row is released. A spelling that is a prefix of another ("1" and
    "10.5") releases at the shorter one; the parser still validates the final text.
    """

    def __init__(self, tokenizer: Any, allowed_per_row: Sequence[Sequence[float]]) -> None:
        self.tokenizer = tokenizer
        self.roots = [self._tries(tuple(float(a) for a in allowed)) for allowed in allowed_per_row]
        self.state: list[dict[int, Any] | None] = [None] * len(allowed_per_row)
        self.triggers = _trigger_ids(tokenizer)

    @staticmethod
    def _trie(tokenizer: Any, spellings: Sequence[str]) -> dict[int, Any]:
        root: dict[int, Any] = {}
        for text in spellings:
            node = root
            for tok in tokenizer.encode(text, add_special_tokens=False):
                node = node.setdefault(tok, {})
        return root

    def _tries(self, allowed: tuple[float, ...]) -> tuple[dict[int, Any], dict[int, Any]]:
        return _cached_tries(self.tokenizer, allowed)

    def __call__(self, generated: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """The fixed-batch form (rows ``0..n-1``, ``generated`` [rows, steps so far])."""
        n, t = generated.shape
        rows = torch.arange(n, device=generated.device)
        return self.on_step(DecodeStep(rows, torch.full_like(rows, t), generated), scores)

    def on_step(self, step: DecodeStep, scores: torch.Tensor) -> torch.Tensor:
        """The continuous-batch form: score row ``i`` belongs to row ``step.rows[i]``."""
        counts = step.counts.tolist()
        if not any(counts):
            return scores
        rows = step.rows.tolist()
        last = step.history[step.rows, (step.counts - 1).clamp(min=0)].tolist()
        for i, (row, count, tok) in enumerate(zip(rows, counts, last, strict=True)):
            if count == 0:
                continue
            node = self.state[row]
            if node is not None:
                nxt = node.get(tok)
                self.state[row] = nxt if nxt else None  # leaf or off-trie: release
            elif tok in self.triggers:
                tail = self.tokenizer.decode(step.history[row, max(0, count - 8) : count].tolist())
                if _RESULT_TAIL_RE.search(tail):
                    spaced, bare = self.roots[row]
                    self.state[row] = bare if tail[-1:].isspace() else spaced
            node = self.state[row]
            if node:
                allowed = torch.tensor(list(node), device=scores.device)
                keep = scores[i, allowed]
                scores[i] = float("-inf")
                scores[i, allowed] = keep
        return scores


_TRIE_CACHE: dict[tuple[int, tuple[float, ...]], tuple[dict[int, Any], dict[int, Any]]] = {}
_TRIGGER_CACHE: dict[int, frozenset[int]] = {}


def _cached_tries(
    tokenizer: Any, allowed: tuple[float, ...]
) -> tuple[dict[int, Any], dict[int, Any]]:
    key = (id(tokenizer), allowed)
    if key not in _TRIE_CACHE:
        values = [format_score(a) for a in allowed]
        spaced = ScoreConstraint._trie(tokenizer, [" " + v for v in values] + values)
        bare = ScoreConstraint._trie(tokenizer, values)
        _TRIE_CACHE[key] = (spaced, bare)
    return _TRIE_CACHE[key]


def _trigger_ids(tokenizer: Any) -> frozenset[int]:
    key = id(tokenizer)
    if key not in _TRIGGER_CACHE:
        vocab_size = len(tokenizer)
        texts = tokenizer.batch_decode([[i] for i in range(vocab_size)])
        _TRIGGER_CACHE[key] = frozenset(
            i for i, t in enumerate(texts) if any(c in t for c in _TRIGGER_CHARS)
        )
    return _TRIGGER_CACHE[key]


class _HFConstraintAdapter(LogitsProcessor):
    """Runs a :class:`ScoreConstraint` inside ``model.generate`` (which passes prompt + output)."""

    def __init__(self, inner: ScoreConstraint, prompt_len: int) -> None:
        self.inner = inner
        self.prompt_len = prompt_len

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        return self.inner(input_ids[:, self.prompt_len :], scores)  # type: ignore[return-value]


class RowSampler(LogitsProcessor):
    """Per-row sampling inside a greedy ``model.generate``: for every row with temperature > 0
    it draws the next token itself (temperature, then top-k, then top-p, then inverse CDF) and
    leaves only that token finite, so the greedy argmax takes it; temperature-0 rows are left to
    the argmax untouched.

    Why not ``do_sample=True`` with ``torch.manual_seed``: that draws every row from one global
    stream, so a row's text would depend on the rows beside it (and on the batch size). Here each
    row owns a CPU ``torch.Generator`` seeded with its item's seed and takes exactly one uniform
    number from it per step, so the draws of a seeded item are the same alone or in any batch, on
    CPU or GPU. Unseeded rows are seeded from torch's global generator.
    """

    def __init__(self, items: Sequence[GenerationItem]) -> None:
        self.rows = [r for r, it in enumerate(items) if it.temperature > 0]
        sampled = [items[r] for r in self.rows]
        self.temperature = torch.tensor([it.temperature for it in sampled], dtype=torch.float32)
        self.top_p = torch.tensor([it.top_p for it in sampled], dtype=torch.float32)
        self.top_k = torch.tensor([it.top_k for it in sampled], dtype=torch.long)
        self.generators = [
            torch.Generator().manual_seed(
                (it.seed if it.seed is not None else int(torch.randint(0, 2**62, ()).item()))
                % 2**64
            )
            for it in sampled
        ]

    @property
    def active(self) -> bool:
        return bool(self.rows)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if not self.rows:
            return scores
        dev = scores.device
        rows = torch.tensor(self.rows, device=dev)
        logits = scores[rows].float() / self.temperature.to(dev)[:, None]
        # Descending and stable: top-k and top-p are prefixes of this order, ties break the same
        # way every time.
        ordered, order = torch.sort(logits, dim=-1, descending=True, stable=True)
        vocab = ordered.shape[1]
        position = torch.arange(vocab, device=dev)[None, :]
        k = self.top_k.to(dev)[:, None]
        ordered = ordered.masked_fill((k > 0) & (position >= k), float("-inf"))
        probs = torch.softmax(ordered, dim=-1)
        top_p = self.top_p.to(dev)[:, None]
        before = probs.cumsum(dim=-1) - probs  # mass of the more likely tokens
        # Nucleus: keep tokens while the mass before them is under top_p (the first always).
        probs = probs.masked_fill((top_p < 1) & (before >= top_p) & (position > 0), 0.0)
        cdf = probs.cumsum(dim=-1)
        draws = torch.stack(
            [torch.rand((), generator=g, dtype=torch.float64) for g in self.generators]
        )
        target = draws.to(device=dev, dtype=cdf.dtype)[:, None] * cdf[:, -1:]
        pick = torch.searchsorted(cdf, target, right=True).clamp_(max=vocab - 1)
        tokens = order.gather(1, pick).squeeze(1)
        out = scores.clone()
        out[rows] = float("-inf")
        out[rows, tokens] = 0.0
        return out  # type: ignore[return-value]


def _common_prefix_len(seqs: Sequence[Sequence[int]]) -> int:
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for i in range(n):
        tok = first[i]
        if any(s[i] != tok for s in seqs):
            return i
    return n


def _group_batches(groups: Sequence[PrefixGroup], max_rows: int) -> list[list[PrefixGroup]]:
    """Consecutive whole groups of at most ``max_rows`` rows (a larger group goes alone)."""
    out: list[list[PrefixGroup]] = []
    rows = 0
    for grp in groups:
        if out and rows + len(grp.suffixes) <= max_rows:
            out[-1].append(grp)
            rows += len(grp.suffixes)
        else:
            out.append([grp])
            rows = len(grp.suffixes)
    return out


def _left_padded(encoded: Sequence[Sequence[int]], pad: int) -> tuple[Any, Any, int]:
    """Rows of token ids left-padded to one width (decoder-only generation), the attention
    mask and the width."""
    width = max(len(s) for s in encoded)
    ids = torch.full((len(encoded), width), pad, dtype=torch.long)
    mask = torch.zeros((len(encoded), width), dtype=torch.long)
    for r, seq in enumerate(encoded):
        ids[r, width - len(seq) :] = torch.tensor(seq)
        mask[r, width - len(seq) :] = 1
    return ids, mask, width


class HFBackend:
    """Judge with a local transformers model (see module docstring)."""

    name = "transformers"

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        max_new_tokens: int = 1024,
        batch_size: int = 64,
        device: str | None = None,
        share_prefix: bool = True,
        constrain_scores: bool = True,
    ) -> None:
        self.loaded = load_model(str(model_path), device)
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.share_prefix = share_prefix
        self.constrain_scores = constrain_scores

    # -- tokenisation -----------------------------------------------------------------------

    def encode(self, item: JudgeItem) -> list[int]:
        return self.encode_messages(item.messages)

    def encode_messages(self, messages: Sequence[dict[str, str]]) -> list[int]:
        """Prompt token ids of chat messages: the tokenizer's chat template with the assistant
        turn opened; a tokenizer without one (a base model) gets the messages' texts, one
        paragraph each, with its own special tokens (BOS)."""
        tok = self.loaded.tokenizer
        if getattr(tok, "chat_template", None):
            text = tok.apply_chat_template(
                list(messages), add_generation_prompt=True, tokenize=False
            )
            # The chat template already wrote the special tokens (BOS, role markers).
            return list(tok(text, add_special_tokens=False)["input_ids"])
        text = "\n\n".join(m["content"] for m in messages)
        return list(tok(text, add_special_tokens=True)["input_ids"])

    def _eos_ids(self) -> list[int]:
        ids: set[int] = set()
        tok_eos = self.loaded.tokenizer.eos_token_id
        if tok_eos is not None:
            ids.add(int(tok_eos))
        gen_eos = self.loaded.model.generation_config.eos_token_id
        if isinstance(gen_eos, int):
            ids.add(gen_eos)
        elif gen_eos:
            ids.update(int(i) for i in gen_eos)
        return sorted(ids)

    def _pad_id(self) -> int:
        tok = self.loaded.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        return int(pad or 0)

    # -- generation -------------------------------------------------------------------------

    def generate_ids(self, items: Sequence[JudgeItem], *, share_prefix: bool) -> list[list[int]]:
        """Greedy output token ids per item, in the order of ``items`` (one batch)."""
        encoded = [self.encode(it) for it in items]
        constraint = (
            ScoreConstraint(self.loaded.tokenizer, [it.allowed_scores for it in items])
            if self.constrain_scores
            else None
        )
        with self.loaded.lock:  # one forward at a time on a shared model (server threads)
            if share_prefix:
                return self._generate_shared(items, encoded, constraint)
            return self._generate_plain(encoded, constraint)

    def _generate_shared(
        self,
        items: Sequence[JudgeItem],
        encoded: list[list[int]],
        constraint: ScoreConstraint | None,
    ) -> list[list[int]]:
        # Groups in order of first appearance; rows inside generate_shared follow group order,
        # so the constraint's per-row state must be built in that same order.
        order: dict[str, list[int]] = {}
        for idx, it in enumerate(items):
            order.setdefault(it.prefix_key, []).append(idx)
        groups, row_items = [], []
        for idxs in order.values():
            seqs = [encoded[i] for i in idxs]
            # Shared prefix = longest common token prefix, leaving every suffix >= 1 token.
            plen = min(_common_prefix_len(seqs), min(len(s) for s in seqs) - 1)
            groups.append(PrefixGroup(prefix=seqs[0][:plen], suffixes=[s[plen:] for s in seqs]))
            row_items.extend(idxs)
        if constraint is not None:
            constraint = ScoreConstraint(
                self.loaded.tokenizer, [items[i].allowed_scores for i in row_items]
            )
        # The cascade needs a non-empty prefix per group; a lone one-token prompt has none.
        model = self.loaded.model
        eos, pad = self._eos_ids(), self._pad_id()
        if supports_cascade(model) and all(g.prefix for g in groups):
            # Continuous batching: at most batch_size rows decode at once, finished rows leave,
            # waiting groups enter; the key/value pool is sized from free GPU memory.
            result = generate_cascade(
                model,
                groups,
                max_new_tokens=self.max_new_tokens,
                eos_token_ids=eos,
                pad_token_id=pad,
                step_processor=constraint.on_step if constraint is not None else None,
                max_rows=self.batch_size,
                kv_slots=kv_slots_for(model, max_rows=self.batch_size),
            )
        else:
            # The copy-prefix path holds its rows at once: whole groups, batch_size rows a call.
            result = []
            done_rows = 0
            for part in _group_batches(groups, self.batch_size):
                rows = sum(len(g.suffixes) for g in part)
                sub = None
                if constraint is not None:
                    sub = ScoreConstraint(
                        self.loaded.tokenizer,
                        [items[i].allowed_scores for i in row_items[done_rows : done_rows + rows]],
                    )
                result.extend(
                    generate_shared(
                        model,
                        part,
                        max_new_tokens=self.max_new_tokens,
                        eos_token_ids=eos,
                        pad_token_id=pad,
                        step_processor=sub,
                    )
                )
                done_rows += rows
        flat = [ids for per_group in result for ids in per_group]
        out: list[list[int]] = [[] for _ in items]
        for i, ids in zip(row_items, flat, strict=True):
            out[i] = ids
        return out

    def _generate_plain(
        self, encoded: list[list[int]], constraint: ScoreConstraint | None
    ) -> list[list[int]]:
        dev = self.loaded.device
        pad = self._pad_id()
        ids, mask, width = _left_padded(encoded, pad)
        processors = LogitsProcessorList()
        if constraint is not None:
            processors.append(_HFConstraintAdapter(constraint, width))
        eos = self._eos_ids()
        with torch.inference_mode():
            out = self.loaded.model.generate(
                input_ids=ids.to(dev),
                attention_mask=mask.to(dev),
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                eos_token_id=eos or None,
                pad_token_id=pad,
                logits_processor=processors,
            )
        eos_set = set(eos)
        return [cut_at_eos(row, eos_set) for row in out[:, width:].tolist()]

    # -- JudgeBackend -----------------------------------------------------------------------

    def judge(self, items: Sequence[JudgeItem]) -> list[JudgeOutput]:
        tok = self.loaded.tokenizer
        eos = set(self._eos_ids())
        by_id: dict[str, JudgeOutput] = {}
        ordered = order_items(items)
        # With prefix sharing all items go in one call: the engine batches them itself (at most
        # batch_size rows decoding at once, continuously refilled).
        chunks = [ordered] if self.share_prefix else chunk_items(ordered, self.batch_size)
        for chunk in chunks:
            start = time.perf_counter()
            prompt_lens = [len(self.encode(it)) for it in chunk]
            generated = self.generate_ids(chunk, share_prefix=self.share_prefix)
            # Wall time of the call, shared evenly (rows of one call overlap on the GPU).
            per_item = (time.perf_counter() - start) / len(chunk)
            for it, plen, ids in zip(chunk, prompt_lens, generated, strict=True):
                text = tok.decode([t for t in ids if t not in eos], skip_special_tokens=True)
                by_id[it.item_id] = JudgeOutput(
                    item_id=it.item_id,
                    raw_text=text,
                    parse=parse_judge_output(text, it.allowed_scores),
                    prompt_tokens=plen,
                    generated_tokens=len(ids),
                    seconds=per_item,
                )
        return [by_id[it.item_id] for it in items]

    # -- Generator (free-text answers) ------------------------------------------------------

    def generate(self, items: Sequence[GenerationItem]) -> list[GenerationOutput]:
        """Answer each item's messages with free text (see :class:`RowSampler` for sampling).

        Items are batched (up to ``batch_size``, left padding) by equal ``max_new_tokens``,
        shortest prompts together. Determinism: greedy items give the same text for the same
        batch; a seeded sampled item draws the same random numbers alone or in any batch, so its
        text is the same whatever the batch holds as long as its logits are (exactly so in
        float32 on CPU; in bf16 on a GPU the padding of a different batch can move a logit by
        rounding and flip a near tie). A batch that raises is retried item by item, so only the
        item that fails gets finish_reason "error" (with the message, never a text).
        """
        outputs: dict[int, GenerationOutput] = {}
        encoded: dict[int, list[int]] = {}
        for i, it in enumerate(items):
            problem = _invalid_generation(it)
            if not problem:
                try:
                    encoded[i] = self.encode_messages(it.messages)
                except Exception as exc:  # a bad item must not sink the batch
                    problem = f"cannot build the prompt: {exc!r}"
            if problem:
                outputs[i] = _generation_error(it, problem, 0, 0.0)
        by_limit: dict[int, list[int]] = {}
        for i in sorted(encoded, key=lambda i: len(encoded[i])):
            by_limit.setdefault(items[i].max_new_tokens, []).append(i)
        for max_new, indices in by_limit.items():
            for start in range(0, len(indices), self.batch_size):
                chunk = indices[start : start + self.batch_size]
                outputs.update(self._generate_chunk(items, encoded, chunk, max_new))
        return [outputs[i] for i in range(len(items))]

    def _generate_chunk(
        self,
        items: Sequence[GenerationItem],
        encoded: dict[int, list[int]],
        chunk: list[int],
        max_new: int,
    ) -> dict[int, GenerationOutput]:
        start = time.perf_counter()
        try:
            rows = self._generate_free(
                [encoded[i] for i in chunk], [items[i] for i in chunk], max_new
            )
        except Exception as exc:  # reported per item, never swallowed silently
            if len(chunk) > 1:  # find the item that fails; the others still get their answer
                out: dict[int, GenerationOutput] = {}
                for i in chunk:
                    out.update(self._generate_chunk(items, encoded, [i], max_new))
                return out
            i = chunk[0]
            seconds = time.perf_counter() - start
            return {
                i: _generation_error(
                    items[i], f"generation failed: {exc!r}", len(encoded[i]), seconds
                )
            }
        # Wall time of the batch, shared evenly: items of one batch finish together.
        per_item = (time.perf_counter() - start) / len(chunk)
        tok = self.loaded.tokenizer
        eos = set(self._eos_ids())
        drop = eos | {self._pad_id()}
        result = {}
        for i, ids in zip(chunk, rows, strict=True):
            ended = bool(ids) and ids[-1] in eos
            result[i] = GenerationOutput(
                item_id=items[i].item_id,
                text=tok.decode([t for t in ids if t not in drop], skip_special_tokens=True),
                finish_reason="length" if not ended and len(ids) >= max_new else "stop",
                prompt_tokens=len(encoded[i]),
                generated_tokens=len(ids),
                seconds=per_item,
            )
        return result

    def _generate_free(
        self, encoded: list[list[int]], items: list[GenerationItem], max_new: int
    ) -> list[list[int]]:
        """Generated ids per row, up to and including the EOS that ended it (if any)."""
        dev = self.loaded.device
        pad = self._pad_id()
        ids, mask, width = _left_padded(encoded, pad)
        sampler = RowSampler(items)
        processors = LogitsProcessorList([sampler] if sampler.active else [])
        eos = self._eos_ids()
        # Not cuDNN attention: it re-plans at every new key length, which made a decode step
        # 29-70 ms instead of ~30 (bench/judge_gpu.py --generation, H200: 29 -> 18 min for
        # POLLUX's 2,100 instructions at batch 64). The judge's shared-prefix path does the same.
        with self.loaded.lock, torch.inference_mode(), sdpa_kernel(SDPA_BACKENDS):
            out = self.loaded.model.generate(
                input_ids=ids.to(dev),
                attention_mask=mask.to(dev),
                max_new_tokens=max_new,
                do_sample=False,  # sampling, where asked, is RowSampler's (per-row streams)
                eos_token_id=eos or None,
                pad_token_id=pad,
                logits_processor=processors,
            )
        eos_set = set(eos)
        return [cut_at_eos(row, eos_set) for row in out[:, width:].tolist()]


def _invalid_generation(item: GenerationItem) -> str:
    """Why an item's settings cannot be generated ("" when they can)."""
    if item.max_new_tokens < 1:
        return f"max_new_tokens must be at least 1, not {item.max_new_tokens}"
    if not item.temperature >= 0:
        return f"temperature must be >= 0, not {item.temperature}"
    if not 0 < item.top_p <= 1:
        return f"top_p must be in (0, 1], not {item.top_p}"
    if item.top_k < 0:
        return f"top_k must be >= 0 (0 = off), not {item.top_k}"
    if not item.messages:
        return "no messages"
    return ""


def _generation_error(
    item: GenerationItem, message: str, prompt_tokens: int, seconds: float
) -> GenerationOutput:
    return GenerationOutput(
        item_id=item.item_id,
        text="",
        finish_reason="error",
        prompt_tokens=prompt_tokens,
        generated_tokens=0,
        seconds=seconds,
        error=message,
    )
