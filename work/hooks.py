"""Seams where apps above work plug into it, filled in their AppConfig.ready().

Work sits below quality (exams, control items) and the console, yet its submit, its builder and
its scoring page must reach them. Instead of importing them inside functions (a hidden cycle),
work publishes these registries; quality registers its functions when Django starts
(quality.apps.QualityConfig.ready), so the dependency points one way and import-linter checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Generic, Protocol, TypeVar

from django.core.exceptions import ImproperlyConfigured

F = TypeVar("F")


class KindHooks(Generic[F]):
    """One function per assignment kind ("exam", "control", ...); a kind may have none."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._by_kind: dict[str, F] = {}

    def register(self, kind: str, fn: F) -> None:
        # A second, different registration is a wiring mistake: fail at start-up, not silently.
        if self._by_kind.get(kind, fn) is not fn:
            raise ImproperlyConfigured(f"{self.name}: kind {kind!r} is registered twice")
        self._by_kind[kind] = fn

    def get(self, kind: str) -> F | None:
        return self._by_kind.get(kind)


class Providers(Generic[F]):
    """Functions that all contribute (their results are combined by the caller)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._fns: list[F] = []

    def register(self, fn: F) -> None:
        if fn not in self._fns:
            self._fns.append(fn)

    def __iter__(self) -> Iterator[F]:
        return iter(list(self._fns))


class SequencePosition(Protocol):
    """Where an assignment stands in a sequence of items (an exam attempt), for the page."""

    @property
    def title(self) -> str: ...
    @property
    def number(self) -> int: ...
    @property
    def total(self) -> int: ...
    @property
    def next_assignment_id(self) -> int | None: ...

    def continue_url(self, after: int) -> str: ...


# Called with the assignment's id once its submission is committed (quality grades exams and
# control items here).
on_submitted: KindHooks[Callable[[int], None]] = KindHooks("work.hooks.on_submitted")
# The scoring page's position of an assignment in its sequence (None: not in one).
position: KindHooks[Callable[[int], SequencePosition | None]] = KindHooks("work.hooks.position")
# (answer id, panel id) pairs the builder must give no work of that panel on (a panel's gold);
# called with the builder's answer ids (None: every answer).
excluded_pairs: Providers[Callable[[Sequence[int] | None], set[tuple[int, int]]]] = Providers(
    "work.hooks.excluded_pairs"
)
# (answer id, expert id) pairs: the expert never gets work on the answer, in any panel — its
# author (authoring registers the experts who wrote the human-baseline answers). Called like
# excluded_pairs.
excluded_experts: Providers[Callable[[Sequence[int] | None], set[tuple[int, int]]]] = Providers(
    "work.hooks.excluded_experts"
)


class QueueSection(Protocol):
    """Work of a kind the core does not hold as assignments (span markup of texts), shown on
    the expert's queue beside his assignments: a title, how much is open and done, a link."""

    @property
    def title(self) -> str: ...
    @property
    def open(self) -> int: ...
    @property
    def done(self) -> int: ...
    @property
    def url(self) -> str: ...


# Called with the expert's id for his queue page; a kind with nothing for him returns None.
queue_sections: Providers[Callable[[int], QueueSection | None]] = Providers(
    "work.hooks.queue_sections"
)
