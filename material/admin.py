from __future__ import annotations

from django.contrib import admin

from material.models import Answer, AnswerPair, Instruction, LanguageModel


@admin.register(Instruction)
class InstructionAdmin(admin.ModelAdmin):
    list_display = ["id", "external_id", "task", "style", "complexity"]
    list_filter = ["complexity", "style"]
    search_fields = ["external_id"]
    raw_id_fields = ["task"]
    show_full_result_count = False


@admin.register(LanguageModel)
class LanguageModelAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "provider"]


@admin.register(Answer)
class AnswerAdmin(admin.ModelAdmin):
    list_display = ["id", "external_id", "instruction", "model"]
    list_filter = ["model"]
    search_fields = ["external_id"]
    raw_id_fields = ["instruction"]
    show_full_result_count = False


@admin.register(AnswerPair)
class AnswerPairAdmin(admin.ModelAdmin):
    list_display = ["id", "external_id", "category", "source", "created_at"]
    list_filter = ["category"]
    search_fields = ["external_id"]
    raw_id_fields = ["instruction", "answer_a", "answer_b"]
    show_full_result_count = False
