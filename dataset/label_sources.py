"""Registry of pairwise label sources other than the experts' majority (a judge's labels).

The model rankings (comparison) may rank a judge's side-by-side labels as well as the experts',
but comparison and judging sit side by side and import neither each other. The dataset sits
below both: judging registers its source here in JudgingConfig.ready(), comparison asks the
registry (the same one-way pattern as dataset.columns for the export's judge columns). Without
judging installed there is simply no source but the experts'.

A source is named `<name>:<run id>` (e.g. "judge:12"), `name` the registered key.
`list_runs()` gives the runs that may be ranked now as (id, display name), newest first;
`labels(run_id)` gives (triple id, label) in triple order, each label a protocol.pairwise.Label
code in the pair's own orientation or NO_MAJORITY (the source gave no final label).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured

NO_MAJORITY = "no_majority"
SEPARATOR = ":"


@dataclass(frozen=True)
class LabelSource:
    list_runs: Callable[[], list[tuple[int, str]]]
    labels: Callable[[int], list[tuple[int, str]]]


_sources: dict[str, LabelSource] = {}


def register(
    name: str,
    *,
    list_runs: Callable[[], list[tuple[int, str]]],
    labels: Callable[[int], list[tuple[int, str]]],
) -> None:
    if not name or SEPARATOR in name:
        raise ImproperlyConfigured(f"label source name {name!r} must be non-empty, without ':'")
    source = LabelSource(list_runs=list_runs, labels=labels)
    if _sources.get(name, source) != source:
        raise ImproperlyConfigured(f"label source {name!r} is registered twice")
    _sources[name] = source


def get(name: str) -> LabelSource | None:
    """The source registered under `name`, None when its app is not installed."""
    return _sources.get(name)


def names() -> list[str]:
    return sorted(_sources)


def source_key(name: str, run_id: int) -> str:
    return f"{name}{SEPARATOR}{run_id}"


def parse(key: str) -> tuple[str, int] | None:
    """(name, run id) of a `<name>:<run id>` key of a registered source, else None."""
    name, sep, raw = key.partition(SEPARATOR)
    if not sep or name not in _sources or not raw.isascii() or not raw.isdigit():
        return None
    run_id = int(raw)
    return (name, run_id) if run_id > 0 else None


def choices() -> list[tuple[str, str]]:
    """(key, display name) of every run of every registered source that may be ranked now."""
    out: list[tuple[str, str]] = []
    for name in names():
        out += [(source_key(name, pk), label) for pk, label in _sources[name].list_runs()]
    return out


def labels(key: str) -> list[tuple[int, str]] | None:
    """The labels of a source key, None when it names no registered source."""
    parsed = parse(key)
    if parsed is None:
        return None
    name, run_id = parsed
    return _sources[name].labels(run_id)
