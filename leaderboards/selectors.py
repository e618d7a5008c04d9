"""The leaderboard page's table, read from a snapshot (never from the verdicts).

Unfiltered, a source's rows are the snapshot's models with their bootstrap intervals. With a
filter (task type, criterion, complexity, functional style) the means are recomputed from the
snapshot's cells — sums and counts of the gated normalised verdicts — and shown without an
interval (the interval needs the answers, which the cells do not keep)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.utils.translation import get_language

from leaderboards.models import BoardVersion, Leaderboard, LeaderboardSnapshot

# Sorts by a fixed column; "group:<task type id>" sorts by that task type's column too.
SORTS = ("score", "name", "low", "answers", "elo", "bradley_terry", "glicko2", "borda")
PAIRWISE_SYSTEMS = ("elo", "bradley_terry", "glicko2", "borda")


def sort_ok(sort: str) -> bool:
    return sort in SORTS or (sort.startswith("group:") and sort[6:].isdigit())


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
    # The model's side-by-side ratings (the experts' latest REPA ranking), when it has them.
    pairwise: dict[str, float | None] = field(default_factory=dict)
    # The place among the models: None for the baselines (random and human), which are shown
    # for comparison and take no place.
    rank: int | None = None


def label(entry: dict[str, str] | None) -> str:
    if not entry:
        return "—"
    lang = (get_language() or "ru")[:2]
    return entry.get(lang) or entry.get("ru") or entry.get("en") or "—"


# Per model: the total and count of its gated values, and per task type the same.
Sums = dict[str, tuple[float, int, dict[str, list[float]]]]


def _filtered(source: dict[str, Any], filters: Filters) -> Sums:
    out: Sums = {}
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
    source = source_of(data, source_key)
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
    ratings = (data.get("pairwise") or {}).get("models", {})
    for row in rows:
        if not row.baseline:
            row.pairwise = ratings.get(row.model, {})
    rows.sort(key=_sort_key(sort))
    ranked = (row for row in rows if not row.baseline and not row.human)
    for place, row in enumerate(ranked, start=1):
        row.rank = place
    names = data.get("groups", {})
    columns = sorted({g for r in rows for g in r.by_group}, key=lambda g: label(names.get(g)))
    for row in rows:
        row.cells = [row.by_group.get(g) for g in columns]
    return {
        "rows": rows,
        "groups": [(g, label(names.get(g))) for g in columns],
        "source": source,
        "pairwise": bool(ratings) and any(r.pairwise for r in rows),
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
        if sort in PAIRWISE_SYSTEMS:
            value = row.pairwise.get(sort)
            return (value is None, -(value or 0.0), row.name.lower())
        if sort.startswith("group:"):
            value = row.by_group.get(sort[6:])
            return (value is None, -(value or 0.0), row.name.lower())
        return (missing, -(row.mean or 0.0), row.name.lower())

    return key


# --------------------------------------------------------------------------------------------
# The snapshot, read once per process: a snapshot never changes once stored (a recomputation
# is a new row), so its parsed data is kept by id, the few latest ones.
# --------------------------------------------------------------------------------------------

_CACHE: dict[int, dict[str, Any]] = {}
_CACHE_SIZE = 8
_LOAD = threading.Lock()


def snapshot_data(snapshot_id: int) -> dict[str, Any]:
    """A snapshot's data, parsed once per process (one thread loads, the others wait for it)."""
    from leaderboards.models import LeaderboardSnapshot

    data = _CACHE.get(snapshot_id)
    if data is not None:
        return data
    with _LOAD:
        data = _CACHE.get(snapshot_id)
        if data is None:
            data = (
                LeaderboardSnapshot.objects.filter(pk=snapshot_id)
                .values_list("data", flat=True)
                .get()
            )
            while len(_CACHE) >= _CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[snapshot_id] = data
    return data


# --------------------------------------------------------------------------------------------
# One model, two models.
# --------------------------------------------------------------------------------------------


def source_of(data: dict[str, Any], key: str) -> dict[str, Any] | None:
    sources = {s["key"]: s for s in data.get("sources", [])}
    return sources.get(key) or next(iter(sources.values()), None)


def model_row(source: dict[str, Any], model: str) -> dict[str, Any] | None:
    return next((m for m in source["models"] if str(m["model"]) == model), None)


def profile(data: dict[str, Any], source: dict[str, Any], model: str) -> dict[str, Any] | None:
    """A model's scores per task type (bars) and its strongest and weakest criteria."""
    row = model_row(source, model)
    if row is None:
        return None
    groups = sorted(row["by_group"].items(), key=lambda kv: label(data["groups"].get(kv[0])))
    criteria = sorted(row["by_criterion"].items(), key=lambda kv: kv[1])
    named = [(label(data["criteria"].get(k)), v) for k, v in criteria]
    return {
        "row": row,
        "name": data["models"].get(model, {}).get("name", model),
        "groups": [(label(data["groups"].get(k)), v) for k, v in groups],
        "weakest": named[:5],
        "strongest": named[::-1][:5],
    }


