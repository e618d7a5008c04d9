"""Registry of extra column providers of the export's `triples` table.

The dataset sits below judging, yet the export carries the judges' scores next to the experts'.
Judging registers its provider here in JudgingConfig.ready(); the export asks the registry, so
the dependency points one way (judging -> dataset) and the export works without judging.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lib.registry import Registry


@dataclass(frozen=True)
class ColumnProvider:
    """A family of columns named <prefix>__<name>__<suffix>, one group per name.

    `names()` fixes the schema up front (the names present in the snapshot), `column_names`
    spells a group's columns, and `aligned(triple_ids, names)` gives column -> values aligned
    with the triple ids (None where the triple has no value), one chunk at a time.
    """

    names: Callable[[], list[str]]
    column_names: Callable[[Iterable[str]], list[str]]
    aligned: Callable[[Sequence[int], Sequence[str]], dict[str, list[Any]]]


_providers: Registry[ColumnProvider] = Registry("dataset.columns")


def register(key: str, provider: ColumnProvider) -> None:
    """A second, equal provider under the key is the same one; a different one fails."""
    if _providers.get(key) != provider:
        _providers.register(provider, key=key)


def provider(key: str) -> ColumnProvider | None:
    """The provider registered under `key`, None when its app is not installed."""
    return _providers.get(key)
