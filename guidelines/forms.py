"""The supervisor's form of a guideline version: text, hard cases, change note and examples."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from guidelines.models import ExampleKind, GuidelineVersion
from guidelines.services import ExampleInput
from lib.integers import StrictIntegerFormField


class GuidelineForm(forms.Form):
    body = forms.CharField(
        label=_("Guideline (markdown)"),
        required=False,
        max_length=50_000,
        widget=forms.Textarea(attrs={"rows": 12}),
    )
    hard_cases = forms.CharField(
        label=_("Mini-instructions for hard cases (markdown)"),
        required=False,
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 6}),
    )
    change_note = forms.CharField(label=_("What changed"), required=False, max_length=300)


class ExampleForm(forms.Form):
    # Every field optional: an example slot left empty (or cleared) is no example.
    kind = forms.ChoiceField(
        label=_("Kind"), required=False, choices=[("", "—"), *ExampleKind.choices]
    )
    text = forms.CharField(
        label=_("Example (markdown)"),
        required=False,
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 3}),
    )
    explanation = forms.CharField(
        label=_("Why (markdown)"),
        required=False,
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    score = StrictIntegerFormField(label=_("Score"), required=False, min_value=-100, max_value=100)

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if (data.get("text") or "").strip() and not data.get("kind"):
            self.add_error("kind", _("Say whether the example is good, bad or hard."))
        return data


ExampleFormSet = forms.formset_factory(ExampleForm, extra=3, max_num=30, validate_max=True)


def example_initial(version: GuidelineVersion | None) -> list[dict[str, object]]:
    if version is None:
        return []
    return [
        {"kind": e.kind, "text": e.text, "explanation": e.explanation, "score": e.score}
        for e in version.examples.order_by("position")
    ]


def examples_from(formset: forms.BaseFormSet) -> list[ExampleInput]:
    """The filled example slots of a valid formset, in order."""
    examples = []
    for data in formset.cleaned_data:
        text = (data.get("text") or "").strip()
        if text:
            examples.append(
                ExampleInput(
                    kind=data["kind"],
                    text=text,
                    explanation=data.get("explanation") or "",
                    score=data.get("score"),
                )
            )
    return examples
