from __future__ import annotations

from django.contrib import admin

from comparison.models import Ranking


@admin.register(Ranking)
class RankingAdmin(admin.ModelAdmin):
    """Read-only: a ranking is what one job computed; a new one comes from the rankings page."""

    list_display = ["pk", "created_at", "source", "criterion", "seconds", "job"]
    list_filter = ["source", "criterion"]
    readonly_fields = ["created_at", "job", "source", "criterion", "params", "result", "seconds"]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False
