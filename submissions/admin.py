from __future__ import annotations

from django.contrib import admin

from submissions.models import Submission, SubmissionEvent


class EventInline(admin.TabularInline):
    model = SubmissionEvent
    extra = 0
    readonly_fields = ["actor", "old", "new", "note", "at"]


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ["pk", "model_name", "model_version", "participant", "leaderboard", "state"]
    list_filter = ["state", "leaderboard"]
    raw_id_fields = ["participant", "model", "judge_run", "judge_config"]
    inlines = [EventInline]
