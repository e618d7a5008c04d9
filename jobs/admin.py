from __future__ import annotations

from django.contrib import admin

from jobs.models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "kind",
        "status",
        "progress_done",
        "progress_total",
        "attempts",
        "heartbeat_at",
        "claimed_by",
        "created_at",
    ]
    list_filter = ["kind", "status"]
    show_full_result_count = False
