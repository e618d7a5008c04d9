from __future__ import annotations

from django.contrib import admin

from dataset.models import TripleAggregate


@admin.register(TripleAggregate)
class TripleAggregateAdmin(admin.ModelAdmin):
    list_display = ["triple", "n_estimates", "mean", "mode", "confidence", "excluded_reason"]
    raw_id_fields = ["triple", "job"]
    show_full_result_count = False
