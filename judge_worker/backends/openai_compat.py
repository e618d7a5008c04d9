"""The "openai" backend: any OpenAI-compatible ``/v1/chat/completions`` endpoint.

Bounded concurrency with threads (httpx's sync client is thread-safe), per-request timeouts,
retries with exponential backoff on 429, 5xx and connection errors. Other 4xx are not retried:
they mean the request itself is wrong and would fail again.

It judges (:meth:`OpenAIBackend.judge`, greedy verdicts) and generates free-text answers
(:meth:`OpenAIBackend.generate`, the item's own sampling settings and seed passed through; how
far a seed makes the text reproducible is the server's business — vLLM honours it per request).

A participant's endpoint is untrusted: with ``guarded=True`` every request goes through
:mod:`judge_worker.backends.guard` (no private, loopback or link-local address, checked at each
request and pinned). Whatever the client, a redirect (3xx) is never followed: the item is an
error, not retried. :class:`RequestBudget` caps the HTTP attempts of one call (first tries and
retries alike), shared by its threads. Error texts carry the exception's message (httpx's name
the URL only), never the API key or the ``Authorization`` header.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpx

from judge_worker.backends.guard import AddressRefused, guarded_client
from judge_worker.parsing import JudgeParse, parse_judge_output
from judge_worker.types import GenerationItem, GenerationOutput, JudgeItem, JudgeOutput

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
# finish_reason values of OpenAI-compatible servers meaning the model ended its answer itself
# (None: servers that do not say). "length" (and Anthropic-style "max_tokens") is the cut-off;
# anything else ("content_filter", "tool_calls", "abort", ...) is not a normal answer.
NORMAL_STOPS = frozenset({None, "stop", "eos", "eos_token", "end_turn", "stop_sequence"})
LENGTH_STOPS = frozenset({"length", "max_tokens"})
# What an HTTP header can carry as a token: a key outside it would fail inside the call with an
# error quoting the header value (h11's "Illegal header value b'Bearer ...'").
KEY_CHARS = re.compile(r"[\x21-\x7e]+")
BUDGET_SPENT = "the request budget of this submission is spent"
MAX_RETRY_AFTER_S = 60.0


class RedirectRefused(Exception):
    """The endpoint answered with a redirect; redirects are never followed."""

    def __init__(self, status: int) -> None:
        super().__init__(
            f"the endpoint answered with a redirect (HTTP {status}); redirects are not followed"
        )


class BudgetSpent(Exception):
    """No request of the call's budget is left for this attempt."""


class RequestBudget:
    """How many HTTP attempts one call may make (first tries and retries alike), shared by its
    threads."""

    def __init__(self, total: int) -> None:
        if total < 0:
            raise ValueError("a request budget cannot be negative")
        self.total = total
        self._spent = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        """Take one request; False (nothing taken) when none is left."""
        with self._lock:
            if self._spent >= self.total:
                return False
            self._spent += 1
            return True

    @property
    def spent(self) -> int:
        with self._lock:
            return self._spent

    @property
    def left(self) -> int:
        with self._lock:
            return self.total - self._spent


@dataclass
class _Attempts:
    """The HTTP attempts one item made (budget units it took)."""

    n: int = 0


# Refusals of the endpoint or of the budget: an error row with the exception's own message.
REFUSALS = (AddressRefused, RedirectRefused, BudgetSpent)


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
        guarded: bool = False,
        allow_private: bool = False,
    ) -> None:
        if api_key and not KEY_CHARS.fullmatch(api_key):
            # Said without the key: it must not reach a log through this message.
            raise ValueError("the API key may hold only printable ASCII characters, without spaces")
        if client is not None and guarded:
            raise ValueError("a guarded backend builds its own client: pass no client")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.max_new_tokens = max_new_tokens
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.guarded = guarded
        self._api_key = api_key or ""
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        if client is not None:
            self.client = client
        elif guarded:
            self.client = guarded_client(
                allow_private=allow_private,
                timeout_s=timeout_s,
                headers=headers,
                max_connections=concurrency,
            )
        else:
            self.client = httpx.Client(
                timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
                headers=headers,
                limits=httpx.Limits(max_connections=concurrency),
            )

    def _scrub(self, text: str) -> str:
        """`text` without the API key (a second guard: no message is known to carry it)."""
        return text.replace(self._api_key, "[key]") if self._api_key else text

    def _post(
        self,
        payload: dict[str, Any],
        budget: RequestBudget | None = None,
        attempts: _Attempts | None = None,
    ) -> dict[str, Any]:
        """The endpoint's JSON answer, retrying 429, 5xx and connection errors. Each attempt
        takes one request of `budget` (BudgetSpent when none is left) and is counted in
        `attempts`. A redirect (RedirectRefused) and a refused address (AddressRefused) are
        never retried."""
        attempt = 0
        error: Exception | None = None
        while True:
            if budget is not None and not budget.take():
                after = f"; the last attempt failed: {error}" if error is not None else ""
                raise BudgetSpent(BUDGET_SPENT + after)
            if attempts is not None:
                attempts.n += 1
            try:
                resp = self.client.post(self.url, json=payload)
                if 300 <= resp.status_code < 400:
                    raise RedirectRefused(resp.status_code)
                if resp.status_code not in RETRY_STATUS:
                    resp.raise_for_status()
                    return dict(resp.json())
                failure: Exception = httpx.HTTPStatusError(
                    f"HTTP {resp.status_code}", request=resp.request, response=resp
                )
                retry_after = resp.headers.get("retry-after")
            except (httpx.TransportError, httpx.RemoteProtocolError) as exc:
                failure, retry_after = exc, None
            error = failure
            attempt += 1
            if attempt > self.max_retries:
                raise failure
            delay = self.backoff_s * 2 ** (attempt - 1) * (1 + random.random() / 4)  # noqa: S311
            if retry_after and retry_after.replace(".", "", 1).isdigit():
                # Capped: an endpoint may not park a worker thread with a long Retry-After.
                delay = max(delay, min(float(retry_after), MAX_RETRY_AFTER_S))
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
        except (httpx.HTTPError, ValueError, *REFUSALS) as exc:
            # A request that failed after retries becomes a failed parse (raw kept empty), so one
            # bad item does not lose the whole batch.
            msg = self._scrub(str(exc) if isinstance(exc, REFUSALS) else f"request failed: {exc}")
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

    def _generate_one(
        self, item: GenerationItem, budget: RequestBudget | None = None
    ) -> GenerationOutput:
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
        attempts = _Attempts()
        try:
            data = self._post(payload, budget, attempts)
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
            *REFUSALS,
        ) as exc:
            # Failed after retries (or an answer that is not a chat completion), refused
            # endpoint, spent budget: an error row, never an invented text, so one bad item does
            # not lose the whole batch.
            error = str(exc) if isinstance(exc, REFUSALS) else f"request failed: {exc!r}"
            return GenerationOutput(
                item_id=item.item_id,
                text="",
                finish_reason="error",
                prompt_tokens=0,
                generated_tokens=0,
                seconds=time.perf_counter() - start,
                error=self._scrub(error),
                attempts=attempts.n,
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
            attempts=attempts.n,
        )

    def generate(
        self, items: Sequence[GenerationItem], *, budget: RequestBudget | None = None
    ) -> list[GenerationOutput]:
        """Answer each item through the endpoint (bounded concurrency, retries as judging).
        With `budget`, every HTTP attempt takes one of its requests; an item finding none left
        is an error row (BUDGET_SPENT) without a call."""
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(partial(self._generate_one, budget=budget), items))
