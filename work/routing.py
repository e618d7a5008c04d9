"""Which panel scores which triple, and with what overlap (POLLUX routing rules).

- Task-specific criteria go to the panel owning the instruction's task; when several panels own
  it, the one whose functional styles include the instruction's style wins (else the lowest
  panel number).
- Domain-specific criteria go to the panel of the instruction's functional style.
- General, Subjective and Critical criteria go to the panels configured for that group
  (Panel.criterion_groups), lowest number first.
- Whatever finds no panel falls back to the task's owner, then to the lowest-numbered panel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from panels.models import Panel
from protocol.overlap import capped_overlap
from taxonomy.models import Criterion, CriterionGroup
from taxonomy.services import task_tops


@dataclass
class RoutingTable:
    """Panel responsibilities loaded once; routing then runs in memory, with no query per row."""

    task_owners: dict[int, list[int]] = field(default_factory=dict)  # top task id -> panels
    style_panels: dict[int, list[int]] = field(default_factory=dict)  # style id -> panels
    group_panels: dict[str, list[int]] = field(default_factory=dict)
    top_task: dict[int, int] = field(default_factory=dict)  # any task id -> its level-0 task id
    fallback: int | None = None

    @classmethod
    def load(cls) -> RoutingTable:
        table = cls()
        panels = list(Panel.objects.order_by("number").prefetch_related("tasks", "styles"))
        if panels:
            table.fallback = panels[0].pk
        for panel in panels:
            for task in panel.tasks.all():
                table.task_owners.setdefault(task.pk, []).append(panel.pk)
            for style in panel.styles.all():
                table.style_panels.setdefault(style.pk, []).append(panel.pk)
            for group in panel.criterion_groups or []:
                table.group_panels.setdefault(group, []).append(panel.pk)
        table.top_task = task_tops()
        return table

    def task_owner(self, task_id: int, style_id: int | None) -> int | None:
        top = self.top_task.get(task_id, task_id)
        owners = self.task_owners.get(top) or self.task_owners.get(task_id) or []
        if len(owners) > 1 and style_id is not None:
            by_style = set(self.style_panels.get(style_id, []))
            for panel_id in owners:
                if panel_id in by_style:
                    return panel_id
        return owners[0] if owners else None

    def panel_for(self, criterion: Criterion, task_id: int, style_id: int | None) -> int:
        group = criterion.group
        owner = self.task_owner(task_id, style_id)
        candidates: list[int] = []
        if group == CriterionGroup.TASK:
            candidates = [owner] if owner else []
        elif group == CriterionGroup.DOMAIN:
            target_style = criterion.style_id or style_id
            candidates = list(self.style_panels.get(target_style, [])) if target_style else []
        else:
            candidates = list(self.group_panels.get(group, []))
        if candidates:
            return candidates[0]
        if owner is not None:
            return owner
        if self.fallback is None:
            raise LookupError("No panels are configured: run `manage.py load_panels` first.")
        return self.fallback


def overlap_for(criterion: Criterion) -> int:
    """Required number of estimates: the criterion's override, else its group's default, within
    the protocol's bounds (an override or setting of 12 must not fail the build on the check)."""
    if criterion.overlap_override:
        return capped_overlap(criterion.overlap_override)
    return capped_overlap(settings.POLLUX["OVERLAP"][criterion.group])
