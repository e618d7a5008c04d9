"""End to end on CPU with real weights (SmolLM2-135M-Instruct, GGUF): hf backend, prefix
sharing vs plain generate, score constraint, and the openai backend against the local server.

SmolLM2-135M is far too small to judge; these tests assert the pipeline (raw text stored, parse
result present, tokens counted), not the judgement.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing may be downloaded at run time

# The judge extra (torch, transformers, gguf) and the weights are part of the test install
# (scripts/install): one missing is a broken install and fails here, it is not skipped.
import torch

from judge_worker.backends.cascade import supports_cascade
from judge_worker.backends.hf import HFBackend, ScoreConstraint
from judge_worker.backends.openai_compat import OpenAIBackend
from judge_worker.prompt import build_messages, render_rubrics
from judge_worker.types import JudgeItem
from judge_worker.weights import smollm2_gguf_path

pytestmark = pytest.mark.judge

MAX_NEW = 48
RUBRICS = render_rubrics([("0", "Ответ неверный."), ("1", "Частично верный."), ("2", "Верный.")])
ANSWERS = [("Сколько будет 2+2?", "4"), ("Назови столицу Франции.", "Париж.")]
CRITERIA = ["Правильность ответа", "Грамотность"]


def make_items() -> list[JudgeItem]:
    items = []
    for a, (instruction, answer) in enumerate(ANSWERS):
        for c, criterion in enumerate(CRITERIA):
            items.append(
                JudgeItem(
                    item_id=f"{a}-{c}",
                    prefix_key=f"answer-{a}",
                    messages=build_messages(
                        instruction=instruction,
                        answer=answer,
                        criterion_name=criterion,
                        rubrics=RUBRICS,
                    ),
                    allowed_scores=(0.0, 1.0, 2.0),
                )
            )
    return items


@pytest.fixture(scope="module")
def backend() -> HFBackend:
    return HFBackend(smollm2_gguf_path(), max_new_tokens=MAX_NEW, batch_size=8, device="cpu")


def test_hf_backend_pipeline(backend: HFBackend) -> None:
    items = make_items()
    outs = backend.judge(items)
    assert [o.item_id for o in outs] == [it.item_id for it in items]
    for out, it in zip(outs, items, strict=True):
        assert out.raw_text.strip()
        assert out.parse.raw == out.raw_text
        assert out.parse.ok == (out.parse.score in it.allowed_scores)
        assert out.parse.ok or out.parse.error
        assert 100 < out.prompt_tokens < 400
        assert 1 <= out.generated_tokens <= MAX_NEW
        assert out.seconds > 0
    # All criteria of one answer share the chat head + instruction + answer tokens.
    a0, a1 = (backend.encode(it) for it in items[:2])
    common = next(i for i, (x, y) in enumerate(zip(a0, a1, strict=False)) if x != y)
    shared_text = backend.loaded.tokenizer.decode(a0[:common])
    assert "### Ответ для оценки:\n4" in shared_text
    assert CRITERIA[0] not in shared_text


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Token-for-token comparisons of two float32 paths: one CPU thread, so that no reduction
    is split differently between calls (rows leaving the batch change its shape, and a busy
    machine may change how a multi-threaded GEMM divides its sums)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.mark.usefixtures("one_thread")
def test_prefix_sharing_matches_plain_generate(backend: HFBackend) -> None:
    items = make_items()
    # SmolLM2 is a Llama: the shared path is the cascade (prefix stored and read once).
    assert supports_cascade(backend.loaded.model)
    shared = backend.generate_ids(items, share_prefix=True)
    plain = backend.generate_ids(items, share_prefix=False)
    # float32 on CPU: the cascade computes the same function, token for token.
    assert shared == plain
    assert all(len(ids) > 0 for ids in shared)


@pytest.mark.usefixtures("one_thread")
def test_the_copy_prefix_fallback_batches_whole_answers(
    backend: HFBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A model family the cascade does not take: whole answers, batch_size rows a call, each
    # call with the score constraint of its own rows.
    monkeypatch.setattr("judge_worker.backends.hf.supports_cascade", lambda model: False)
    monkeypatch.setattr(backend, "batch_size", 2)
    items = make_items()
    assert backend.generate_ids(items, share_prefix=True) == backend.generate_ids(
        items, share_prefix=False
    )


def test_score_constraint_forces_a_scale_value(backend: HFBackend) -> None:
    tok = backend.loaded.tokenizer
    constraint = ScoreConstraint(tok, [(0.0, 1.0, 2.0)])
    prefix = tok.encode("[FEEDBACK] Хорошо. [RESULT]", add_special_tokens=False)
    vocab = len(tok)
    scores = constraint(torch.tensor([prefix]), torch.zeros(1, vocab))
    allowed = {tok.decode([i]) for i in torch.nonzero(scores[0] > float("-inf")).flatten()}
    assert allowed and all(t.strip() in {"0", "1", "2", ""} for t in allowed)
    # A multi-token value ("10.5"): random logits, yet every step is forced along the trie.
    constraint = ScoreConstraint(tok, [(0.0, 10.5)])
    row = prefix[:]
    for _ in range(8):
        scores = constraint(torch.tensor([row]), torch.randn(1, vocab))
        if len(row) > len(prefix) and constraint.state[0] is None:
            break
        row.append(int(scores[0].argmax()))
    assert tok.decode(row[len(prefix) :]).strip() in {"0", "10.5"}
    # Released after the value: the next step is unconstrained.
    scores = constraint(torch.tensor([row]), torch.zeros(1, vocab))
    assert bool((scores[0] > float("-inf")).all())


@pytest.fixture(scope="module")
def server_url(backend: HFBackend) -> Iterator[str]:
    from judge_worker.server import make_server

    # Port 0: the OS picks a free port. The server runs in-process so the test reuses the loaded
    # model; the HTTP path (JSON over a real socket) is exercised as it would be across machines.
    server = make_server(backend, "127.0.0.1", 0, "smollm2")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()


def test_openai_backend_against_local_server(server_url: str, backend: HFBackend) -> None:
    import httpx

    models: Any = httpx.get(server_url + "/models", timeout=10).json()
    assert models["data"][0]["id"] == "smollm2"
    items = make_items()[:2]
    client = OpenAIBackend(server_url, "smollm2", max_new_tokens=MAX_NEW, concurrency=2)
    outs = client.judge(items)
    for out, it in zip(outs, items, strict=True):
        assert out.item_id == it.item_id
        assert out.raw_text.strip()
        assert out.parse.raw == out.raw_text
        assert out.parse.ok or out.parse.error
        assert out.prompt_tokens == len(backend.encode(it))
        assert 1 <= out.generated_tokens <= MAX_NEW
