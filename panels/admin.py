from __future__ import annotations

from django.contrib import admin

from panels.models import Expert, Membership, Panel, SupervisorAction


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


@admin.register(SupervisorAction)
class SupervisorActionAdmin(admin.ModelAdmin):
    list_display = ["created_at", "action", "panel", "actor", "expert"]
    list_filter = ["action", "panel"]

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False  # an audit log is append-only
