"""The admin page that imports material: upload a file, watch the job's progress."""

from __future__ import annotations

from pathlib import Path

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django_htmx.middleware import HtmxDetails

from jobs.models import Job, JobKind, JobStatus
from material.import_common import EXTENSIONS
from material.importing import import_job_create
from panels.access import require


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def _require_importer(request: HttpRequest) -> None:
    require(request.user, "material.import_material")


class ImportForm(forms.Form):
    file = forms.FileField(
        label=gettext_lazy("File"),
        help_text=gettext_lazy("CSV or JSON lines in UTF-8, XLSX or Parquet."),
    )

    def clean_file(self) -> forms.Field:
        upload = self.cleaned_data["file"]
        if Path(upload.name).suffix.lower() not in EXTENSIONS:
            raise forms.ValidationError(_("Use a .csv, .jsonl, .xlsx or .parquet file."))
        if upload.size > settings.IMPORT_MAX_BYTES:
            raise forms.ValidationError(
                _("The file is larger than %s.") % filesizeformat(settings.IMPORT_MAX_BYTES)
            )
        return upload


@login_required
def import_page(request: HttpRequest) -> HttpResponse:
    _require_importer(request)
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            job = import_job_create(
                upload=form.cleaned_data["file"],
                user_id=request.user.pk,
                language=request.LANGUAGE_CODE,
            )
        return redirect("import_job", pk=job.pk)
    jobs = Job.objects.filter(kind=JobKind.IMPORT).select_related("created_by")[:20]
    return render(request, "material/import.html", {"form": form, "jobs": jobs})


@login_required
def import_job(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    _require_importer(request)
    job = get_object_or_404(Job, pk=pk, kind=JobKind.IMPORT)
    context = {
        "job": job,
        "finished": job.status in (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED),
        "report": job.result or {},
    }
    template = "material/import_job.html"
    if request.htmx:
        template += "#progress"
    return render(request, template, context)
