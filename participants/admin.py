from __future__ import annotations

from django.contrib import admin

from participants.models import Participant


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    list_display = ["user", "organisation", "approved", "created_at"]
    list_filter = ["approved"]
    search_fields = ["user__username", "organisation"]
    raw_id_fields = ["user"]
