"""Turn a GenerationConfig into a judge_worker backend spec; the backend is built and kept
loaded by judge_worker.backends.factory, whose one model per worker process judging shares.

The API key is read from the environment variable the configuration names, never stored.
"""

from __future__ import annotations

from generation.models import GenerationConfig
from judge_worker.backends.factory import Backend, BackendSpec, build_backend, cached


def backend_spec(config: GenerationConfig) -> BackendSpec:
    return BackendSpec(
        kind=config.backend,
        model_path=config.model_path,
        endpoint=config.endpoint,
        endpoint_model=config.endpoint_model or config.name,
        api_key_env=config.api_key_env,
        options={"max_new_tokens": config.max_new_tokens, "batch_size": config.batch_size},
    )


def build_generator(config: GenerationConfig) -> Backend:
    return build_backend(backend_spec(config))


def cached_generator(config: GenerationConfig) -> Backend:
    """One loaded model per worker process: another configuration, of generation or of a
    judge, frees the previous one."""
    return cached(("generate", config.pk), backend_spec(config))
