"""Dataset page (admins): start an aggregation or export job, watch its progress, download."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods

from dataset.tasks import dataset_job_create
from jobs.models import Job, JobKind, JobStatus
from panels.access import require

PAGE = "dataset/dataset.html"


def _require_admin(request: HttpRequest) -> None:
    # First line of every view here: only admins see or start dataset jobs.
    require(request.user, "dataset.export_dataset")


class DatasetJobForm(forms.Form):
    kind = forms.ChoiceField(
        label=_("Job"),
        choices=[
            (JobKind.EXPORT.value, _("Export the dataset")),
            (JobKind.AGGREGATE.value, _("Aggregate and report agreement")),
        ],
        initial=JobKind.EXPORT.value,
    )
    format = forms.ChoiceField(
        label=_("Format"),
        choices=[("xlsx", "Excel (xlsx)"), ("parquet", "Parquet (zip)")],
        initial="xlsx",
        required=False,
    )
    drop_invalid_rationale = forms.BooleanField(
        label=_("Drop estimates whose rationale breaks the rules"), initial=True, required=False
    )
    drop_after_critical = forms.BooleanField(
        label=_("Drop an answer's other triples after a critical-violation vote"),
        initial=True,
        required=False,
    )
    min_estimates = forms.IntegerField(
        label=_("Fewest estimates a triple needs"), initial=2, min_value=1, max_value=10
    )

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if data.get("kind") == JobKind.EXPORT and not data.get("format"):
            self.add_error("format", _("Choose a format."))
        return data


def _jobs() -> list[Job]:
    return list(
        Job.objects.filter(kind__in=[JobKind.EXPORT, JobKind.AGGREGATE])
        .select_related("created_by")
        .order_by("-created_at")[:50]
    )


@login_required
@require_http_methods(["GET", "POST"])
def dataset_page(request: HttpRequest) -> HttpResponse:
    _require_admin(request)
    form = DatasetJobForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            params = {
                "drop_invalid_rationale": data["drop_invalid_rationale"],
                "drop_after_critical": data["drop_after_critical"],
                "min_estimates": data["min_estimates"],
            }
            if data["kind"] == JobKind.EXPORT:
                params["format"] = data["format"]
            dataset_job_create(kind=data["kind"], user=request.user, params=params)
            return redirect("dataset")
        status = HTTPStatus.BAD_REQUEST
    else:
        status = HTTPStatus.OK
    return render(request, PAGE, {"form": form, "jobs": _jobs()}, status=status)


@login_required
def dataset_job(request: HttpRequest, pk: int) -> HttpResponse:
    """One job's row: htmx polls it while the job runs."""
    _require_admin(request)
    job = get_object_or_404(Job, pk=pk, kind__in=[JobKind.EXPORT, JobKind.AGGREGATE])
    return render(request, PAGE + "#job-row", {"job": job})


@login_required
def dataset_download(request: HttpRequest, pk: int) -> FileResponse:
    _require_admin(request)
    job = get_object_or_404(Job, pk=pk, kind=JobKind.EXPORT, status=JobStatus.DONE)
    if not job.file_path:
        raise Http404
    root = Path(settings.PRIVATE_STORAGE_ROOT).resolve()
    path = (root / job.file_path).resolve()
    # file_path is ours, but never serve anything outside the private root.
    if root not in path.parents or not path.is_file():
        raise Http404
    return FileResponse(path.open("rb"), as_attachment=True, filename=path.name)
