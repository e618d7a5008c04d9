"""The task-kind seam: what the core asks of one kind of expert work.

The core handles "an item of work for an expert": routing to a panel, an overlap, a reservation,
its submission, its gold version (exams, control items), aggregation jobs and export rows. A
kind of work (the pointwise rubric, side-by-side comparison, span markup, instruction writing)
supplies what differs, from its own modules, as typed plug-ins each layer defines and dispatches
on a value known only at run time:

- here, `kinds`: every kind's declaration (`TaskKind`: its key and label);
- here, `items`: the kinds whose work the core holds as assignments, each an `ItemKind`;
  `kind_of(row)` reads which kind an assignment, exam item or control item holds (the kind that
  owns the row's filled item field), `of(item)` gives that kind;
- work.pages: each held kind's page; quality.kinds: its gold items (exams, control items);
  dataset.parts: its verdicts and tables in the aggregation and the export;
  judging.run_kinds: what a judge run of the kind builds and writes.

Each registry is a `lib.registry.Registry`, filled in the AppConfig.ready() of the app that
owns it, so no layer imports an upper one. docs/architecture.md ("Adding a kind") lists what a
new kind provides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from django.core.exceptions import ImproperlyConfigured

from lib.registry import Registry

POINTWISE = "pointwise"
PAIRWISE = "pairwise"
MARKUP = "markup"
AUTHORING = "authoring"


@dataclass(frozen=True)
class TaskKind:
    """One kind of expert work, as the platform lists it."""

    key: str
    label: str


kinds: Registry[TaskKind] = Registry("work.kinds")


def register(kind: TaskKind) -> TaskKind:
    """Declare a kind (its module does, from WorkConfig.ready())."""
    return kinds.register(kind, key=kind.key)


def get(key: str) -> TaskKind:
    return kinds[key]


def registered() -> list[TaskKind]:
    return list(kinds)


class HasTaskKind(Protocol):
    """An item of work the core holds: it names its kind (`pointwise` or `pairwise`)."""

    @property
    def task_kind(self) -> str: ...


class ItemKind(Protocol):
    """What the core asks of the kind of one assignment, whatever page or service reads it."""

    @property
    def key(self) -> str: ...

    @property
    def item_field(self) -> str:
        """The field of an assignment, exam item or control item that holds this kind's item
        when it is filled ("pair"); "" for the kind whose item is the answer alone."""
        ...

    @property
    def in_entry(self) -> bool:
        """Whether its work on an answer is grouped with the expert's other panels' work on the
        same answer into one entry, scored on one page (work.entries)."""
        ...

    def flag_refusal(self) -> str:
        """Why the assignment cannot be skipped or flagged as broken ("": it can)."""
        ...

    def rubric_refusal(self, assignment_id: int) -> str:
        """Why the rubric scoring flow (its services, page and API) refuses the assignment
        ("": it is rubric work)."""
        ...


items: Registry[ItemKind] = Registry("work.kinds.items")


def kind_of(row: object) -> str:
    """The kind a row of held work holds: the kind whose item field is filled, else the kind
    whose item is the answer alone (a row names at most one item beyond its answer: the models'
    check constraints)."""
    plain = ""
    for kind in items:
        if not kind.item_field:
            plain = kind.key
        elif getattr(row, f"{kind.item_field}_id", None) is not None:
            return kind.key
    if not plain:
        raise ImproperlyConfigured("work.kinds.items: no kind holds a plain answer")
    return plain


def of(item: HasTaskKind) -> ItemKind:
    """The kind of an item of work, by its kind value."""
    return items[item.task_kind]
