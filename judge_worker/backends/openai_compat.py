"""The "openai" backend: any OpenAI-compatible ``/v1/chat/completions`` endpoint.

Bounded concurrency with threads (httpx's sync client is thread-safe), per-request timeouts,
retries with exponential backoff on 429, 5xx and connection errors. Other 4xx are not retried:
they mean the request itself is wrong and would fail again.

It judges (:meth:`OpenAIBackend.judge`, greedy verdicts) and generates free-text answers
(:meth:`OpenAIBackend.generate`, the item's own sampling settings and seed passed through; how
far a seed makes the text reproducible is the server's business — vLLM honours it per request).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from judge_worker.parsing import JudgeParse, parse_judge_output
from judge_worker.types import GenerationItem, GenerationOutput, JudgeItem, JudgeOutput

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
# finish_reason values of OpenAI-compatible servers meaning the model ended its answer itself
# (None: servers that do not say). "length" (and Anthropic-style "max_tokens") is the cut-off;
# anything else ("content_filter", "tool_calls", "abort", ...) is not a normal answer.
NORMAL_STOPS = frozenset({None, "stop", "eos", "eos_token", "end_turn", "stop_sequence"})
LENGTH_STOPS = frozenset({"length", "max_tokens"})


class OpenAIBackend:
    """Judge through an OpenAI-compatible chat-completions endpoint."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        max_new_tokens: int = 1024,
        concurrency: int = 8,
        timeout_s: float = 120.0,
        max_retries: int = 5,
        backoff_s: float = 0.5,
        client: httpx.Client | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.max_new_tokens = max_new_tokens
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = client or httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
            headers=headers,
            limits=httpx.Limits(max_connections=concurrency),
        )

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        attempt = 0
        while True:
            try:
                resp = self.client.post(self.url, json=payload)
                if resp.status_code not in RETRY_STATUS:
                    resp.raise_for_status()
                    return dict(resp.json())
                error: Exception = httpx.HTTPStatusError(
                    f"HTTP {resp.status_code}", request=resp.request, response=resp
                )
                retry_after = resp.headers.get("retry-after")
            except (httpx.TransportError, httpx.RemoteProtocolError) as exc:
                error, retry_after = exc, None
            attempt += 1
            if attempt > self.max_retries:
                raise error
            delay = self.backoff_s * 2 ** (attempt - 1) * (1 + random.random() / 4)  # noqa: S311
            if retry_after and retry_after.replace(".", "", 1).isdigit():
                delay = max(delay, float(retry_after))
            time.sleep(delay)

    def _one(self, item: JudgeItem) -> JudgeOutput:
        payload = {
            "model": self.model,
            "messages": item.messages,
            "max_tokens": self.max_new_tokens,
            "temperature": 0,
        }
        start = time.perf_counter()
        try:
            data = self._post(payload)
        except (httpx.HTTPError, ValueError) as exc:
            # A request that failed after retries becomes a failed parse (raw kept empty), so one
            # bad item does not lose the whole batch.
            msg = f"request failed: {exc}"
            return JudgeOutput(
                item_id=item.item_id,
                raw_text="",
                parse=JudgeParse(ok=False, score=None, feedback="", error=msg, raw=""),
                prompt_tokens=0,
                generated_tokens=0,
                seconds=time.perf_counter() - start,
            )
        text = data["choices"][0]["message"].get("content") or ""
        usage = data.get("usage") or {}
        return JudgeOutput(
            item_id=item.item_id,
            raw_text=text,
            parse=parse_judge_output(text, item.allowed_scores),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            generated_tokens=int(usage.get("completion_tokens", 0)),
            seconds=time.perf_counter() - start,
        )

    def judge(self, items: Sequence[JudgeItem]) -> list[JudgeOutput]:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self._one, items))

    # -- Generator (free-text answers) ------------------------------------------------------

    def _generate_one(self, item: GenerationItem) -> GenerationOutput:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": item.messages,
            "max_tokens": item.max_new_tokens,
            "temperature": item.temperature,
            "top_p": item.top_p,
        }
        if item.top_k > 0:  # not an OpenAI field; vLLM and others read it as an extra
            payload["top_k"] = item.top_k
        if item.seed is not None:
            payload["seed"] = item.seed
        start = time.perf_counter()
        try:
            data = self._post(payload)
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
            reason = choice.get("finish_reason")
            usage = data.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens") or 0)
            generated_tokens = int(usage.get("completion_tokens") or 0)
        except (
            httpx.HTTPError,
            ValueError,
            KeyError,
            IndexError,
            TypeError,
            AttributeError,
        ) as exc:
            # Failed after retries (or an answer that is not a chat completion): an error row,
            # never an invented text, so one bad item does not lose the whole batch.
            return GenerationOutput(
                item_id=item.item_id,
                text="",
                finish_reason="error",
                prompt_tokens=0,
                generated_tokens=0,
                seconds=time.perf_counter() - start,
                error=f"request failed: {exc!r}",
            )
        if reason in LENGTH_STOPS:
            finish, error = "length", ""
        elif reason in NORMAL_STOPS:
            finish, error = "stop", ""
        else:
            # The text is what the server sent (possibly cut short); the row is an error.
            finish, error = "error", f"finish_reason {reason!r}"
        return GenerationOutput(
            item_id=item.item_id,
            text=text,
            finish_reason=finish,
            prompt_tokens=prompt_tokens,
            generated_tokens=generated_tokens,
            seconds=time.perf_counter() - start,
            error=error,
        )

    def generate(self, items: Sequence[GenerationItem]) -> list[GenerationOutput]:
        """Answer each item through the endpoint (bounded concurrency, retries as judging)."""
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self._generate_one, items))
