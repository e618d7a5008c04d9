from __future__ import annotations

from django.contrib import admin

from panels.models import Expert, Membership, Panel


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
    list_display = ["pseudonym", "user", "profession", "region", "is_paused"]
    list_filter = ["is_paused", "panels"]
    search_fields = ["pseudonym", "user__username", "profession"]
    raw_id_fields = ["user"]
