"""Markup files in and out (admins, markup.rules): upload contest JSON or inline markups; download
the submitted markups as XLSX, a .zip of Parquet tables, or a .zip of contest JSON files."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods

from lib.arrow import parquet_zip_bytes
from lib.xlsx import workbook_bytes
from markup import files
from markup.models import MarkupSource
from panels.access import require
from protocol.markup_classifier import available_classifiers


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one field (the pattern of Django's file-upload documentation)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> Any:
        single = super().clean
        if isinstance(data, list | tuple):
            if not data and self.required:
                # An empty list would pass the per-file check: "no file" is refused here.
                raise forms.ValidationError(self.error_messages["required"], code="required")
            return [single(d, initial) for d in data]
        return [single(data, initial)]


def _classifier_choices() -> list[tuple[str, str]]:
    return [(f"{name}:{version}", f"{name} {version}") for name, version in available_classifiers()]


class MarkupImportForm(forms.Form):
    markup_files = MultipleFileField(
        label=gettext_lazy("Files"),
        help_text=gettext_lazy(
            "Contest JSON (.json) or inline markup (any other extension), UTF-8; one markup per "
            "file; up to 100 files, 20 MB."
        ),
    )
    source = forms.ChoiceField(
        label=gettext_lazy("Source"), choices=MarkupSource.choices, initial=MarkupSource.EXPERT
    )
    author = forms.CharField(
        label=gettext_lazy("Author"),
        required=False,
        max_length=120,
        help_text=gettext_lazy("Leave empty to take each file's expert field."),
    )
    classifier = forms.ChoiceField(
        label=gettext_lazy("Classifier"), choices=_classifier_choices, initial="prochtenie:2020"
    )


@login_required
@require_http_methods(["GET", "POST"])
def import_page(request: HttpRequest) -> HttpResponse:
    require(request.user, "markup.import_markups")
    form = MarkupImportForm(request.POST or None, request.FILES or None)
    report: files.ImportReport | None = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            name, version = data["classifier"].split(":", 1)
            report = files.markups_import(
                [(f.name, f.read()) for f in data["markup_files"]],
                source=data["source"],
                author=data["author"].strip(),
                classifier_name=name,
                classifier_version=version,
            )
            if not report.errors:
                messages.success(request, _("%(n)d markups imported.") % {"n": len(report.stored)})
                if not report.notes:
                    return redirect("markup_texts")
            else:
                status = 422
        else:
            status = 400
    context = {"form": form, "report": report}
    return render(request, "markup/import.html", context, status=status)


DOWNLOADS = {
    "xlsx": ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx"),
    "parquet": ("application/zip", "zip"),
    "json": ("application/zip", "zip"),
}


@login_required
@require_GET
def export(request: HttpRequest, fmt: str) -> HttpResponse:
    require(request.user, "markup.export_markups")
    if fmt not in DOWNLOADS:
        raise Http404
    content_type, extension = DOWNLOADS[fmt]
    if fmt == "json":
        body = files.markups_contest_zip()
        name = f"markups-json.{extension}"
    else:
        tables = files.markup_tables()
        body = workbook_bytes(tables, files.README) if fmt == "xlsx" else parquet_zip_bytes(tables)
        name = f"markups.{extension}"
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
