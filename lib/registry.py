"""The one registry of the extension points: values an app registers at start-up under a key.

A lower app publishes a `Registry` (the task kinds, the hooks of work, panels, judging and
leaderboards, the dataset's kind parts); the apps above it
register their values in their AppConfig.ready(), so the dependency points one way and
import-linter checks it. A value registered without a key is keyed by its qualified name: the
same function registered twice is one entry, and iterating yields every value (providers whose
results the caller combines).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from django.core.exceptions import ImproperlyConfigured

V = TypeVar("V")


def _qualified_name(value: object) -> str:
    module = getattr(value, "__module__", None)
    name = getattr(value, "__qualname__", None)
    if module is None or name is None:
        raise ImproperlyConfigured(f"{value!r} has no qualified name: register it with a key")
    return f"{module}.{name}"


class Registry(Generic[V]):
    """Values by key, registered once each; a second, different value under a key is a wiring
    mistake and fails at start-up, not silently."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._values: dict[str, V] = {}

    def register(self, value: V, *, key: str | None = None) -> V:
        key = _qualified_name(value) if key is None else key
        if self._values.setdefault(key, value) is not value:
            raise ImproperlyConfigured(f"{self.name}: {key!r} is registered twice")
        return value

    def get(self, key: str) -> V | None:
        return self._values.get(key)

    def __getitem__(self, key: str) -> V:
        try:
            return self._values[key]
        except KeyError:
            raise ImproperlyConfigured(f"{self.name}: nothing is registered as {key!r}") from None

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self) -> Iterator[V]:
        return iter(list(self._values.values()))

    def keys(self) -> list[str]:
        return list(self._values)

    def pop(self, key: str) -> V | None:
        """Take a value out (a test's scratch registration)."""
        return self._values.pop(key, None)
