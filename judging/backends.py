"""Turn a JudgeConfig into a judge_worker backend spec; the backend is built and kept loaded by
judge_worker.backends.factory, whose one model per worker process generation shares.

The API key is read from the environment variable the configuration names: no secret is ever
stored in the database.
"""

from __future__ import annotations

from typing import Any

from judge_worker.backends.factory import Backend, BackendSpec, cached, clear_cache
from judge_worker.backends.factory import build_backend as build_from_spec
from judging.models import JudgeConfig

__all__ = ["backend_spec", "build_backend", "cached_backend", "clear_cache"]


def backend_spec(config: JudgeConfig, kind: str | None = None) -> BackendSpec:
    """The spec of the configuration's backend (`kind` overrides the configured one)."""
    # Greedy only: `do_sample` is recorded in the configuration but no backend samples.
    options: dict[str, Any] = {
        k: v for k, v in (config.decoding or {}).items() if k not in ("do_sample",)
    }
    options.setdefault("max_new_tokens", config.max_new_tokens)
    options.setdefault("batch_size", config.batch_size)
    return BackendSpec(
        kind=kind or config.backend,
        model_path=config.model_path,
        endpoint=config.endpoint,
        endpoint_model=config.endpoint_model or config.name,
        api_key_env=config.api_key_env,
        options=options,
    )


def build_backend(config: JudgeConfig, kind: str | None = None) -> Backend:
    return build_from_spec(backend_spec(config, kind))


def cached_backend(config: JudgeConfig, kind: str | None = None) -> Backend:
    """The backend for this configuration version, loaded once per worker process (and the only
    one loaded: a generation configuration asked for next replaces it)."""
    spec = backend_spec(config, kind)
    return cached(("judge", config.pk, spec.kind), spec)
