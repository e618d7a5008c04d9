from __future__ import annotations

from django.contrib import admin

from quality.models import (
    ControlItem,
    ControlSettings,
    Exam,
    ExamAttempt,
    ExamItem,
    ReferenceScore,
)


@admin.register(ReferenceScore)
class ReferenceScoreAdmin(admin.ModelAdmin):
    list_display = ["item", "answer", "criterion", "panel", "score", "is_na"]
    list_filter = ["panel"]
    raw_id_fields = ["item", "answer", "criterion"]


class ExamItemInline(admin.TabularInline):
    model = ExamItem
    extra = 0
    raw_id_fields = ["answer"]


@admin.register(Exam)
class ExamAdmin(admin.ModelAdmin):
    list_display = ["title", "panel", "version", "is_active", "pass_threshold", "tolerance"]
    list_filter = ["panel", "is_active"]
    inlines = [ExamItemInline]


@admin.register(ExamAttempt)
class ExamAttemptAdmin(admin.ModelAdmin):
    list_display = ["expert", "exam", "number", "mode", "coefficient", "passed", "override_passed"]
    raw_id_fields = ["expert", "exam", "override_by"]
    # Verdicts change through the console's override (which records who and why), not here; the
    # mode is the one the attempt was taken in.
    readonly_fields = [
        "mode",
        "coefficient",
        "n_matched",
        "n_total",
        "passed",
        "override_passed",
        "override_reason",
        "override_by",
        "override_at",
    ]


@admin.register(ControlSettings)
class ControlSettingsAdmin(admin.ModelAdmin):
    list_display = ["panel", "enabled", "rate", "accuracy_threshold", "min_items"]


@admin.register(ControlItem)
class ControlItemAdmin(admin.ModelAdmin):
    list_display = ["answer", "pair", "panel", "is_active", "created_at"]
    raw_id_fields = ["answer", "pair"]
