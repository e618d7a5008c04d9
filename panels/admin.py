from __future__ import annotations

from django.contrib import admin

from panels.models import (
    ControlItem,
    ControlSettings,
    Exam,
    ExamAttempt,
    ExamItem,
    Expert,
    Membership,
    Panel,
    SupervisorAction,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["expert"]


@admin.register(Panel)
class PanelAdmin(admin.ModelAdmin):
    list_display = ["number", "key", "name_en", "criterion_groups"]
    filter_horizontal = ["tasks", "styles", "supervisors"]
    inlines = [MembershipInline]


@admin.register(Expert)
class ExpertAdmin(admin.ModelAdmin):
    list_display = ["pseudonym", "user", "profession", "region"]
    list_filter = ["panels", "memberships__is_paused"]
    search_fields = ["pseudonym", "user__username", "profession"]
    raw_id_fields = ["user"]


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
    list_display = ["expert", "exam", "number", "coefficient", "passed", "override_passed"]
    raw_id_fields = ["expert", "exam", "override_by"]
    # Verdicts change through the console's override (which records who and why), not here.
    readonly_fields = [
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
    list_display = ["answer", "panel", "is_active", "created_at"]
    raw_id_fields = ["answer"]


@admin.register(SupervisorAction)
class SupervisorActionAdmin(admin.ModelAdmin):
    list_display = ["created_at", "action", "panel", "actor", "expert"]
    list_filter = ["action", "panel"]

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False  # an audit log is append-only
