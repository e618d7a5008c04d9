from __future__ import annotations

from django.contrib import admin

from guidelines.models import Guideline, GuidelineVersion


@admin.register(Guideline)
class GuidelineAdmin(admin.ModelAdmin):
    list_display = ["panel", "criterion", "current"]
    list_filter = ["panel"]
    raw_id_fields = ["criterion", "current"]


@admin.register(GuidelineVersion)
class GuidelineVersionAdmin(admin.ModelAdmin):
    # History is written through the console's form only: versions are read-only here.
    list_display = ["guideline", "number", "author", "created_at"]
    readonly_fields = ["guideline", "number", "body", "hard_cases", "change_note", "author"]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False
