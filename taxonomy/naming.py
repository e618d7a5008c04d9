"""What tells apart criteria of one name: the catalogue has several criteria called "Правильность
ответа" (one per task) or "Экспертность", and a list of criteria must not show the same row twice.

A criterion whose name another criterion shares gets a context: the functional style of a
domain criterion, else the part of the task tree its tasks have in common, cut to the fewest
trailing levels that tell the criteria of that name apart. Pure: the catalogue loader and the
migration that filled the contexts in give it plain rows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

# A node of the task tree by its names: (English, Russian).
Names = tuple[str, str]


@dataclass
class CriterionRow:
    key: str
    name_en: str
    name_ru: str
    # The functional style's names for a domain criterion, else None.
    style: Names | None = None
    # Each task the criterion is scored on: its lineage from the top-level task down.
    lineages: list[list[Names]] = field(default_factory=list)


def _common_prefix(lineages: list[list[Names]]) -> list[Names]:
    if not lineages:
        return []
    prefix = list(lineages[0])
    for lineage in lineages[1:]:
        n = 0
        while n < min(len(prefix), len(lineage)) and prefix[n] == lineage[n]:
            n += 1
        del prefix[n:]
    return prefix


def _join(nodes: list[Names]) -> Names:
    return " / ".join(n[0] for n in nodes), " / ".join(n[1] for n in nodes)


def criterion_contexts(rows: list[CriterionRow]) -> dict[str, Names]:
    """{key: (English context, Russian context)} for every criterion; ("", "") for a criterion
    whose name no other criterion has, or that has no narrower context (the general one among
    task-bound variants)."""
    contexts: dict[str, Names] = {row.key: ("", "") for row in rows}
    by_name: dict[str, list[CriterionRow]] = defaultdict(list)
    for row in rows:
        by_name[row.name_ru or row.name_en].append(row)
    for namesakes in by_name.values():
        if len(namesakes) < 2:
            continue
        paths = {row.key: _common_prefix(row.lineages) for row in namesakes if not row.style}
        deepest = max((len(p) for p in paths.values()), default=0)
        # The fewest trailing levels of the task paths that tell the namesakes apart.
        for depth in range(1, deepest + 1):
            cut = {key: _join(path[-depth:]) for key, path in paths.items()}
            if len(set(cut.values())) == len(cut):
                break
        else:
            cut = {key: _join(path) for key, path in paths.items()}
        for row in namesakes:
            contexts[row.key] = row.style if row.style else cut[row.key]
    return contexts


def catalogue_rows(criterion_model: Any, task_model: Any, link_model: Any) -> list[CriterionRow]:
    """The rows of every criterion, read through the given model classes (the app's own or a
    migration's historical ones: only their fields are used)."""
    tasks = {
        pk: (parent, (en, ru))
        for pk, parent, en, ru in task_model.objects.values_list(
            "pk", "parent_id", "name_en", "name_ru"
        )
    }

    def lineage(pk: int) -> list[Names]:
        nodes: list[Names] = []
        node: int | None = pk
        while node is not None:
            parent, names = tasks[node]
            nodes.append(names)
            node = parent
        return nodes[::-1]

    links: dict[int, list[int]] = defaultdict(list)
    for task_id, criterion_id in link_model.objects.values_list("task_id", "criterion_id"):
        links[criterion_id].append(task_id)
    rows = []
    for c in criterion_model.objects.select_related("style").order_by("key"):
        style = (c.style.name_en, c.style.name_ru) if c.group == "domain" and c.style else None
        lineages = [lineage(t) for t in sorted(links[c.pk])]
        rows.append(CriterionRow(c.key, c.name_en, c.name_ru, style, lineages))
    return rows


def fill_contexts(criterion_model: Any, task_model: Any, link_model: Any) -> int:
    """Store every criterion's context (see `criterion_contexts`); how many changed."""
    contexts = criterion_contexts(catalogue_rows(criterion_model, task_model, link_model))
    changed = 0
    for c in criterion_model.objects.all():
        en, ru = contexts.get(c.key, ("", ""))
        if (c.context_en, c.context_ru) != (en, ru):
            c.context_en, c.context_ru = en, ru
            c.save(update_fields=["context_en", "context_ru"])
            changed += 1
    return changed
