"""A judge configuration's backend: runs.backends, shared with generation (one backend factory,
one loaded model per worker process)."""

from __future__ import annotations

from runs.backends import backend_spec as backend_spec
from runs.backends import build_backend as build_backend
from runs.backends import cached_backend as cached_backend
from runs.backends import clear_cache as clear_cache
