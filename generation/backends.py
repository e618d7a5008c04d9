"""A generation configuration's model: runs.backends, shared with judging (one backend factory,
one loaded model per worker process: a judge asked for next frees the generator).

A guarded configuration (a participant's endpoint) is different: its backend is built afresh
for each batch and closed after it, so its key lives in the worker's memory for one batch
only, and each batch is held to what the run's request budget and cost cap leave, counted
from the outputs the run has written (runs one batch at a time: runs.batched, "sequential").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Sum
from django.utils.translation import gettext as _

from generation.models import Generation, GenerationRun
from judge_worker import GenerationItem, GenerationOutput, Generator
from judge_worker.backends.factory import Backend, cached
from judge_worker.backends.openai_compat import RequestBudget
from runs.backends import backend_spec as backend_spec
from runs.backends import build_backend
from runs.models import RunConfig


def build_generator(config: RunConfig) -> Backend:
    return build_backend(config)


def cached_generator(config: RunConfig) -> Backend:
    """Loaded once per worker process, and the only model loaded there (a generation run
    never overrides its configuration's backend: the key leaves it out)."""
    return cached(("generate", config.pk), backend_spec(config))


def generator_for(run: GenerationRun) -> Generator:
    """The generator a batch of the run calls: the cached model, or a participant's endpoint
    held to the run's limits."""
    if run.config.guarded:
        return LimitedEndpoint(run)
    return cached_generator(run.config)


def _refused(items: Sequence[GenerationItem], message: str) -> list[GenerationOutput]:
    return [
        GenerationOutput(
            item_id=item.item_id,
            text="",
            finish_reason="error",
            prompt_tokens=0,
            generated_tokens=0,
            seconds=0.0,
            error=message,
            attempts=0,
        )
        for item in items
    ]


class LimitedEndpoint:
    """One batch's calls to a participant's endpoint under the run's request budget
    (`max_requests`: first tries and retries) and cost cap (`max_tokens`: prompt and generated
    tokens as the endpoint reports them; checked before the batch, so a batch may pass it by at
    most its own tokens)."""

    def __init__(self, run: GenerationRun) -> None:
        self.run = run

    def used(self) -> tuple[int, int]:
        """(requests, tokens) the run's outputs took so far."""
        agg = Generation.objects.filter(run_id=self.run.pk).aggregate(
            requests=Sum("attempts"), prompt=Sum("prompt_tokens"), generated=Sum("generated_tokens")
        )
        return int(agg["requests"] or 0), int(agg["prompt"] or 0) + int(agg["generated"] or 0)

    def generate(self, items: Sequence[GenerationItem]) -> list[GenerationOutput]:
        scope: dict[str, Any] = self.run.scope or {}
        requests, tokens = self.used()
        max_tokens = scope.get("max_tokens")
        if max_tokens is not None and tokens >= max_tokens:
            return _refused(
                items,
                _("the cost cap of this submission (%(n)s tokens) is reached") % {"n": max_tokens},
            )
        max_requests = scope.get("max_requests")
        budget = RequestBudget(max(0, max_requests - requests)) if max_requests else None
        backend: Any = build_generator(self.run.config)
        try:
            return list(backend.generate(items, budget=budget))
        finally:
            client = getattr(backend, "client", None)
            if client is not None:
                client.close()
