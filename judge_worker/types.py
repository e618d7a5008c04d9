"""Plain data passed between the Django side, the engine and the backends.

Two kinds of work: judging (``JudgeItem`` -> ``JudgeOutput``, a verdict per (answer, criterion))
and generation (``GenerationItem`` -> ``GenerationOutput``, a model's free-text answer to an
instruction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from judge_worker.parsing import JudgeParse


@dataclass(frozen=True)
class JudgeItem:
    """One (answer, criterion) pair to judge.

    ``prefix_key`` identifies the (instruction, answer) pair: items with the same key share the
    prompt up to the criterion section, which backends exploit (prefix KV sharing, batching).
    """

    item_id: str
    prefix_key: str
    messages: list[dict[str, str]]
    allowed_scores: tuple[float, ...]
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def prompt(self) -> str:
        """The user prompt text (the single user message)."""
        return "\n\n".join(m["content"] for m in self.messages if m["role"] == "user")


@dataclass(frozen=True)
class JudgeOutput:
    """What a backend returns for one item."""

    item_id: str
    raw_text: str
    parse: JudgeParse
    prompt_tokens: int
    generated_tokens: int
    seconds: float


class JudgeBackend(Protocol):
    """Anything that can judge a batch of items (local model, HTTP endpoint)."""

    def judge(self, items: Sequence[JudgeItem]) -> list[JudgeOutput]: ...


@dataclass(frozen=True)
class GenerationItem:
    """One prompt to answer with free text (a generation run's instruction).

    ``temperature`` 0 is greedy decoding (``top_p``, ``top_k`` and ``seed`` then do not matter);
    above 0 the next token is sampled, restricted by ``top_p`` (nucleus) and ``top_k`` (0 = off).
    ``seed`` makes a sampled item reproducible: the same item with the same seed gives the same
    text (see each backend for the exact guarantee).
    """

    item_id: str
    messages: list[dict[str, str]]  # chat messages (system optional, then user)
    max_new_tokens: int = 1024
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 = off
    seed: int | None = None  # per-item seed: same item + seed -> same text


@dataclass(frozen=True)
class GenerationOutput:
    """What a generator returns for one item.

    ``finish_reason``: "stop" (the model ended the answer: EOS or a stop sequence), "length" (it
    produced ``max_new_tokens`` tokens without ending) or "error" (no answer: ``error`` says why
    and ``text`` is never invented). ``attempts``: the HTTP requests an endpoint backend made for
    the item (1 + its retries; 0 when a request budget refused the first); 1 for local weights.
    """

    item_id: str
    text: str
    finish_reason: str
    prompt_tokens: int
    generated_tokens: int
    seconds: float
    error: str = ""
    attempts: int = 1


class Generator(Protocol):
    """Anything that can answer a batch of prompts with free text (local model, HTTP endpoint)."""

    def generate(self, items: Sequence[GenerationItem]) -> list[GenerationOutput]: ...