Compared = tuple[str, float | None, float | None, float | None]  # name, a, b, a − b


def comparison(
    data: dict[str, Any], source: dict[str, Any], a: str, b: str
) -> dict[str, Any] | None:
    """Two models per task type and per criterion, with the difference a − b."""
    ra, rb = model_row(source, a), model_row(source, b)
    if ra is None or rb is None:
        return None

    def rows(part: str, names: dict[str, Any]) -> list[Compared]:
        keys = sorted(set(ra[part]) | set(rb[part]), key=lambda k: label(names.get(k)))
        out = []
        for k in keys:
            x, y = ra[part].get(k), rb[part].get(k)
            out.append((label(names.get(k)), x, y, None if x is None or y is None else x - y))
        return out

    return {
        "a": ra,
        "b": rb,
        "name_a": data["models"].get(a, {}).get("name", a),
        "name_b": data["models"].get(b, {}).get("name", b),
        "groups": rows("by_group", data.get("groups", {})),
        "criteria": rows("by_criterion", data.get("criteria", {})),
    }


def choices(entries: dict[str, dict[str, str]]) -> list[tuple[str, str]]:
    """(key, name) of a snapshot's named entries (task types, criteria, styles), by name."""
    return sorted(((k, label(v)) for k, v in entries.items()), key=lambda kv: kv[1])


# --------------------------------------------------------------------------------------------
# The board a page is about, with its latest snapshot's id and time, in one plain query: every
# request of the busiest public page pays it (the access check needs the board's visibility,
# fresh), and the ORM's compiling of the same query with its two subqueries cost more than the
# query itself (bench/leaderboard.py measures the page against a trivial view).
# --------------------------------------------------------------------------------------------

# Every column: the page shows the description, and a deferred one would cost a query per render.
_BOARD_FIELDS = list(Leaderboard._meta.concrete_fields)


def _board_sql(numbered: bool) -> str:
    board = Leaderboard._meta.db_table
    snap = LeaderboardSnapshot._meta.db_table
    ver = BoardVersion._meta.db_table
    columns = ", ".join(f"b.{connection.ops.quote_name(f.column)}" for f in _BOARD_FIELDS)
    # The version shown: the one asked for by number, else the latest.
    which = "AND v.number = %s " if numbered else ""
    version = f"FROM {ver} v WHERE v.leaderboard_id = b.id {which}ORDER BY v.number DESC LIMIT 1"
    latest = (
        f"FROM {snap} s WHERE s.leaderboard_id = b.id AND s.version_id = (SELECT v.id {version}) "
        "ORDER BY s.created_at DESC, s.id DESC LIMIT 1"
    )
    # Only the models' own table and column names go into the text; the slug and the number
    # are parameters.
    return (
        f"SELECT {columns}, (SELECT s.id {latest}), (SELECT s.created_at {latest}), "  # noqa: S608
        f"(SELECT v.id {version}), (SELECT v.number {version}) "
        f"FROM {board} b WHERE b.slug = %s"
    )


def _converted(field: Any, table: str, value: Any) -> Any:
    """A raw column value as the ORM would give it (the backend's converters, then the
    field's: SQLite's datetimes from text, JSON parsed)."""
    col = field.get_col(table)
    for converter in connection.ops.get_db_converters(col) + field.get_db_converters(connection):
        value = converter(value, col, connection)
    return value


def board_with_snapshot(slug: str, number: int | None = None) -> Leaderboard | None:
    """The board annotated with the version shown (`version_id`, `version_number`: the one of
    that number, else the latest; None when it has no such version) and that version's latest
    snapshot (`snapshot_id`, `snapshot_at`)."""
    params: list[Any] = [number] * 4 if number is not None else []
    with connection.cursor() as cursor:
        cursor.execute(_board_sql(number is not None), [*params, slug])
        row = cursor.fetchone()
    if row is None:
        return None
    n = len(_BOARD_FIELDS)
    table = Leaderboard._meta.db_table
    values = [_converted(f, table, v) for f, v in zip(_BOARD_FIELDS, row[:n], strict=True)]
    board = Leaderboard.from_db("default", [f.attname for f in _BOARD_FIELDS], values)
    board.snapshot_id = row[n]  # type: ignore[attr-defined]
    created = LeaderboardSnapshot._meta.get_field("created_at")
    at = row[n + 1]
    board.snapshot_at = (  # type: ignore[attr-defined]
        None if at is None else _converted(created, LeaderboardSnapshot._meta.db_table, at)
    )
    board.version_id = row[n + 2]  # type: ignore[attr-defined]
    board.version_number = row[n + 3]  # type: ignore[attr-defined]
    return board
