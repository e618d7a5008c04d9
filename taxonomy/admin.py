from __future__ import annotations

from typing import Any

from django.contrib import admin

from taxonomy.models import (
    ComparisonCriterion,
    Criterion,
    FunctionalStyle,
    Rubric,
    Task,
    TaskCriterion,
    TaskGroup,
)


@admin.register(FunctionalStyle)
class FunctionalStyleAdmin(admin.ModelAdmin):
    list_display = ["key", "name_en", "name_ru"]


@admin.register(TaskGroup)
class TaskGroupAdmin(admin.ModelAdmin):
    list_display = ["name_en", "name_ru", "position"]


class TaskCriterionInline(admin.TabularInline):
    model = TaskCriterion
    extra = 0
    autocomplete_fields = ["criterion"]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["path", "level", "is_leaf", "style", "has_gold"]
    list_filter = ["group", "level", "is_leaf", "style"]
    search_fields = ["path", "name_ru"]
    inlines = [TaskCriterionInline]
    raw_id_fields = ["parent"]


class RubricInline(admin.TabularInline):
    model = Rubric
    extra = 0
    readonly_fields = ["version", "levels", "content_hash", "created_at"]
    can_delete = False


@admin.register(Criterion)
class CriterionAdmin(admin.ModelAdmin):
    list_display = ["key", "group", "style", "task_name", "allows_na", "overlap_override"]
    list_filter = ["group", "style", "allows_na"]
    search_fields = ["key", "name_en", "name_ru"]
    inlines = [RubricInline]
    raw_id_fields = ["rubric"]


@admin.register(ComparisonCriterion)
class ComparisonCriterionAdmin(admin.ModelAdmin):
    """The side-by-side criteria sets (REPA v1 is loaded from its file). A criterion that has
    labels is read-only: a changed wording is a new version of the set, so every label keeps
    the text it was given under (as a changed POLLUX rubric gets a new version)."""

    list_display = ["criteria_set", "version", "position", "key", "name_en", "name_ru"]
    list_filter = ["criteria_set", "version"]
    search_fields = ["key", "name_en", "name_ru"]

    def get_readonly_fields(self, request: Any, obj: Any = None) -> Any:
        if obj is not None and obj.triples.exists():
            return [f.name for f in obj._meta.fields]
        return []
