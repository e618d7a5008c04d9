"""The catalogue's names on pages: a criterion by `Criterion.display_name`, a task by its path in
the active language."""

from __future__ import annotations

from typing import Any

from django import template

from taxonomy.models import ComparisonCriterion, Complexity, Criterion, CriterionGroup, Task

register = template.Library()


@register.filter
def criterion_name(criterion: Criterion | ComparisonCriterion | None) -> str:
    """`{{ criterion|criterion_name }}`: the one way a page names a criterion."""
    return criterion.display_name if criterion is not None else ""


@register.filter
def task_path(task: Task | None) -> str:
    """`{{ task|task_path }}`: the task's path in the active language."""
    return task.display_path() if task is not None else ""


@register.filter
def complexity_label(value: Any) -> str:
    """`{{ "easy"|complexity_label }}`: an instruction's complexity as a word of the page."""
    labels = dict(Complexity.choices)
    return str(labels.get(value, value or ""))


@register.filter
def group_label(value: Any) -> str:
    """`{{ "subjective"|group_label }}`: a criterion group as a word of the page."""
    return str(dict(CriterionGroup.choices).get(value, value or ""))
