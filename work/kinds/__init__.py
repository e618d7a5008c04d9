"""The task-kind seam: what the core asks of one kind of expert work.

The core handles "an item of work for an expert": routing to a panel, an overlap, a reservation,
its submission, its gold version (exams, control items), an agreement measure, aggregation jobs
and export rows. A kind of work (the pointwise rubric, side-by-side comparison, span markup,
instruction writing) supplies what differs, from its own module of this package.

Two registries (work.registry):

- `items`: the kinds whose work the core holds as assignments (pointwise, pairwise), each an
  `ItemKind`; `of(item)` picks one by the item's kind value (`task_kind`: an assignment, a
  triple, an exam or control item compares a pair or scores an answer). The core asks the kind,
  it never tests the item's pair itself.
- `_kinds`: every kind's declaration (`TaskKind`): the functions each layer offers for it (the
  slots live in the layer that uses them, so no layer imports an upper one: work fills the
  submission slots in WorkConfig.ready(), quality the gold and agreement slots, dataset the
  aggregation and export slots, each with `contribute`). `missing_slots` (checked by
  work.checks at start-up) says what a registered kind still lacks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured

from work.registry import Registry

POINTWISE = "pointwise"
PAIRWISE = "pairwise"
MARKUP = "markup"
AUTHORING = "authoring"

# Which app fills which slot: each app may fill only its own (the layers of import-linter).
SLOTS_BY_APP: dict[str, tuple[str, ...]] = {
    "work": ("parse_submission", "item_errors"),
    "quality": ("gold_match", "agreement"),
    "dataset": ("aggregate", "export_schema"),
}


@dataclass
class TaskKind:
    """One kind of expert work and the functions the core calls for it."""

    key: str
    label: str
    # work: the POST of the scoring page as items (and field errors); why one item is refused.
    parse_submission: Callable[..., Any] | None = None
    item_errors: Callable[..., list[str]] | None = None
    # quality: whether an expert's item equals the gold one; per-expert agreement of a panel.
    gold_match: Callable[..., bool] | None = None
    agreement: Callable[..., Any] | None = None
    # dataset: the verdict of each unit from its estimates; the export's table schema.
    aggregate: Callable[..., Any] | None = None
    export_schema: Callable[..., Any] | None = None
    # Slots that do not apply to this kind, each with the reason (shown by the start-up check's
    # docs, never silently empty): e.g. span markup has no single verdict per text.
    not_applicable: dict[str, str] = field(default_factory=dict)


_kinds: Registry[TaskKind] = Registry("work.kinds")


def register(kind: TaskKind) -> TaskKind:
    """Declare a kind (its module does, from WorkConfig.ready())."""
    return _kinds.register(kind, key=kind.key)


def get(key: str) -> TaskKind:
    return _kinds[key]


def registered() -> list[TaskKind]:
    return list(_kinds)


class HasTaskKind(Protocol):
    """An item of work the core holds: it names its kind (`pointwise` or `pairwise`)."""

    @property
    def task_kind(self) -> str: ...


class ItemKind(Protocol):
    """What the core asks of the kind of one assignment, whatever page or service reads it."""

    @property
    def key(self) -> str: ...

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


def of(item: HasTaskKind) -> ItemKind:
    """The kind of an item of work, by its kind value."""
    return items[item.task_kind]


def contribute(key: str, app: str, **slots: Callable[..., Any]) -> None:
    """Fill `app`'s slots of a registered kind (from that app's AppConfig.ready())."""
    kind = _kinds.get(key)
    if kind is None:
        raise ImproperlyConfigured(f"{app} contributes to task kind {key!r}, never registered")
    allowed = SLOTS_BY_APP.get(app, ())
    for name, fn in slots.items():
        if name not in allowed:
            raise ImproperlyConfigured(f"{app} may not fill slot {name!r} of a task kind")
        if name in kind.not_applicable:
            raise ImproperlyConfigured(f"slot {name!r} does not apply to task kind {key!r}")
        current = getattr(kind, name)
        if current is not None and current is not fn:
            raise ImproperlyConfigured(f"slot {name!r} of task kind {key!r} is filled twice")
        setattr(kind, name, fn)


def slot(key: str, name: str) -> Callable[..., Any]:
    """The function a kind put in a slot; the core calls the kind's work through this."""
    fn = getattr(get(key), name)
    if fn is None:
        raise ImproperlyConfigured(f"task kind {key!r} has no {name!r}")
    return fn


def missing_slots(kind: TaskKind) -> list[str]:
    return [
        f.name
        for f in fields(kind)
        if f.name not in ("key", "label", "not_applicable")
        and f.name not in kind.not_applicable
        and not getattr(kind, f.name)
    ]
