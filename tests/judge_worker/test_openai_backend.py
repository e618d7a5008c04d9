"""The openai backend's retry and error handling, against a scripted HTTP transport."""

from __future__ import annotations

import json

import httpx

from judge_worker.backends.openai_compat import OpenAIBackend
from judge_worker.types import JudgeItem

ITEM = JudgeItem(
    item_id="t1",
    prefix_key="a",
    messages=[{"role": "user", "content": "оцени"}],
    allowed_scores=(0.0, 1.0, 2.0),
)


def completion(text: str) -> dict[str, object]:
    return {
        "choices": [{"message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7},
    }


def backend_with(handler: httpx.MockTransport, retries: int = 3) -> OpenAIBackend:
    client = httpx.Client(transport=handler)
    return OpenAIBackend(
        "http://judge.test/v1", "m", client=client, max_retries=retries, backoff_s=0.001
    )


def test_retries_429_and_503_then_succeeds() -> None:
    statuses = iter([429, 503])
    seen: list[dict[str, object]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        status = next(statuses, 200)
        if status != 200:
            return httpx.Response(status, json={"error": "busy"})
        return httpx.Response(200, json=completion("[FEEDBACK] ok [RESULT] 2 [END]"))

    [out] = backend_with(httpx.MockTransport(handle)).judge([ITEM])
    assert len(seen) == 3
    assert seen[0]["messages"] == ITEM.messages and seen[0]["temperature"] == 0
    assert out.parse.ok and out.parse.score == 2.0
    assert (out.prompt_tokens, out.generated_tokens) == (11, 7)


def test_gives_up_after_retries_without_inventing_a_score() -> None:
    calls = 0

    def handle(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        raise httpx.ConnectError("refused", request=request)

    [out] = backend_with(httpx.MockTransport(handle), retries=2).judge([ITEM])
    assert calls == 3
    assert not out.parse.ok and out.parse.score is None
    assert out.parse.error is not None and "request failed" in out.parse.error


def test_client_error_is_not_retried() -> None:
    calls = 0

    def handle(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(400, json={"error": "bad"})

    [out] = backend_with(httpx.MockTransport(handle)).judge([ITEM])
    assert calls == 1 and not out.parse.ok
