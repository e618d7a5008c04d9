"""A generation configuration's model: runs.backends, shared with judging (one backend factory,
one loaded model per worker process: a judge asked for next frees the generator)."""

from __future__ import annotations

from judge_worker.backends.factory import Backend, cached
from runs.backends import backend_spec as backend_spec
from runs.backends import build_backend
from runs.models import RunConfig


def build_generator(config: RunConfig) -> Backend:
    return build_backend(config)


def cached_generator(config: RunConfig) -> Backend:
    """Loaded once per worker process, and the only model loaded there (a generation run
    never overrides its configuration's backend: the key leaves it out)."""
    return cached(("generate", config.pk), backend_spec(config))
