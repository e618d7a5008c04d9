"""Reads of guidelines: a panel's current ones, a guideline's history, a panel's criteria."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Prefetch, Q, QuerySet

from guidelines.models import Guideline, GuidelineExample, GuidelineVersion
from panels.models import Panel
from taxonomy.models import GROUP_ORDER, Criterion, CriterionGroup
from taxonomy.services import task_tops

_GROUP_RANK = {str(group): rank for rank, group in enumerate(GROUP_ORDER)}


def _criterion_order(criterion: Criterion) -> tuple[int, str]:
    return (_GROUP_RANK.get(criterion.group, 9), criterion.key)


def _current(qs: QuerySet[Guideline]) -> QuerySet[Guideline]:
    return (
        qs.filter(current__isnull=False)
        .select_related("criterion", "current__author")
        .prefetch_related(
            Prefetch("current__examples", queryset=GuidelineExample.objects.order_by("position"))
        )
    )


@dataclass(frozen=True)
class PanelGuidelines:
    """What a reader sees: the panel-wide guideline and the criteria's, in scoring order."""

    panel_wide: Guideline | None
    criteria: list[Guideline]


def panel_guidelines(panel: Panel, criterion: Criterion | None = None) -> PanelGuidelines:
    """The panel's guidelines with a current version; with `criterion`, only that criterion's
    (the scoring page's link for one criterion) besides the panel-wide one."""
    qs = _current(Guideline.objects.filter(panel=panel))
    if criterion is not None:
        qs = qs.filter(Q(criterion__isnull=True) | Q(criterion=criterion))
    rows = list(qs)
    panel_wide = next((g for g in rows if g.criterion_id is None), None)
    by_criterion = [g for g in rows if g.criterion is not None]
    by_criterion.sort(key=lambda g: _criterion_order(g.criterion))  # type: ignore[arg-type]
    return PanelGuidelines(panel_wide=panel_wide, criteria=by_criterion)


def panel_criteria(panel: Panel) -> list[Criterion]:
    """The criteria the panel is responsible for (see work.routing): the groups it scores for
    every answer, the Domain-specific criteria of its styles, the Task-specific criteria of its
    tasks' leaves; in scoring order."""
    condition = Q(group__in=list(panel.criterion_groups or []))
    styles = list(panel.styles.values_list("pk", flat=True))
    if styles:
        condition |= Q(group=CriterionGroup.DOMAIN, style_id__in=styles)
    tops = set(panel.tasks.values_list("pk", flat=True))
    if tops:
        leaves = [task_id for task_id, top in task_tops().items() if top in tops]
        condition |= Q(group=CriterionGroup.TASK, tasks__in=leaves)
    criteria = list(Criterion.objects.filter(condition).distinct())
    criteria.sort(key=_criterion_order)
    return criteria


@dataclass(frozen=True)
class ManageRow:
    criterion: Criterion
    guideline: Guideline | None


def manage_rows(panel: Panel) -> tuple[Guideline | None, list[ManageRow]]:
    """The supervisor's list: the panel-wide guideline, then every criterion of the panel (and
    any other criterion the panel wrote a guideline for) with its guideline, if any."""
    guidelines = list(
        Guideline.objects.filter(panel=panel).select_related("criterion", "current__author")
    )
    panel_wide = next((g for g in guidelines if g.criterion_id is None), None)
    by_criterion = {g.criterion_id: g for g in guidelines if g.criterion is not None}
    criteria = {c.pk: c for c in panel_criteria(panel)}
    for guideline in by_criterion.values():
        assert guideline.criterion is not None
        criteria.setdefault(guideline.criterion.pk, guideline.criterion)
    ordered = sorted(criteria.values(), key=_criterion_order)
    return panel_wide, [ManageRow(c, by_criterion.get(c.pk)) for c in ordered]


def guideline_versions(guideline: Guideline) -> QuerySet[GuidelineVersion]:
    return guideline.versions.select_related("author").order_by("-number")


def version_with_examples(version_id: int, panel: Panel) -> GuidelineVersion | None:
    """A version of one of the panel's guidelines (None: it does not exist for this panel)."""
    return (
        GuidelineVersion.objects.filter(pk=version_id, guideline__panel=panel)
        .select_related("guideline__criterion", "author")
        .prefetch_related(
            Prefetch("examples", queryset=GuidelineExample.objects.order_by("position"))
        )
        .first()
    )
