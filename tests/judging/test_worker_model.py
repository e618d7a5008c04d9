"""A worker process of the `judge` queue holds one model at a time: judge batches and generation
batches share one backend cache (judge_worker.backends.factory), and asking for another
configuration's backend frees the previous one, its weights included unless the next one loads
the same weights. Real SmolLM2-135M weights on CPU; the endpoint is the demo's test server."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from demo.judge_server import serve
from generation import services as generation
from generation.backends import cached_generator
from generation.models import RunStatus as GenerationStatus
from judge_worker.backends import factory
from judge_worker.backends.hf import HFBackend, load_model
from judge_worker.weights import smollm2_gguf_path
from judging import services as judging
from judging.backends import cached_backend
from judging.models import RunStatus
from tests.ports import free_port

pytestmark = [pytest.mark.judge, pytest.mark.django_db, pytest.mark.timeout(1500)]

MAX_NEW_TOKENS = 8


@pytest.fixture
def server() -> Iterator[str]:
    port = free_port()
    httpd = serve(port)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _generation_config(name: str, **fields: Any) -> Any:
    return generation.config_save(
        name=name, model_name=name, batch_size=4, max_new_tokens=MAX_NEW_TOKENS, **fields
    )


def test_a_worker_holds_one_model_and_switches_between_judging_and_generation(
    material: Any, server: str
) -> None:
    m = material(n_answers=2)
    weights = str(smollm2_gguf_path())
    factory.clear_cache()
    load_model.cache_clear()
    judge_config = judging.config_save(
        name="smollm2-judge",
        backend="transformers",
        model_path=weights,
        decoding={"do_sample": False, "max_new_tokens": MAX_NEW_TOKENS},
        batch_size=6,
    )
    remote = _generation_config("demo-writer", backend="openai", endpoint=server)
    local = _generation_config("smollm2-writer", backend="transformers", model_path=weights)

    # A judge run: the judge's model is the one loaded.
    run = judging.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    run = judging.run_execute_inline(run=run, backend_factory=lambda r: cached_backend(r.config))
    assert (run.status, run.done) == (RunStatus.DONE, 6)
    judge_key = ("judge", judge_config.pk, "transformers")
    assert factory.loaded_keys() == [judge_key]
    judge = cached_backend(judge_config)
    assert isinstance(judge, HFBackend)
    judge_model = weakref.ref(judge.loaded.model)
    del judge
    assert load_model.cache_info().currsize == 1

    # A generation run through an endpoint: the judge and its weights are freed.
    gen = generation.run_create(config=remote, scope={"all": True}, enqueue=False)
    gen = generation.run_execute_inline(
        run=gen, generator_factory=lambda r: cached_generator(r.config)
    )
    assert (gen.status, gen.done) == (GenerationStatus.DONE, gen.total)
    assert gen.total > 0
    assert factory.loaded_keys() == [("generate", remote.pk)]
    gc.collect()
    assert judge_model() is None
    assert load_model.cache_info().currsize == 0

    # A generation run on local weights, then the judge again: each switch leaves one backend,
    # and the same weights are loaded once for both.
    gen = generation.run_create(config=local, scope={"all": True}, enqueue=False)
    gen = generation.run_execute_inline(
        run=gen, generator_factory=lambda r: cached_generator(r.config)
    )
    assert (gen.status, gen.done) == (GenerationStatus.DONE, gen.total)
    assert factory.loaded_keys() == [("generate", local.pk)]
    writer = cached_generator(local)
    assert isinstance(writer, HFBackend)
    writer_model = writer.loaded.model
    del writer
    judge = cached_backend(judge_config)
    assert factory.loaded_keys() == [judge_key]
    assert isinstance(judge, HFBackend) and judge.loaded.model is writer_model
    assert load_model.cache_info().currsize == 1
    factory.clear_cache()
