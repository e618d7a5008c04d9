"""Forms of the console (the exam pages' own are in quality.forms)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from lib.integers import StrictIntegerFormField
from quality.models import ControlSettings


class ControlSettingsForm(forms.ModelForm):
    class Meta:
        model = ControlSettings
        fields = ["enabled", "rate", "accuracy_threshold", "min_items", "tolerance"]
        labels = {
            "enabled": _("Mix control items into queues"),
            "rate": _("Control items per work assignment"),
            "accuracy_threshold": _("Pause below this accuracy"),
            "min_items": _("…after at least this many control items"),
            "tolerance": _("Tolerance on 0..4 scales"),
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name in ("rate", "accuracy_threshold"):
            value = data.get(name)
            if value is not None and not 0 <= value <= 1:
                self.add_error(name, _("Between 0 and 1."))
        return data


class NoteForm(forms.Form):
    note = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), label=_("Note"), required=False, max_length=2000
    )


class ReopenForm(forms.Form):
    triple = StrictIntegerFormField(label=_("Triple id"), min_value=1)
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), label=_("Why"))


class LockBatchForm(forms.Form):
    submitted_from = forms.DateField(
        required=False, label=_("Submitted from"), widget=forms.DateInput(attrs={"type": "date"})
    )
    submitted_to = forms.DateField(
        required=False,
        label=_("Submitted before"),
        widget=forms.DateInput(attrs={"type": "date"}),
    )
    task = StrictIntegerFormField(required=False, label=_("Task id (optional)"), min_value=1)
