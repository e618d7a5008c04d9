from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet

from panels.models import Panel


def panels_for_user(user: Any) -> QuerySet[Panel]:
    """Admins see every panel, supervisors only theirs."""
    if user.is_staff or user.is_superuser:
        return Panel.objects.all()
    return Panel.objects.filter(supervisors=user)


def panel_progress(panels: QuerySet[Panel]) -> list[dict[str, Any]]:
    """Triples required / estimates submitted per panel, counted without touching text columns."""
    from annotation.models import Estimate, EstimateStatus, Triple

    rows = []
    required = dict(
        Triple.objects.filter(panel__in=panels)
        .values_list("panel")
        .annotate(n=Count("id"))
        .values_list("panel", "n")
    )
    submitted = dict(
        Estimate.objects.filter(triple__panel__in=panels)
        .values_list("triple__panel")
        .annotate(
            n=Count("id", filter=Q(status__in=[EstimateStatus.SUBMITTED, EstimateStatus.SKIPPED]))
        )
        .values_list("triple__panel", "n")
    )
    for panel in panels.annotate(n_experts=Count("memberships")):
        rows.append(
            {
                "panel": panel,
                "triples": required.get(panel.pk, 0),
                "estimates_done": submitted.get(panel.pk, 0),
                "experts": panel.n_experts,
            }
        )
    return rows
