"""Loading the POLLUX catalogue and assembling an instruction's criteria set."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from django.db import transaction
from django.utils.text import slugify

from taxonomy.models import (
    CATALOGUE_GROUPS,
    GROUP_ORDER,
    BestEnd,
    ComparisonCriterion,
    Criterion,
    CriterionGroup,
    FunctionalStyle,
    Rubric,
    Task,
    TaskCriterion,
    TaskGroup,
)
from taxonomy.naming import fill_contexts
from taxonomy.pairwise_criteria import REPA_CRITERIA_FILE, load_criteria_set

CATALOGUE_DIR = Path(__file__).resolve().parent / "data"
PATH_SEP = " / "


@dataclass
class LoadReport:
    created: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)
    rubric_versions: int = 0

    def bump(self, kind: str, model: str) -> None:
        target = self.created if kind == "created" else self.updated
        target[model] = target.get(model, 0) + 1

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.rubric_versions)


def _upsert(model: Any, lookup: dict[str, Any], values: dict[str, Any], report: LoadReport) -> Any:
    """Create or update one row, writing only when something differs (so a reload is a no-op)."""
    obj = model.objects.filter(**lookup).first()
    if obj is None:
        obj = model.objects.create(**lookup, **values)
        report.bump("created", model.__name__)
        return obj
    changed = [name for name, value in values.items() if getattr(obj, name) != value]
    if changed:
        for name in changed:
            setattr(obj, name, values[name])
        obj.save(update_fields=changed)
        report.bump("updated", model.__name__)
    return obj


def rubric_levels(scale: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """Turn the catalogue's {en: {level: text}, ru: {...}} into ordered levels.

    The Russian side is authoritative: some entries have empty or differently keyed English scales.
    """
    ru = scale.get("ru") or {}
    en = scale.get("en") or {}
    keys = sorted(ru or en, key=int)
    return [{"value": int(k), "ru": ru.get(k, ""), "en": en.get(k, "")} for k in keys]


def _levels_hash(levels: list[dict[str, Any]]) -> str:
    return hashlib.sha256(
        json.dumps(levels, ensure_ascii=False, sort_keys=True).encode()
    ).hexdigest()


def _style(name: dict[str, str], report: LoadReport) -> FunctionalStyle:
    return _upsert(
        FunctionalStyle,
        {"name_en": name["en"]},
        {"key": slugify(name["en"]), "name_ru": name["ru"]},
        report,
    )


@transaction.atomic
def load_pollux(directory: Path = CATALOGUE_DIR) -> LoadReport:
    """Load criteria.json and tasks.json idempotently; a changed rubric gets a new version."""
    criteria_data: dict[str, Any] = json.loads((directory / "criteria.json").read_text("utf-8"))
    tasks_data: dict[str, Any] = json.loads((directory / "tasks.json").read_text("utf-8"))
    report = LoadReport()

    styles: dict[str, FunctionalStyle] = {}
    for entry in criteria_data.values():
        styles.setdefault(entry["domain"]["en"], _style(entry["domain"], report))

    criteria: dict[str, Criterion] = {}
    for key, entry in criteria_data.items():
        group = CATALOGUE_GROUPS[entry["crit_group"]["en"]]
        values = {
            "base_key": key.split("__")[0],
            "name_en": entry["name"]["en"] or "",
            "name_ru": entry["name"]["ru"] or "",
            "desc_en": entry["desc"]["en"] or "",
            "desc_ru": entry["desc"]["ru"] or "",
            "group": group,
            "style": styles[entry["domain"]["en"]] if group == CriterionGroup.DOMAIN else None,
            "task_name": entry.get("task") or "",
            "subtask1_name": entry.get("subtask1") or "",
        }
        existed = Criterion.objects.filter(key=key).exists()
        criterion = _upsert(Criterion, {"key": key}, values, report)
        if not existed:
            # NA is a per-criterion decision editable by admins; the catalogue has no such field.
            # A domain or task criterion may simply not apply to an instruction, so allow NA there.
            criterion.allows_na = group in (CriterionGroup.DOMAIN, CriterionGroup.TASK)
            criterion.save(update_fields=["allows_na"])
        levels = rubric_levels(entry["scale"])
        digest = _levels_hash(levels)
        # The critical gates' best score is 0 ("no violation"); every other scale's is its top.
        best_end = BestEnd.LOWEST if group == CriterionGroup.CRITICAL else BestEnd.HIGHEST
        current = criterion.rubric
        if current is None or current.content_hash != digest:
            version = (current.version + 1) if current else 1
            rubric = Rubric.objects.create(
                criterion=criterion,
                version=version,
                levels=levels,
                content_hash=digest,
                best_end=best_end,
            )
            criterion.rubric = rubric
            criterion.save(update_fields=["rubric"])
            report.rubric_versions += 1
        elif current.best_end != best_end:
            # Same levels, so no new version: which end is best is a property of the scale.
            Rubric.objects.filter(criterion=criterion).update(best_end=best_end)
        criteria[key] = criterion

    position = 0
    for group_pos, (group_key, group_entry) in enumerate(tasks_data.items()):
        group = _upsert(
            TaskGroup,
            {"name_en": group_entry["name"]["en"] or group_key},
            {
                "name_ru": group_entry["name"]["ru"],
                "desc_en": group_entry["desc"]["en"] or "",
                "desc_ru": group_entry["desc"]["ru"] or "",
                "position": group_pos,
            },
            report,
        )
        for task_key, task_entry in group_entry["tasks"].items():
            position = _load_task_tree(
                group, task_key, task_entry, None, 0, position, styles, criteria, report
            )
    for _ in range(fill_contexts(Criterion, Task, TaskCriterion)):
        report.bump("updated", "Criterion")
    return report


def _load_task_tree(
    group: TaskGroup,
    key: str,
    entry: dict[str, Any],
    parent: Task | None,
    level: int,
    position: int,
    styles: dict[str, FunctionalStyle],
    criteria: dict[str, Criterion],
    report: LoadReport,
) -> int:
    path = (parent.path if parent else group.name_en) + PATH_SEP + key
    is_leaf = "criteria" in entry
    style = None
    if is_leaf and entry.get("domain"):
        name = entry["domain"]["en"]
        style = styles.get(name) or styles.setdefault(name, _style(entry["domain"], report))
    task = _upsert(
        Task,
        {"path": path},
        {
            "group": group,
            "parent": parent,
            "level": level,
            "name_en": entry["name"]["en"] or key,
            "name_ru": entry["name"]["ru"] or "",
            "desc_en": entry["desc"]["en"] or "",
            "desc_ru": entry["desc"]["ru"] or "",
            "is_leaf": is_leaf,
            "style": style,
            "has_gold": bool(entry.get("has_gold", False)),
            "complexity": entry.get("complexity") or {},
            "position": position,
        },
        report,
    )
    position += 1
    if is_leaf:
        wanted = {key_: pos for pos, key_ in enumerate(entry["criteria"])}
        existing = {
            tc.criterion.key: tc for tc in task.taskcriterion_set.select_related("criterion")
        }
        for ckey, tc in existing.items():
            if ckey not in wanted:
                tc.delete()
                report.bump("updated", "TaskCriterion")
        for ckey, pos in wanted.items():
            tc = existing.get(ckey)
            if tc is None:
                TaskCriterion.objects.create(task=task, criterion=criteria[ckey], position=pos)
                report.bump("created", "TaskCriterion")
            elif tc.position != pos:
                tc.position = pos
                tc.save(update_fields=["position"])
                report.bump("updated", "TaskCriterion")
        return position
    children = entry.get("subtasks_l1" if level == 0 else "subtasks_l2") or {}
    for child_key, child in children.items():
        position = _load_task_tree(
            group, child_key, child, task, level + 1, position, styles, criteria, report
        )
    return position


class HasTaskAndStyle(Protocol):
    """What `criteria_for` reads of an instruction (read-only, so plain objects fit too)."""

    # None: a query that came only to be compared side by side (no POLLUX task).
    @property
    def task_id(self) -> int | None: ...

    @property
    def style_id(self) -> int | None: ...


class CriteriaIndex:
    """The catalogue in memory: criteria sets of many instructions with a handful of queries.

    The assignment builder resolves thousands of answers; one query per instruction would
    dominate its run time.
    """

    def __init__(self) -> None:
        criteria = {c.pk: c for c in Criterion.objects.select_related("rubric", "style")}
        self.listed: dict[int, list[Criterion]] = defaultdict(list)
        for task_id, criterion_id in TaskCriterion.objects.order_by(
            "task_id", "position"
        ).values_list("task_id", "criterion_id"):
            self.listed[task_id].append(criteria[criterion_id])
        self.leaf_style: dict[int, int | None] = dict(
            Task.objects.filter(is_leaf=True).values_list("pk", "style_id")
        )
        self.domain_by_style: dict[int | None, list[Criterion]] = defaultdict(list)
        for criterion in sorted(criteria.values(), key=lambda c: c.key):
            if criterion.group == CriterionGroup.DOMAIN:
                self.domain_by_style[criterion.style_id].append(criterion)
        self.critical = sorted(
            (c for c in criteria.values() if c.group == CriterionGroup.CRITICAL),
            key=lambda c: c.key,
        )
        self._cache: dict[tuple[int, int | None], list[Criterion]] = {}

    def for_task(self, task_id: int, style_id: int | None) -> list[Criterion]:
        key = (task_id, style_id)
        if key not in self._cache:
            self._cache[key] = self._resolve(task_id, style_id)
        return self._cache[key]

    def _resolve(self, task_id: int, style_id: int | None) -> list[Criterion]:
        if task_id not in self.leaf_style:
            raise Task.DoesNotExist(f"task {task_id} is not a leaf of the catalogue")
        listed = self.listed.get(task_id, [])
        leaf_style = self.leaf_style[task_id]
        style_id = style_id or leaf_style
        chosen = [c for c in listed if c.group != CriterionGroup.DOMAIN]
        if style_id == leaf_style:
            chosen += [c for c in listed if c.group == CriterionGroup.DOMAIN]
        else:
            chosen += self.domain_by_style.get(style_id, [])
        present = {c.key for c in chosen}
        chosen += [c for c in self.critical if c.key not in present]
        order = {group: i for i, group in enumerate(GROUP_ORDER)}
        # Stable sort: within a group the catalogue's order is kept.
        return sorted(chosen, key=lambda c: order[CriterionGroup(c.group)])


def criteria_for(instruction: HasTaskAndStyle) -> list[Criterion]:
    """The criteria set of an instruction, critical gates first.

    The catalogue leaf's own list is the authority for which General, Subjective and Task-specific
    criteria apply (POLLUX deliberately drops General and Subjective ones for STEM and code).
    Critical criteria are always included: they are the gate every answer passes. The
    Domain-specific criteria follow the instruction's functional style: the leaf's own list when
    the style is the leaf's, otherwise every domain criterion bound to the instruction's style
    (a general-purpose task written in, say, official style is judged by official-style rules).

    An instruction without a task (a side-by-side query) has no pointwise criteria: [].
    """
    if instruction.task_id is None:
        return []
    return CriteriaIndex().for_task(instruction.task_id, instruction.style_id)


def display_names(keys: Iterable[str]) -> dict[str, str]:
    """{criterion key: `Criterion.display_name`} for pages that hold keys (snapshots, aggregates);
    a key the catalogue lacks names itself."""
    wanted = set(keys)
    names = {c.key: c.display_name for c in Criterion.objects.filter(key__in=wanted)}
    return {key: names.get(key, key) for key in wanted}


def task_lineages() -> dict[int, list[int]]:
    """Every task's path from its top-level task: {task id: [top id, ..., task id]}.

    The one walk up the task tree, from one query: routing (the owner panel of a task), the
    dataset's task dimension and levels and the judge report's task pooling all use it (a
    single task's objects: `Task.lineage`).
    """

    parents = dict(Task.objects.values_list("pk", "parent_id"))
    lineages: dict[int, list[int]] = {}
    for pk in parents:
        path = [pk]
        while parents.get(path[-1]) is not None:
            path.append(parents[path[-1]])
        lineages[pk] = path[::-1]
    return lineages


def task_tops() -> dict[int, int]:
    """Every task's top-level task (its POLLUX "task type"): {task id: level-0 ancestor id}."""
    return {pk: path[0] for pk, path in task_lineages().items()}


def comparison_criteria(path: Path | None = None) -> list[ComparisonCriterion]:
    """The rows of a pairwise criteria set (REPA v1 by default), created from its file if absent.

    Idempotent and safe to call from every builder and page: the file is validated by
    `taxonomy.pairwise_criteria`, and a released version is never rewritten (its rows are
    returned as they are, so a label keeps the wording it was given under).
    """
    loaded = load_criteria_set(path or REPA_CRITERIA_FILE)
    existing = list(
        ComparisonCriterion.objects.filter(criteria_set=loaded.name, version=loaded.version)
    )
    if len(existing) == len(loaded.criteria):
        return existing
    with transaction.atomic():
        for criterion in loaded.criteria:
            ComparisonCriterion.objects.get_or_create(
                criteria_set=loaded.name,
                version=loaded.version,
                key=criterion.key,
                defaults={
                    "position": criterion.position,
                    "name_en": criterion.name["en"],
                    "name_ru": criterion.name["ru"],
                    "question_en": criterion.question["en"],
                    "question_ru": criterion.question["ru"],
                    "judge_en": criterion.judge_description["en"],
                    "judge_ru": criterion.judge_description["ru"],
                },
            )
    return list(
        ComparisonCriterion.objects.filter(criteria_set=loaded.name, version=loaded.version)
    )
