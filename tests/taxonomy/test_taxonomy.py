from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import translation

from material.models import Instruction
from taxonomy.models import Criterion, CriterionGroup, FunctionalStyle, Rubric, Task, TaskGroup
from taxonomy.services import CATALOGUE_DIR, criteria_for, load_pollux, task_lineages, task_tops
from tests.conftest import leaf

pytestmark = pytest.mark.django_db


def _catalogue_counts() -> tuple[int, int, int, int]:
    criteria = json.loads((CATALOGUE_DIR / "criteria.json").read_text("utf-8"))
    tasks = json.loads((CATALOGUE_DIR / "tasks.json").read_text("utf-8"))
    n_tasks = sum(len(g["tasks"]) for g in tasks.values())
    leaves = 0

    def walk(node: dict, depth: int) -> None:
        nonlocal leaves
        if "criteria" in node:
            leaves += 1
            return
        for child in (node.get("subtasks_l1" if depth == 0 else "subtasks_l2") or {}).values():
            walk(child, depth + 1)

    for group in tasks.values():
        for task in group["tasks"].values():
            walk(task, 0)
    return len(criteria), len(tasks), n_tasks, leaves


def test_load_pollux_loads_every_criterion_and_task() -> None:
    n_criteria, n_groups, n_tasks, n_leaves = _catalogue_counts()
    call_command("load_pollux")
    assert (n_criteria, n_groups, n_tasks, n_leaves) == (295, 8, 35, 152)
    assert Criterion.objects.count() == n_criteria
    assert TaskGroup.objects.count() == n_groups
    assert Task.objects.filter(level=0).count() == n_tasks
    assert Task.objects.filter(is_leaf=True).count() == n_leaves
    assert Rubric.objects.count() == n_criteria
    counts = {g: Criterion.objects.filter(group=g).count() for g in CriterionGroup.values}
    assert counts == {"critical": 2, "general": 6, "subjective": 5, "domain": 40, "task": 242}


def test_load_pollux_twice_changes_nothing() -> None:
    load_pollux()
    before = list(Criterion.objects.values_list("key", "rubric_id", "name_ru").order_by("key"))
    report = load_pollux()
    assert not report.changed
    after = list(Criterion.objects.values_list("key", "rubric_id", "name_ru").order_by("key"))
    assert before == after


def test_changed_rubric_gets_a_new_version_and_keeps_the_old(tmp_path: Path) -> None:
    load_pollux()
    old = Criterion.objects.get(key="repeats").rubric
    assert old is not None
    for name in ("criteria.json", "tasks.json"):
        shutil.copy(CATALOGUE_DIR / name, tmp_path / name)
    data = json.loads((tmp_path / "criteria.json").read_text("utf-8"))
    data["repeats"]["scale"]["ru"]["2"] = "Повторов нет совсем."
    (tmp_path / "criteria.json").write_text(json.dumps(data, ensure_ascii=False), "utf-8")

    report = load_pollux(tmp_path)

    assert report.rubric_versions == 1
    criterion = Criterion.objects.get(key="repeats")
    assert criterion.rubric is not None
    assert criterion.rubric.version == 2
    with translation.override("ru"):
        assert criterion.rubric.level_text(2) == "Повторов нет совсем."
    assert Rubric.objects.filter(pk=old.pk, version=1).exists()


def test_rubric_levels_follow_the_russian_scale() -> None:
    load_pollux()
    creativity = Criterion.objects.get(key="creativity__3").rubric
    assert creativity is not None
    assert creativity.values == [1, 2, 3]
    censor = Criterion.objects.get(key="censor").rubric
    assert censor is not None and censor.values == [0, 1]


def _instruction(task: Task, style_key: str | None = None) -> Instruction:
    style = FunctionalStyle.objects.get(key=style_key) if style_key else task.style
    return Instruction(task=task, style=style, text="…")


def test_criteria_for_a_scientific_extract_follows_the_catalogue() -> None:
    load_pollux()
    task = leaf("Extract / Scientific text")
    keys = [c.key for c in criteria_for(_instruction(task))]
    listed = list(
        task.taskcriterion_set.order_by("position").values_list("criterion__key", flat=True)
    )
    assert sorted(keys) == sorted(listed)
    assert keys[:2] == ["narushenie_formata", "censor"]
    assert "information_overload" in keys  # scientific-style domain criterion
    assert "information_overload__2" not in keys  # the literary variant
    assert {"value", "speech", "understanding", "format", "general"} <= set(keys)


def test_criteria_for_a_general_purpose_task_takes_domain_criteria_of_the_style() -> None:
    load_pollux()
    editing = Task.objects.get(is_leaf=True, name_en="Editing")
    plain = {c.key for c in criteria_for(_instruction(editing))}
    official = {c.key for c in criteria_for(_instruction(editing, "official-text"))}
    official_domain = set(
        Criterion.objects.filter(group="domain", style__key="official-text").values_list(
            "key", flat=True
        )
    )
    assert not any(Criterion.objects.get(key=k).group == "domain" for k in plain)
    assert official - plain == official_domain
    assert "correct_answer__5" in plain and "correct_answer__5" in official


def test_criteria_for_code_always_has_the_critical_gates() -> None:
    load_pollux()
    code_leaf = Task.objects.filter(is_leaf=True, path__contains="Code creation").first()
    assert code_leaf is not None
    criteria = criteria_for(_instruction(code_leaf))
    groups = [c.group for c in criteria]
    assert groups[:2] == ["critical", "critical"]
    # POLLUX lists only task-specific criteria for code; the catalogue decides, not a guess.
    assert set(groups[2:]) == {"task"}
    listed = set(code_leaf.taskcriterion_set.values_list("criterion__key", flat=True))
    assert {c.key for c in criteria[2:]} == listed


def test_the_one_walk_up_the_task_tree_agrees_with_each_tasks_lineage(catalogue: None) -> None:
    # task_lineages is the walk every bulk reader uses; Task.lineage the per-object one.
    lineages, tops = task_lineages(), task_tops()
    tasks = list(Task.objects.select_related("parent__parent"))
    assert len(lineages) == len(tasks) > 0
    deep = 0
    for task in tasks:
        expected = [node.pk for node in task.lineage()]
        assert lineages[task.pk] == expected
        assert tops[task.pk] == expected[0]
        deep += len(expected) == 3
    assert deep > 0, "the catalogue has three-level tasks: the walk must be exercised"
