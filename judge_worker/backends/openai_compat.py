"""The "openai" backend: any OpenAI-compatible ``/v1/chat/completions`` endpoint.

Bounded concurrency with threads (httpx's sync client is thread-safe), per-request timeouts,
retries with exponential backoff on 429, 5xx and connection errors. Other 4xx are not retried:
they mean the request itself is wrong and would fail again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from judge_worker.parsing import JudgeParse, parse_judge_output
from judge_worker.types import JudgeItem, JudgeOutput

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


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
