from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db import models
from django.http import HttpRequest
from django.utils.translation import gettext as _

from judging import services
from judging.models import JudgeBatch, JudgeConfig, JudgeEstimate, JudgeRun

GENERATION_FIELDS = (
    "model",
    "system_prompt",
    "temperature",
    "top_p",
    "top_k",
    "seed",
    "task_groups",
)


@admin.register(JudgeConfig)
class JudgeConfigAdmin(admin.ModelAdmin):
    """Saving an existing configuration creates its next version; the old row is untouched,
    so estimates made with it still point at what they were made with."""

    list_display = ["name", "version", "backend", "model_path", "endpoint", "created_at"]
    list_filter = ["backend", "name"]
    readonly_fields = ["version", "created_by", "created_at"]
    # A judge's fields only (the purpose is the proxy's; the rest is generation's).
    exclude = ["purpose", "max_new_tokens", *GENERATION_FIELDS]
    save_as = False
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def save_model(self, request: HttpRequest, obj: JudgeConfig, form: Any, change: bool) -> None:
        fields = {f: getattr(obj, f) for f in services.CONFIG_FIELDS}
        saved = services.config_save(name=obj.name, created_by=request.user, **fields)
        if change and saved.pk != obj.pk:
            messages.info(
                request,
                _("Saved as %(config)s (the previous version is kept).") % {"config": saved},
            )
        # The admin redirects to the object it saved: point it at the new version.
        obj.pk = saved.pk
        obj.version = saved.version

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A version with estimates is protected by the database anyway; keep history whole.
        return bool(obj is None or not obj.runs.exists()) and super().has_delete_permission(
            request, obj
        )


@admin.register(JudgeRun)
class JudgeRunAdmin(admin.ModelAdmin):
    list_display = ["id", "config", "backend", "status", "done", "total", "parse_failures"]
    list_filter = ["status", "backend"]
    readonly_fields = [
        "done",
        "total",
        "parse_failures",
        "prompt_tokens",
        "generated_tokens",
        "started_at",
        "finished_at",
    ]
    raw_id_fields = ["config", "created_by"]


@admin.register(JudgeBatch)
class JudgeBatchAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "run",
        "number",
        "job__status",
        "job__attempts",
        "job__claimed_by",
        "job__heartbeat_at",
    ]
    list_filter = ["job__status"]
    list_select_related = ["job"]
    raw_id_fields = ["run", "job"]
    show_full_result_count = False


@admin.register(JudgeEstimate)
class JudgeEstimateAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "triple", "config", "score", "parse_ok", "error"]
    list_filter = ["parse_ok"]
    raw_id_fields = ["run", "triple", "config"]
    show_full_result_count = False
