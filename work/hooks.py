"""Seams where apps above work plug into it, filled in their AppConfig.ready() (lib.registry).

Work sits below quality (exams, control items) and the console, yet its submit, its builder and
its scoring page must reach them. Instead of importing them inside functions (a hidden cycle),
work publishes these registries; quality registers its functions when Django starts
(quality.apps.QualityConfig.ready), so the dependency points one way and import-linter checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from lib.registry import Registry


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
# control items here); keyed by the assignment's kind ("exam", "control"), a kind may have none.
on_submitted: Registry[Callable[[int], None]] = Registry("work.hooks.on_submitted")
# The scoring page's position of an assignment in its sequence (None: not in one), keyed by the
# assignment's kind.
position: Registry[Callable[[int], SequencePosition | None]] = Registry("work.hooks.position")
# (answer id, panel id) pairs the builder must give no work of that panel on (a panel's gold);
# called with the builder's answer ids (None: every answer).
excluded_pairs: Registry[Callable[[Sequence[int] | None], set[tuple[int, int]]]] = Registry(
    "work.hooks.excluded_pairs"
)
# (answer id, expert id) pairs: the expert never gets work on the answer, in any panel — its
# author (authoring registers the experts who wrote the human-baseline answers). Called like
# excluded_pairs.
excluded_experts: Registry[Callable[[Sequence[int] | None], set[tuple[int, int]]]] = Registry(
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
queue_sections: Registry[Callable[[int], QueueSection | None]] = Registry(
    "work.hooks.queue_sections"
)
