"""What saving a configuration version means, for judges and generation alike.

A configuration is never edited: a change is a new version of its name, so every result keeps
pointing at the settings it was made with; saving the same values again keeps the current one.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

from runs.models import RunConfig

C = TypeVar("C", bound=RunConfig)


def config_latest(model: type[C], name: str) -> C | None:
    """The name's latest version, locked (call inside a transaction): two admins saving at once
    get versions n+1 and n+2."""
    latest = model._default_manager.select_for_update().filter(name=name).order_by("-version")
    return cast(C | None, latest.first())


def config_unchanged(current: RunConfig | None, values: dict[str, Any]) -> bool:
    """Whether `values` are the current version's own (nothing to save)."""
    return current is not None and all(getattr(current, f) == v for f, v in values.items())


def config_next_version(current: RunConfig | None) -> int:
    return current.version + 1 if current is not None else 1
