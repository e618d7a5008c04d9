from __future__ import annotations

from django.contrib import admin

from authoring.models import (
    BaselineAnswer,
    Campaign,
    OriginalityCheck,
    PlanVersion,
    ReferenceCorpus,
    Review,
    Revision,
    Slot,
)


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ("name", "double_review_share", "created_at")


@admin.register(PlanVersion)
class PlanVersionAdmin(admin.ModelAdmin):
    list_display = ("campaign", "number", "note", "created_at")


@admin.register(Slot)
class SlotAdmin(admin.ModelAdmin):
    list_display = ("pk", "campaign", "panel", "task", "complexity", "author", "state", "round")
    list_filter = ("state", "complexity", "panel")
    raw_id_fields = ("author", "instruction", "task")


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin):
    list_display = ("slot", "round", "reviewer", "verdict", "created_at")


@admin.register(Revision)
class RevisionAdmin(admin.ModelAdmin):
    list_display = ("slot", "number", "kind", "by", "created_at")


@admin.register(OriginalityCheck)
class OriginalityCheckAdmin(admin.ModelAdmin):
    list_display = ("slot", "checked_at", "compared", "verdict")


@admin.register(ReferenceCorpus)
class ReferenceCorpusAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")


@admin.register(BaselineAnswer)
class BaselineAnswerAdmin(admin.ModelAdmin):
    list_display = ("instruction", "expert", "panel", "state")
    raw_id_fields = ("instruction", "answer")
