"""The kinds of judge run, as plug-ins: each kind is a module of this package implementing
:class:`JudgeRunKind` (what a run of the kind counts, which of a batch's work is still to do,
the prompts it builds, the estimates it writes and counts, its report and its page), chosen by
the run's `kind` through `kinds`, filled in judging's AppConfig.ready(). Code outside a kind
asks `of(run)` and never branches on the kind itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from django.db.models import Model

from judge_worker import JudgeItem, JudgeOutput
from judging.models import JudgeRun
from lib.registry import Registry

# How judge_worker's HTTP backend marks an item whose request failed after its retries.
REQUEST_FAILED = "request failed"


class JudgeRunKind(Protocol):
    """What a judge run of one kind does."""

    @property
    def key(self) -> str:
        """The run's `kind` value (runs.models.RunKind)."""
        ...

    def unit(self) -> str:
        """What the run's progress counts, in the active language."""
        ...

    @property
    def estimate_model(self) -> type[Model]:
        """Its results: `run`, `parse_ok`, `prompt_tokens`, `generated_tokens`."""
        ...

    def run_fields(
        self, *, templates: Sequence[str] | None, shots: int | None, swap_of: JudgeRun | None
    ) -> dict[str, Any]:
        """A new run's fields of this kind from run_create's options (ValueError names a bad
        one)."""
        ...

    def twin_options(
        self, run: JudgeRun
    ) -> tuple[str, dict[str, Any], Sequence[str] | None, int | None]:
        """(kind, scope, templates, shots) of the run's position-bias twin (ValueError when
        the kind has none)."""
        ...

    def total(self, run: JudgeRun, triple_count: int) -> int:
        """The run's units of work over `triple_count` triples."""
        ...

    def todo(self, run: JudgeRun, triple_ids: Sequence[int]) -> list[Any]:
        """What a batch of these triples has still to do (no result in the run yet)."""
        ...

    def build_items(self, run: JudgeRun, todo: list[Any]) -> list[JudgeItem]:
        """The backend's prompts for `todo`."""
        ...

    def write(
        self, run: JudgeRun, todo: list[Any], items: list[JudgeItem], outputs: list[JudgeOutput]
    ) -> str:
        """Store the outputs; returns the batch's error ("" when all of `todo` got a result)."""
        ...

    def fingerprint(self, run: JudgeRun) -> dict[str, Any]:
        """What the run's stored report is computed from (a change makes it stale)."""
        ...

    def report(self, run: JudgeRun) -> tuple[dict[str, Any], dict[str, Any]]:
        """(report, fingerprint), read inside the caller's snapshot."""
        ...

    def page_context(self, run: JudgeRun, report: dict[str, Any] | None) -> dict[str, Any]:
        """What the run's page shows of this kind: `kind_report`, the template of its stored
        report (given as `r`), and `kind_head`, one under the page's title, if any."""
        ...


kinds: Registry[JudgeRunKind] = Registry("judging.kinds")


def of(run: JudgeRun) -> JudgeRunKind:
    """The kind of a run."""
    return kinds[run.kind]


def transport_error(out: JudgeOutput) -> bool:
    """The endpoint never answered: not a verdict, so not stored; the batch fails and a retry
    or resume asks again (a stored failure would be skipped forever)."""
    return not out.raw_text and (out.parse.error or "").startswith(REQUEST_FAILED)


def with_cause(error: str, transport_errors: list[str]) -> str:
    """A batch's error, with the first transport error as its cause."""
    if error and transport_errors:
        error += f" ({transport_errors[0][:500]})"
    return error
