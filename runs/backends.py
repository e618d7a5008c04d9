"""A run configuration (of either purpose) as a judge_worker backend spec; the backend is built
and kept loaded by judge_worker.backends.factory: one loaded model per worker process, for
judging and generation alike (asking for another configuration's frees the previous one).

An admin's configuration names the environment variable holding its API key: that secret is
never stored in the database. A guarded configuration (a participant's endpoint) carries its key
encrypted (runs.secrets), read here by the worker only; its calls go through the address guard
with the endpoint limits of the settings.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from judge_worker.backends.factory import Backend, BackendSpec, cached
from judge_worker.backends.factory import build_backend as build_from_spec
from judge_worker.backends.factory import clear_cache as clear_cache
from runs.models import RunConfig
from runs.secrets import key_read


def backend_spec(config: RunConfig, kind: str | None = None) -> BackendSpec:
    """The spec of the configuration's backend (`kind` overrides the configured one)."""
    # A judge's decoding options (greedy only: `do_sample` is recorded but no backend
    # samples); a generation's sampling travels with each item instead.
    options: dict[str, Any] = {
        k: v for k, v in (config.decoding or {}).items() if k not in ("do_sample",)
    }
    options.setdefault("max_new_tokens", config.max_new_tokens)
    options.setdefault("batch_size", config.batch_size)
    if config.guarded:
        options.update(
            timeout_s=settings.SUBMISSION_ENDPOINT_TIMEOUT_S,
            max_retries=settings.SUBMISSION_ENDPOINT_MAX_RETRIES,
            concurrency=settings.SUBMISSION_ENDPOINT_CONCURRENCY,
        )
        return BackendSpec(
            kind=kind or config.backend,
            endpoint=config.endpoint,
            endpoint_model=config.endpoint_model,
            api_key=key_read(config),
            guarded=True,
            allow_private=settings.SUBMISSION_ENDPOINT_ALLOW_PRIVATE,
            options=options,
        )
    return BackendSpec(
        kind=kind or config.backend,
        model_path=config.model_path,
        endpoint=config.endpoint,
        endpoint_model=config.endpoint_model or config.name,
        api_key_env=config.api_key_env,
        options=options,
    )


def build_backend(config: RunConfig, kind: str | None = None) -> Backend:
    return build_from_spec(backend_spec(config, kind))


def cached_backend(config: RunConfig, kind: str | None = None) -> Backend:
    """The backend of this configuration version, loaded once per worker process and the only
    one loaded there; a backend asked for instead of the configured one (`kind`, a judge run's
    override) is another entry. A guarded configuration's is never cached (its key would stay
    in memory): generation.backends builds it per batch."""
    spec = backend_spec(config, kind)
    return cached((config.purpose, config.pk, spec.kind), spec)
