"""Forms of the exam pages: an exam's settings, its items, references and verdict overrides.

The gold pairs form also serves the console's control page (console imports quality).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from lib.integers import StrictIntegerFormField
from quality.exams import EXAM_SETTINGS_FIELDS, MAX_GOLD_PAIRS
from quality.models import Exam, ExamMode
from taxonomy.models import CriterionGroup


class ExamForm(forms.ModelForm):
    criterion_groups = forms.MultipleChoiceField(
        choices=CriterionGroup.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=_("Qualifies for criterion groups (none = all)"),
    )
    mode = forms.ChoiceField(
        choices=ExamMode.choices,
        required=False,
        initial=ExamMode.QUALIFYING,
        label=_("Mode (practice shows the references after each item, never qualifies)"),
    )

    class Meta:
        model = Exam
        # The settings the exam service accepts: one list for the form and the service.
        fields = list(EXAM_SETTINGS_FIELDS)
        labels = {
            "title": _("Title"),
            "pass_threshold": _("Pass threshold (0..1)"),
            "tolerance": _("Tolerance on 0..4 scales"),
            "max_attempts": _("Attempts allowed"),
            "retake_wait_hours": _("Hours to wait before a retake"),
            "is_active": _("Open to candidates"),
        }

    def clean_mode(self) -> str:
        # A post without a mode (a script, a saved form) makes the default: a qualifying exam.
        return str(self.cleaned_data.get("mode") or ExamMode.QUALIFYING)

    def clean_pass_threshold(self) -> float:
        value = float(self.cleaned_data["pass_threshold"])
        if not 0 <= value <= 1:
            raise forms.ValidationError(_("Between 0 and 1."))
        return value


class AnswerIdForm(forms.Form):
    answer = forms.CharField(label=_("Answer id or external id"), max_length=128)


class GoldPairsForm(forms.Form):
    n = StrictIntegerFormField(
        label=_("Number of side-by-side pairs"), min_value=1, max_value=MAX_GOLD_PAIRS, initial=5
    )
    seed = StrictIntegerFormField(
        label=_("Seed (optional: the same seed draws the same pairs)"),
        required=False,
        min_value=0,
        max_value=2**63 - 1,
    )


class ImportForm(forms.Form):
    file = forms.FileField(label=_("CSV or XLSX file"))

    def clean_file(self) -> Any:
        f = self.cleaned_data["file"]
        if not f.name.lower().endswith((".csv", ".xlsx")):
            raise forms.ValidationError(_("Upload a .csv or .xlsx file."))
        if f.size > 10 * 1024 * 1024:
            raise forms.ValidationError(_("The file is larger than 10 MB."))
        return f


class OverrideForm(forms.Form):
    passed = forms.TypedChoiceField(
        choices=[("1", _("Passed")), ("0", _("Failed"))],
        coerce=lambda v: v == "1",
        label=_("Verdict"),
    )
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), label=_("Reason"))
