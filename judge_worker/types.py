"""Plain data passed between the Django side, the engine and the backends."""

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
