from __future__ import annotations

from django.contrib import admin

from generation.models import Generation, GenerationConfig, GenerationRun


@admin.register(GenerationConfig)
class GenerationConfigAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "model", "backend", "temperature", "max_new_tokens")
    # A generation's fields only (the purpose is the proxy's; the rest is a judge's).
    exclude = ("purpose", "model_family", "prompt_template", "decoding")


@admin.register(GenerationRun)
class GenerationRunAdmin(admin.ModelAdmin):
    list_display = ("pk", "config", "status", "done", "total", "truncated", "failed")


@admin.register(Generation)
class GenerationAdmin(admin.ModelAdmin):
    list_display = ("run", "instruction", "outcome", "generated_tokens", "seconds")
    raw_id_fields = ("instruction", "answer")
