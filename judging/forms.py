from __future__ import annotations

from typing import Any

from django import forms
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from judge_worker import PAIRWISE_TEMPLATES
from judging.models import JudgeBackendKind, JudgeConfig, RunKind
from judging.pairwise import DEFAULT_SHOTS, DEFAULT_TEMPLATES
from judging.selectors import configs_current
from judging.services import MAX_SHOTS
from material.models import LanguageModel
from panels.models import Panel
from panels.rules import is_admin
from panels.selectors import panels_for_user
from taxonomy.models import Task


class RunStartForm(forms.Form):
    """Start a judge run. Supervisors must pick one of their panels (a model or a task then
    narrows it); admins may also pick a model, a task, or everything."""

    config = forms.ModelChoiceField(queryset=JudgeConfig.objects.none(), label=_("Judge"))
    panel: forms.ModelChoiceField = forms.ModelChoiceField(
        queryset=Panel.objects.none(), required=False, label=_("Panel")
    )
    model = forms.ModelChoiceField(
        queryset=LanguageModel.objects.order_by("name", "version"),
        required=False,
        label=_("Answer model"),
    )
    task = forms.ModelChoiceField(
        queryset=Task.objects.select_related("group", "parent__parent").order_by("position"),
        required=False,
        label=_("Task"),
    )
    all = forms.BooleanField(required=False, label=_("All answers"))
    limit = forms.IntegerField(required=False, min_value=1, label=_("At most this many triples"))
    backend = forms.ChoiceField(
        choices=[("", _("as configured")), *JudgeBackendKind.choices],
        required=False,
        label=_("Backend"),
    )
    # Not required: a form without it (older clients, scripts) starts a pointwise run.
    kind = forms.ChoiceField(
        choices=RunKind.choices, initial=RunKind.POINTWISE, required=False, label=_("Kind")
    )
    templates = forms.MultipleChoiceField(
        # Shown by number ("REPA prompt 1"); the stored value stays the template's name.
        choices=[
            (t, format_lazy("{} {}", _("REPA prompt"), t.rsplit("_", 1)[-1]))
            for t in PAIRWISE_TEMPLATES
        ],
        initial=list(DEFAULT_TEMPLATES),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=_("Side-by-side prompt templates (REPA)"),
    )
    shots = forms.IntegerField(
        min_value=0,
        max_value=MAX_SHOTS,
        initial=DEFAULT_SHOTS,
        required=False,
        label=_("Side-by-side: gold examples in the prompt (0 = zero-shot)"),
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Labels in the active language (the models' __str__ is the English natural key).
        self.fields["panel"].label_from_instance = lambda p: f"{p.number} · {p.name}"  # type: ignore[attr-defined]
        self.fields["task"].label_from_instance = lambda t: t.display_path()  # type: ignore[attr-defined]
        self.user = user
        self.is_admin = bool(is_admin(user))
        current = [c.pk for c in configs_current()]
        self.fields["config"].queryset = JudgeConfig.objects.filter(pk__in=current)  # type: ignore[attr-defined]
        self.fields["panel"].queryset = panels_for_user(user)  # type: ignore[attr-defined]
        if not self.is_admin:
            self.fields["panel"].required = True
            del self.fields["all"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not any(data.get(k) for k in ("panel", "model", "task", "all")):
            raise forms.ValidationError(_("Choose a model, a task, a panel, or all answers."))
        if data.get("kind") == RunKind.PAIRWISE and not data.get("templates"):
            self.add_error("templates", _("Choose at least one prompt template."))
        return data

    def run_options(self) -> dict[str, Any]:
        """The kind-specific arguments of services.run_create."""
        data = self.cleaned_data
        if data.get("kind") != RunKind.PAIRWISE:
            return {"kind": RunKind.POINTWISE}
        shots = data.get("shots")
        return {
            "kind": RunKind.PAIRWISE,
            "templates": list(data["templates"]),
            "shots": DEFAULT_SHOTS if shots is None else shots,
        }

    def scope(self) -> dict[str, Any]:
        data = self.cleaned_data
        if data.get("all"):
            scope: dict[str, Any] = {"all": True}
        else:
            scope = {k: data[k].pk for k in ("panel", "model", "task") if data.get(k)}
        if data.get("limit"):
            scope["limit"] = data["limit"]
        return scope
