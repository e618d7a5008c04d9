"""The leaderboard page's table, read from a snapshot (never from the verdicts).

Unfiltered, a source's rows are the snapshot's models with their bootstrap intervals. With a
filter (task type, criterion, complexity, functional style) the means are recomputed from the
snapshot's cells — sums and counts of the gated normalised verdicts — and shown without an
interval (the interval needs the answers, which the cells do not keep)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import get_language

SORTS = ("score", "name", "low", "answers")


@dataclass
class Filters:
    group: str = ""
    criterion: str = ""
    complexity: str = ""
    style: str = ""

    @property
    def active(self) -> bool:
        return bool(self.group or self.criterion or self.complexity or self.style)

    def match(self, cell: list[Any]) -> bool:
        _model, group, criterion, complexity, style, _s, _n = cell
        return (
            (not self.group or str(group) == self.group)
            and (not self.criterion or str(criterion) == self.criterion)
            and (not self.complexity or complexity == self.complexity)
            and (not self.style or str(style) == self.style)
        )


@dataclass
class Row:
    model: str
    name: str
    human: bool
    mean: float | None
    low: float | None = None
    high: float | None = None
    answers: int | None = None
    gated: int | None = None
    by_group: dict[str, float | None] = field(default_factory=dict)
    baseline: str = ""  # "random" for the random baseline row
    cells: list[float | None] = field(default_factory=list)  # by_group in the columns' order


def label(entry: dict[str, str] | None) -> str:
    if not entry:
        return "—"
    lang = (get_language() or "ru")[:2]
    return entry.get(lang) or entry.get("ru") or entry.get("en") or "—"


def _filtered(
    source: dict[str, Any], filters: Filters
) -> dict[str, tuple[float, int, dict[str, list[float]]]]:
    out: dict[str, tuple[float, int, dict[str, list[float]]]] = {}
    for cell in source["cells"]:
        if not filters.match(cell):
            continue
        model = str(cell[0])
        total, count, groups = out.get(model, (0.0, 0, {}))
        g = groups.setdefault(str(cell[1]), [0.0, 0])
        g[0] += cell[5]
        g[1] += cell[6]
        out[model] = (total + cell[5], count + cell[6], groups)
    return out


def table(data: dict[str, Any], source_key: str, filters: Filters, sort: str) -> dict[str, Any]:
    sources = {s["key"]: s for s in data.get("sources", [])}
    source = sources.get(source_key) or next(iter(sources.values()), None)
    if source is None:
        return {"rows": [], "groups": [], "source": None}
    models = data.get("models", {})
    rows: list[Row] = []
    if filters.active:
        for model, (total, count, groups) in _filtered(source, filters).items():
            rows.append(
                Row(
                    model,
                    models.get(model, {}).get("name", model),
                    bool(models.get(model, {}).get("human")),
                    total / count if count else None,
                    by_group={g: (s / n if n else None) for g, (s, n) in groups.items()},
                )
            )
    else:
        for m in source["models"]:
            key = str(m["model"])
            rows.append(
                Row(
                    key,
                    models.get(key, {}).get("name", key),
                    bool(models.get(key, {}).get("human")),
                    m["mean"],
                    m["low"],
                    m["high"],
                    m["answers"],
                    m["gated_answers"],
                    dict(m["by_group"]),
                )
            )
        if source.get("random") and source["random"]["mean"] is not None:
            rows.append(
                Row(
                    "random",
                    "",
                    False,
                    source["random"]["mean"],
                    by_group=dict(source["random"]["by_group"]),
                    baseline="random",
                )
            )
    rows.sort(key=_sort_key(sort))
    names = data.get("groups", {})
    columns = sorted({g for r in rows for g in r.by_group}, key=lambda g: label(names.get(g)))
    for row in rows:
        row.cells = [row.by_group.get(g) for g in columns]
    return {
        "rows": rows,
        "groups": [(g, label(names.get(g))) for g in columns],
        "source": source,
    }


def _sort_key(sort: str) -> Any:
    def key(row: Row) -> tuple[Any, ...]:
        missing = row.mean is None
        if sort == "name":
            return (row.name.lower(),)
        if sort == "low":
            return (row.low is None, -(row.low or 0.0))
        if sort == "answers":
            return (-(row.answers or 0), row.name.lower())
        return (missing, -(row.mean or 0.0), row.name.lower())

    return key
