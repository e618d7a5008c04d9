"""The admin page of answer pairs: upload a file of pairs, make pairs, watch the jobs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from jobs.models import Job, JobKind, JobStatus
from material.import_common import EXTENSIONS, RowError
from material.pairing import pairs_make_job_create
from material.pairs import pairs_upload
from material.views import HtmxHttpRequest
from panels.access import require

PAIR_KINDS = (JobKind.PAIR_IMPORT, JobKind.PAIR_MAKE)


def _require_pairs(request: HttpRequest) -> None:
    require(request.user, "material.manage_pairs")


class PairFileForm(forms.Form):
    file = forms.FileField(
        label=gettext_lazy("File"),
        help_text=gettext_lazy("CSV or JSON lines in UTF-8, XLSX or Parquet."),
    )

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if Path(upload.name).suffix.lower() not in EXTENSIONS:
            raise forms.ValidationError(_("Use a .csv, .jsonl, .xlsx or .parquet file."))
        if upload.size > settings.IMPORT_MAX_BYTES:
            raise forms.ValidationError(
                _("The file is larger than %s.") % filesizeformat(settings.IMPORT_MAX_BYTES)
            )
        return upload


class MakePairsForm(forms.Form):
    scheme = forms.ChoiceField(
        label=gettext_lazy("Scheme"),
        choices=[
            ("random", gettext_lazy("One random pair per instruction (as REPA)")),
            ("all", gettext_lazy("Every pair of models per instruction")),
        ],
        initial="random",
    )
    seed = forms.IntegerField(
        label=gettext_lazy("Seed"),
        required=False,
        min_value=0,
        max_value=2**63 - 1,
        help_text=gettext_lazy("Leave empty for a random one; the job records it."),
    )


def _page(
    request: HttpRequest,
    *,
    file_form: PairFileForm | None = None,
    make_form: MakePairsForm | None = None,
    file_errors: list[RowError] | None = None,
    status: int = 200,
) -> HttpResponse:
    jobs = Job.objects.filter(kind__in=PAIR_KINDS).select_related("created_by")[:20]
    context = {
        "file_form": file_form or PairFileForm(),
        "make_form": make_form or MakePairsForm(),
        "file_errors": file_errors or [],
        "jobs": jobs,
    }
    return render(request, "material/pairs.html", context, status=status)


@login_required
@require_GET
def pairs_page(request: HttpRequest) -> HttpResponse:
    _require_pairs(request)
    return _page(request)


@login_required
@require_POST
def pairs_import_view(request: HttpRequest) -> HttpResponse:
    _require_pairs(request)
    form = PairFileForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page(request, file_form=form, status=400)
    upload = pairs_upload(
        upload=form.cleaned_data["file"], user_id=request.user.pk, language=request.LANGUAGE_CODE
    )
    if upload.job is None:
        # The file cannot be read or lacks a column: refused at once, nothing queued.
        return _page(request, file_form=form, file_errors=upload.errors, status=422)
    return redirect("material_pairs_job", pk=upload.job.pk)


@login_required
@require_POST
def pairs_make_view(request: HttpRequest) -> HttpResponse:
    _require_pairs(request)
    form = MakePairsForm(request.POST)
    if not form.is_valid():
        return _page(request, make_form=form, status=400)
    job = pairs_make_job_create(
        scheme=form.cleaned_data["scheme"], seed=form.cleaned_data["seed"], user_id=request.user.pk
    )
    return redirect("material_pairs_job", pk=job.pk)


@login_required
@require_GET
def pairs_job(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    _require_pairs(request)
    job = get_object_or_404(Job, pk=pk, kind__in=PAIR_KINDS)
    finished = job.status in (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)
    report = job.result or {}
    context = {"job": job, "finished": finished, "report": report}
    template = "material/pairs_job.html"
    status = 200
    if request.htmx:
        # The polled region: htmx swaps only a 2xx answer in, so it stays 200.
        template += "#progress"
    elif job.status == JobStatus.FAILED and report.get("errors"):
        # A file with wrong rows: its page says so with the errors.
        status = 422
    return render(request, template, context, status=status)
