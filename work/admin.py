from __future__ import annotations

from django.contrib import admin

from work.models import Assignment, Estimate, EstimateRevision, Triple


@admin.register(Triple)
class TripleAdmin(admin.ModelAdmin):
    list_display = ["id", "answer", "criterion", "group", "panel", "required_overlap"]
    list_filter = ["group", "panel"]
    raw_id_fields = ["answer", "criterion", "rubric"]
    show_full_result_count = False


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["id", "expert", "answer", "panel", "kind", "status", "reserved_until"]
    list_filter = ["status", "kind", "panel"]
    raw_id_fields = ["answer"]
    # Who holds the work changes only through the reassign service, which moves the estimates'
    # expert with it (Estimate.expert is a copy with no database constraint of its own).
    readonly_fields = ["expert"]
    show_full_result_count = False


class RevisionInline(admin.TabularInline):
    model = EstimateRevision
    extra = 0
    readonly_fields = ["revision", "score", "is_na", "rationale", "changed_by", "changed_at"]


@admin.register(Estimate)
class EstimateAdmin(admin.ModelAdmin):
    list_display = ["id", "triple", "expert", "slot", "status", "score", "is_na"]
    list_filter = ["status"]
    raw_id_fields = ["triple", "assignment", "rubric"]
    readonly_fields = ["expert"]  # always the assignment's expert (see the model field)
    inlines = [RevisionInline]
    show_full_result_count = False
