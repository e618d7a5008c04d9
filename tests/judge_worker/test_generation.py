"""Free-text generation (generation runs): the hf backend with real weights on CPU, the openai
backend against a scripted transport, and the demo test server through the openai backend.

SmolLM2-135M answers poorly; these tests assert the mechanics (determinism, seeds, limits,
finish reasons, token counts, errors), never the quality of an answer. The hf tests carry the
`judge` marker (real weights); the rest need no torch and run in `./scripts/test --quick`.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from demo.judge_server import demo_answer, is_judge_prompt, serve, verdict
from judge_worker import GenerationItem, GenerationOutput, Generator
from judge_worker.backends.openai_compat import OpenAIBackend
from judge_worker.markup import markup_messages
from judge_worker.pairwise import build_pairwise_prompt
from judge_worker.prompt import build_messages, render_rubrics
from judge_worker.types import JudgeItem

if TYPE_CHECKING:
    from judge_worker.backends.hf import HFBackend

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing may be downloaded at run time

MAX_NEW = 12


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


# -- hf backend, real weights ------------------------------------------------------------------


@pytest.fixture(scope="module")
def hf() -> HFBackend:
    # Imported here: the judge extra (torch, transformers) is only needed by the marked tests.
    from judge_worker.backends.hf import HFBackend
    from judge_worker.weights import smollm2_gguf_path

    return HFBackend(smollm2_gguf_path(), batch_size=8, device="cpu")


def sampled(item_id: str, text: str, seed: int | None, **extra: Any) -> GenerationItem:
    return GenerationItem(
        item_id=item_id,
        messages=user(text),
        max_new_tokens=MAX_NEW,
        temperature=1.0,
        top_p=0.95,
        top_k=50,
        seed=seed,
        **extra,
    )


@pytest.mark.judge
def test_hf_greedy_is_deterministic_and_counts_tokens(hf: HFBackend) -> None:
    generator: Generator = hf  # the backend satisfies the protocol the Django side uses
    items = [
        GenerationItem("capital", user("What is the capital of France?"), max_new_tokens=MAX_NEW),
        GenerationItem(
            "sys",
            [
                {"role": "system", "content": "You answer in one word."},
                {"role": "user", "content": "Name a colour."},
            ],
            max_new_tokens=MAX_NEW,
        ),
    ]
    first = generator.generate(items)
    second = generator.generate(items)
    assert [o.item_id for o in first] == ["capital", "sys"]
    assert [o.text for o in first] == [o.text for o in second]
    for out in first:
        assert isinstance(out, GenerationOutput)
        assert out.text.strip() and out.finish_reason in {"stop", "length"} and not out.error
        assert out.prompt_tokens > 0 and 0 < out.generated_tokens <= MAX_NEW
        assert out.seconds > 0
        # The EOS that ended the row is counted, never shown.
        assert "<|im_end|>" not in out.text and "<|endoftext|>" not in out.text
    # The chat template was applied (system message included, the assistant turn opened).
    ids = hf.encode_messages(items[1].messages)
    assert first[1].prompt_tokens == len(ids)
    head = hf.loaded.tokenizer.decode(ids)
    assert "You answer in one word." in head and head.rstrip().endswith("assistant")


@pytest.mark.judge
def test_hf_hitting_max_new_tokens_is_length(hf: HFBackend) -> None:
    items = [
        GenerationItem("story", user("Write a long story about a dragon."), max_new_tokens=8),
        sampled("story-sampled", "Write a long story about the sea.", seed=1),
    ]
    story, story_sampled = hf.generate(items)
    assert story.finish_reason == "length" and story.generated_tokens == 8
    assert story.text.strip()
    assert story_sampled.finish_reason == "length"
    assert story_sampled.generated_tokens == MAX_NEW


@pytest.mark.judge
def test_hf_seeded_sample_is_the_same_alone_twice_and_in_any_batch(hf: HFBackend) -> None:
    item = sampled("poem", "Write a poem about the sea.", seed=1234)
    alone = hf.generate([item])[0]
    assert alone.text.strip() and alone.finish_reason in {"stop", "length"}
    assert hf.generate([item])[0].text == alone.text
    # With other rows beside it: longer prompts (so it is left-padded), greedy rows, other seeds,
    # unseeded rows, in another position.
    others = [
        GenerationItem("g", user("Explain in detail how a rainbow forms in the sky."), MAX_NEW),
        sampled("other-seed", "Write a poem about the sea.", seed=99),
        sampled("unseeded", "Tell me about cats, dogs and other pets people keep at home.", None),
    ]
    for batch in ([*others, item], [others[0], item, others[1]], [item, others[2]]):
        outs = {o.item_id: o for o in hf.generate(batch)}
        assert outs["poem"].text == alone.text
        assert outs["poem"].generated_tokens == alone.generated_tokens
    # The seed matters: other seeds give other samples (five identical would be a broken seed).
    texts = {
        hf.generate([sampled("poem", item.messages[0]["content"], seed=s)])[0].text
        for s in range(5)
    }
    assert len(texts) > 1


@pytest.mark.judge
def test_hf_sampling_restricted_to_one_token_is_greedy(hf: HFBackend) -> None:
    prompt = "Name three fruits."
    greedy = hf.generate([GenerationItem("g", user(prompt), MAX_NEW)])[0]
    top_k_1 = GenerationItem("k", user(prompt), MAX_NEW, temperature=1.5, top_k=1, seed=5)
    tiny_p = GenerationItem("p", user(prompt), MAX_NEW, temperature=1.5, top_p=1e-6, seed=6)
    assert [o.text for o in hf.generate([top_k_1, tiny_p])] == [greedy.text, greedy.text]


@pytest.mark.judge
def test_row_sampler_draws_from_the_filtered_distribution() -> None:
    import torch

    from judge_worker.backends.hf import RowSampler

    probs = torch.tensor([0.5, 0.3, 0.15, 0.05])
    cases = {
        # top_p 0.8: the smallest head reaching 0.8 is {0, 1}, renormalised.
        (1.0, 0.8, 0): [0.625, 0.375, 0.0, 0.0],
        # top_k 3: the last token is out.
        (1.0, 1.0, 3): [0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0.0],
        (1.0, 1.0, 0): [0.5, 0.3, 0.15, 0.05],
    }
    n = 4000
    for (temperature, top_p, top_k), expected in cases.items():
        item = GenerationItem("x", user("x"), 1, temperature, top_p, top_k, seed=42)
        sampler = RowSampler([item])
        counts = [0] * 4
        for _ in range(n):
            out = sampler(torch.zeros(1, 1, dtype=torch.long), probs.log()[None, :].clone())  # type: ignore[arg-type]
            counts[int(out[0].argmax())] += 1
            assert int((out[0] > float("-inf")).sum()) == 1  # exactly one token left
        for got, want in zip(counts, expected, strict=True):
            assert abs(got / n - want) < 0.03, (temperature, top_p, top_k, counts)


@pytest.mark.judge
def test_hf_bad_items_are_errors_and_the_others_still_answer(
    hf: HFBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = GenerationItem("good", user("What is 2+2?"), max_new_tokens=4)
    zero = GenerationItem("zero", user("What is 2+2?"), max_new_tokens=0)
    boom = GenerationItem("boom", user("This one makes the batch fail."), max_new_tokens=4)
    empty = GenerationItem("empty", [], max_new_tokens=4)
    real = hf._generate_free

    def failing(encoded: Any, items: list[GenerationItem], max_new: int) -> Any:
        if any(it.item_id == "boom" for it in items):
            raise RuntimeError("CUDA out of memory (simulated)")
        return real(encoded, items, max_new)

    monkeypatch.setattr(hf, "_generate_free", failing)
    outs = {o.item_id: o for o in hf.generate([boom, good, zero, empty])}
    assert outs["good"].finish_reason in {"stop", "length"} and outs["good"].text.strip()
    for item_id, words in [
        ("boom", "out of memory"),
        ("zero", "max_new_tokens"),
        ("empty", "no messages"),
    ]:
        out = outs[item_id]
        assert out.finish_reason == "error" and out.text == "" and words in out.error
        assert out.generated_tokens == 0


# -- openai backend, scripted transport --------------------------------------------------------


def completion(text: str, finish_reason: str | None = "stop") -> dict[str, Any]:
    return {
        "choices": [
            {"message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7},
    }


def openai_with(handle: Any, retries: int = 3) -> OpenAIBackend:
    client = httpx.Client(transport=httpx.MockTransport(handle))
    return OpenAIBackend(
        "http://model.test/v1", "m", client=client, max_retries=retries, backoff_s=0.001
    )


def test_openai_generate_sends_the_sampling_settings() -> None:
    seen: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/chat/completions"
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=completion("Ответ."))

    items = [
        GenerationItem("a", user("вопрос"), 64, temperature=0.7, top_p=0.9, top_k=40, seed=3),
        GenerationItem("b", user("вопрос")),
    ]
    outs = openai_with(handle).generate(items)
    by_content = sorted(seen, key=lambda p: p["max_tokens"])
    assert by_content[0] == {
        "model": "m",
        "messages": user("вопрос"),
        "max_tokens": 64,
        "temperature": 0.7,
        "top_p": 0.9,
        "top_k": 40,
        "seed": 3,
    }
    # Defaults: greedy, no top_k field (0 = off), no seed.
    assert by_content[1] == {
        "model": "m",
        "messages": user("вопрос"),
        "max_tokens": 1024,
        "temperature": 0.0,
        "top_p": 1.0,
    }
    assert [o.item_id for o in outs] == ["a", "b"]
    for out in outs:
        assert (out.text, out.finish_reason, out.error) == ("Ответ.", "stop", "")
        assert (out.prompt_tokens, out.generated_tokens) == (11, 7)


@pytest.mark.parametrize(
    ("server_reason", "finish"),
    [("stop", "stop"), ("length", "length"), (None, "stop"), ("eos", "stop")],
)
def test_openai_generate_maps_finish_reasons(server_reason: str | None, finish: str) -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=completion("текст", server_reason))

    [out] = openai_with(handle).generate([GenerationItem("a", user("q"))])
    assert (out.text, out.finish_reason, out.error) == ("текст", finish, "")


def test_openai_generate_abnormal_finish_is_an_error() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=completion("обрезано", "content_filter"))

    [out] = openai_with(handle).generate([GenerationItem("a", user("q"))])
    assert out.finish_reason == "error" and "content_filter" in out.error


def test_openai_generate_retries_then_succeeds() -> None:
    statuses = iter([429, 503])
    calls = 0

    def handle(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        status = next(statuses, 200)
        if status != 200:
            return httpx.Response(status, json={"error": "busy"})
        return httpx.Response(200, json=completion("Готово.", "length"))

    [out] = openai_with(handle).generate([GenerationItem("a", user("q"), seed=1)])
    assert calls == 3
    assert (out.text, out.finish_reason) == ("Готово.", "length")


def test_openai_generate_gives_up_without_inventing_a_text() -> None:
    calls = 0

    def handle(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        raise httpx.ConnectError("refused", request=request)

    items = [GenerationItem("a", user("q")), GenerationItem("b", user("q2"))]
    outs = openai_with(handle, retries=2).generate(items)
    assert calls == 6  # 1 + 2 retries, per item
    for out, it in zip(outs, items, strict=True):
        assert out.item_id == it.item_id
        assert (out.text, out.finish_reason, out.generated_tokens) == ("", "error", 0)
        assert "request failed" in out.error and "refused" in out.error


def test_openai_generate_client_error_and_garbage_are_errors() -> None:
    responses = iter(
        [httpx.Response(400, json={"error": "bad"}), httpx.Response(200, json={"nope": 1})]
    )
    calls = 0

    def handle(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return next(responses)

    backend = openai_with(handle)
    [bad] = backend.generate([GenerationItem("a", user("q"))])
    [garbage] = backend.generate([GenerationItem("b", user("q"))])
    assert calls == 2  # a 4xx is not retried
    for out in (bad, garbage):
        assert (out.text, out.finish_reason) == ("", "error") and out.error


# -- the demo test server ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_url() -> Iterator[str]:
    server = serve(0)  # port 0: the OS picks a free one and the server reports it
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_demo_server_answers_instructions_deterministically(demo_url: str) -> None:
    backend = OpenAIBackend(demo_url, "demo", concurrency=2, max_retries=0)
    question = user("Напишите короткое эссе о весне.")
    items = [
        GenerationItem("a", question, seed=1),
        GenerationItem("b", question, seed=1, temperature=0.8),
        GenerationItem("c", question, seed=2),
    ]
    a, b, c = backend.generate(items)
    again = backend.generate(items[:1])[0]
    assert a.text == b.text == again.text == demo_answer(question[0]["content"], 1)
    assert c.text != a.text
    assert "демо-сервера, а не модели" in a.text and "[RESULT]" not in a.text
    assert (a.finish_reason, a.error) == ("stop", "")
    assert a.generated_tokens == len(a.text.split()) and a.prompt_tokens > 0

    [short] = backend.generate([GenerationItem("s", question, max_new_tokens=5, seed=1)])
    assert short.finish_reason == "length" and short.generated_tokens == 5
    assert short.text.split() == a.text.split()[:5]


def test_demo_server_still_judges_judge_prompts(demo_url: str) -> None:
    messages = build_messages(
        instruction="Сколько будет 2+2?",
        answer="4",
        criterion_name="Правильность ответа",
        rubrics=render_rubrics([("0", "Неверно."), ("1", "Частично."), ("2", "Верно.")]),
    )
    item = JudgeItem("j", "p", messages, allowed_scores=(0.0, 1.0, 2.0))
    [out] = OpenAIBackend(demo_url, "demo", max_retries=0).judge([item])
    assert out.raw_text == verdict(messages[0]["content"])
    assert out.parse.ok and out.parse.score in item.allowed_scores
    # The other judge prompts the platform sends are told apart from instructions too.
    pairwise = build_pairwise_prompt("repa_1", "q", "a", "b", "Грамотность: ошибки.")
    markup = "\n".join(m["content"] for m in markup_messages("Текст.", [("G1", "Орфография")]))
    assert is_judge_prompt(pairwise) and is_judge_prompt(markup)
    assert not is_judge_prompt("Напишите короткое эссе о весне.")


def test_the_demo_server_rarely_finds_a_critical_violation() -> None:
    """The demo server's verdicts lean to the best end: for an ordinary criterion its top level,
    for a critical one (asked as a question, its top level the violation) "no violation", so
    the gate rule does not empty the demo's boards."""
    scale = "\n\n### Шкала оценивания по критерию:\n0: нет\n1: да\n"
    critical = "### Критерий оценки:\nЕсть ли критичное нарушение формата?" + scale
    ordinary = "### Критерий оценки:\nГрамотность" + scale
    picks = {
        name: [verdict(f"{prompt}\n{i}").split("[RESULT] ")[1][0] for i in range(600)]
        for name, prompt in (("critical", critical), ("ordinary", ordinary))
    }
    assert picks["critical"].count("1") < 600 / 4  # about one in six
    assert picks["ordinary"].count("1") > 600 / 2  # about two in three
