"""Submission pages: the participant's page (his submissions, the boards he may submit to),
the upload, one submission (progress, private result, publication), the admins' decisions,
the public inputs, and the participants' registration and approval. Thin: services.py holds
the rules."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from leaderboards import versions
from leaderboards.models import BoardVersion, Leaderboard
from lib.uploads import upload_spooled
from lib.xlsx import workbook_bytes
from panels.access import allowed, get_object_for, require
from participants.models import Participant
from submissions import endpoints, selectors, services
from submissions.models import State, Submission


class ModelMetadataForm(forms.Form):
    """What every submission says of its model."""

    model_name = forms.CharField(label=gettext_lazy("Model name"), max_length=150)
    model_version = forms.CharField(label=gettext_lazy("Model version"), max_length=60)
    parameters = forms.CharField(
        label=gettext_lazy("Parameters"),
        max_length=100,
        help_text=gettext_lazy("The model's size, e.g. 7B."),
    )


class UploadForm(ModelMetadataForm):
    field_order = ["file", "model_name", "model_version", "parameters"]

    file = forms.FileField(
        label=gettext_lazy("Answers file (CSV, JSONL, XLSX or Parquet)"),
        help_text=gettext_lazy(
            "Columns <code>instruction_id</code> and <code>answer</code>: one row per instruction."
        ),
    )
    inference_settings = forms.CharField(
        label=gettext_lazy("Inference settings (JSON)"),
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=gettext_lazy(
            'For example <code>{"temperature": 0, "max_new_tokens": 1024}</code>.'
        ),
    )
    gpus = forms.CharField(
        label=gettext_lazy("GPUs used"),
        max_length=200,
        help_text=gettext_lazy("e.g. 1× H100 80GB"),
    )
    logs = forms.CharField(
        label=gettext_lazy("Generation logs"),
        max_length=services.MAX_LOGS_CHARS,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=gettext_lazy("A link to the logs, or their text."),
    )

    def clean_inference_settings(self) -> dict[str, Any]:
        try:
            return services.parse_settings(self.cleaned_data["inference_settings"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if upload.size > settings.SUBMISSION_MAX_BYTES:
            raise forms.ValidationError(
                _("The file has %(size)s bytes; at most %(max)s are allowed.")
                % {"size": upload.size, "max": settings.SUBMISSION_MAX_BYTES}
            )
        return upload

    def metadata(self) -> services.Metadata:
        data = self.cleaned_data
        return services.Metadata(
            model_name=data["model_name"].strip(),
            model_version=data["model_version"].strip(),
            parameters=data["parameters"].strip(),
            gpus=data["gpus"].strip(),
            logs=data["logs"],
            inference_settings=data["inference_settings"],
        )


class EndpointForm(ModelMetadataForm):
    """A closed test's submission: the model's endpoint instead of a file."""

    endpoint = forms.CharField(
        label=gettext_lazy("Endpoint (base URL of an OpenAI-compatible API)"),
        max_length=500,
        help_text=gettext_lazy("e.g. <code>https://api.example.org/v1</code>"),
        widget=forms.URLInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    endpoint_model = forms.CharField(
        label=gettext_lazy("Model name at the endpoint"),
        max_length=200,
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    api_key = forms.CharField(
        label=gettext_lazy("API key"),
        max_length=endpoints.MAX_KEY_CHARS,
        required=False,
        strip=True,
        help_text=gettext_lazy(
            "Stored encrypted, used only by the worker that calls your endpoint, never shown "
            "again and deleted when the generation ends. Leave empty if the endpoint needs none."
        ),
        # Never rendered back, not even after an error.
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )

    def metadata(self) -> services.Metadata:
        data = self.cleaned_data
        return services.Metadata(
            model_name=data["model_name"].strip(),
            model_version=data["model_version"].strip(),
            parameters=data["parameters"].strip(),
            # Not the participant's to say: the platform generates (the page shows the endpoint).
            gpus="",
            logs="",
        )

    def endpoint_given(self) -> endpoints.Endpoint:
        data = self.cleaned_data
        return endpoints.Endpoint(
            url=data["endpoint"].strip(),
            model=data["endpoint_model"].strip(),
            api_key=data["api_key"],
        )


class DecideForm(forms.Form):
    decision = forms.ChoiceField(
        label=gettext_lazy("Decision"),
        choices=[("approve", gettext_lazy("Approve")), ("reject", gettext_lazy("Reject"))],
    )
    reason = forms.CharField(label=gettext_lazy("Reason"), max_length=1000, required=False)


class RegisterForm(UserCreationForm):
    email = forms.EmailField(label=gettext_lazy("E-mail"))
    organisation = forms.CharField(label=gettext_lazy("Team or organisation"), max_length=200)


# --- the participant's page and the admins' list ---------------------------------------------


@login_required
@require_GET
def submission_list(request: HttpRequest) -> HttpResponse:
    require(request.user, "submissions.view_submissions")
    manage = allowed(request.user, "submissions.manage_submissions")
    qs = selectors.submissions_for(request.user)
    state = request.GET.get("state", "")
    if state in State.values:
        qs = qs.filter(state=state)
    context = {
        "submissions": qs[:500],
        "boards": selectors.open_boards(request.user),
        "manage": manage,
        "states": State.choices,
        "state": state,
        "requested": selectors.submissions_for(request.user).filter(state=State.REQUESTED).count()
        if manage
        else 0,
        "pending_participants": Participant.objects.filter(approved=False).count()
        if allowed(request.user, "participants.manage_participants")
        else 0,
    }
    return render(request, "submissions/list.html", context)


def _board_to_submit(request: HttpRequest, slug: str) -> Leaderboard:
    return get_object_for(
        request.user,
        "submissions.submit_to",
        Leaderboard,
        role="submissions.view_submissions",
        slug=slug,
    )


def _version(request: HttpRequest, board: Leaderboard) -> BoardVersion | HttpResponse:
    """The version asked for by `?version=N` (the board's current one when none), a 400
    naming the parameter for a number that is not one, a 404 for one the board lacks."""
    try:
        version = versions.version_pick(board, request.GET.get("version"))
    except ValueError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    if version is None:
        raise Http404
    return version


@login_required
@require_http_methods(["GET", "POST"])
def submission_new(request: HttpRequest, slug: str) -> HttpResponse:
    """The upload page of an open version, the endpoint page of a closed test."""
    board = _board_to_submit(request, slug)
    version = _version(request, board)
    if isinstance(version, HttpResponse):
        return version
    participant = selectors.participant_of(request.user)
    assert participant is not None  # submissions.submit_to holds only for approved participants
    context: dict[str, Any] = {
        "board": board,
        "version": version,
        "current": versions.version_latest(board),
        "today": services.uploads_today(participant, board),
    }
    if version.closed:
        endpoint_form = EndpointForm(request.POST or None)

        def store_endpoint() -> Submission:
            return endpoints.endpoint_submit(
                participant=participant,
                board=board,
                version=version,
                endpoint=endpoint_form.endpoint_given(),
                meta=endpoint_form.metadata(),
                actor=request.user,
            )

        context["fixed"] = endpoints.generation_settings(version)
        return _submit_page(
            request,
            endpoint_form,
            store_endpoint,
            _("Submission stored; your endpoint is being asked."),
            "submissions/new_endpoint.html",
            context,
        )
    upload_form = UploadForm(request.POST or None, request.FILES or None)

    def store_file() -> Submission:
        upload = upload_form.cleaned_data["file"]
        with upload_spooled(upload) as path:
            return services.submission_upload(
                participant=participant,
                board=board,
                path=path,
                file_name=upload.name or "",
                meta=upload_form.metadata(),
                actor=request.user,
                version=version,
            )

    context["max_bytes"] = settings.SUBMISSION_MAX_BYTES
    return _submit_page(
        request,
        upload_form,
        store_file,
        _("Submission stored; scoring has started."),
        "submissions/new.html",
        context,
    )


def _submit_page(
    request: HttpRequest,
    form: forms.Form,
    store: Callable[[], Submission],
    stored: str,
    template: str,
    context: dict[str, Any],
) -> HttpResponse:
    """A submission form's page: on a valid POST the submission stored (to its page) or the
    service's refusal listed (nothing stored); an invalid form names its fields (400)."""
    errors: list[Any] = []
    status = 200
    if request.method == "POST":
        if not form.is_valid():
            status = 400
        else:
            try:
                submission = store()
            except services.SubmissionRefused as refused:
                errors, status = refused.errors, refused.status
            else:
                messages.success(request, stored)
                return redirect("submission", pk=submission.pk)
    return render(request, template, {**context, "form": form, "errors": errors}, status=status)


def _submission(request: HttpRequest, pk: int) -> Submission:
    return get_object_for(
        request.user,
        "submissions.view_submission",
        Submission.objects.select_related(
            "leaderboard", "version", "participant__user", "judge_run", "generation_run"
        ),
        role="submissions.view_submissions",
        pk=pk,
    )


@login_required
@require_GET
def submission_page(request: HttpRequest, pk: int) -> HttpResponse:
    submission = endpoints.endpoint_refresh(_submission(request, pk))
    submission = services.submission_refresh(submission)
    manage = allowed(request.user, "submissions.manage_submissions")
    context = {
        "submission": submission,
        "run": submission.judge_run,
        "generation": submission.generation_run,
        "can_cancel": submission.state == State.GENERATING
        and allowed(request.user, "submissions.cancel_generation", submission),
        "events": submission.events.select_related("actor"),
        "manage": manage,
        "can_request": submission.state == State.SCORED
        and allowed(request.user, "submissions.request_publication", submission),
        "decide_form": DecideForm() if manage and submission.state == State.REQUESTED else None,
    }
    template = (
        "submissions/_status.html" if request.headers.get("HX-Request") else "submissions/page.html"
    )
    return render(request, template, context)


def _act(request: HttpRequest, pk: int, perm: str, action: Any) -> HttpResponse:
    submission = _submission(request, pk)
    require(request.user, perm, submission)
    try:
        action(submission)
    except services.StateError as exc:
        return HttpResponse(str(exc), status=409)
    return redirect("submission", pk=submission.pk)


@login_required
@require_POST
def submission_request(request: HttpRequest, pk: int) -> HttpResponse:
    def act(s: Submission) -> None:
        services.publication_request(s, actor=request.user)
        messages.success(request, _("Publication requested: an admin will decide."))

    return _act(request, pk, "submissions.request_publication", act)


@login_required
@require_POST
def submission_decide(request: HttpRequest, pk: int) -> HttpResponse:
    form = DecideForm(request.POST)

    def act(s: Submission) -> None:
        if not form.is_valid():
            raise services.StateError(_("Choose approve or reject."))
        approve = form.cleaned_data["decision"] == "approve"
        services.publication_decide(
            s, approve=approve, reason=form.cleaned_data["reason"], actor=request.user
        )
        messages.success(request, _("Published.") if approve else _("Rejected."))

    return _act(request, pk, "submissions.manage_submissions", act)


@login_required
@require_POST
def submission_rescore(request: HttpRequest, pk: int) -> HttpResponse:
    def act(s: Submission) -> None:
        services.scoring_retry(s, actor=request.user)
        messages.info(request, _("Scoring again."))

    return _act(request, pk, "submissions.manage_submissions", act)


@login_required
@require_POST
def submission_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    def act(s: Submission) -> None:
        endpoints.endpoint_cancel(s, actor=request.user)
        messages.info(request, _("Generation cancelled; the key is deleted."))

    return _act(request, pk, "submissions.cancel_generation", act)


@login_required
@require_POST
def submission_send(request: HttpRequest, pk: int) -> HttpResponse:
    def act(s: Submission) -> None:
        sent = services.send_to_panels(s, actor=request.user)
        messages.success(
            request,
            _("%(n)s answers are now material of the panels; build assignments to give them out.")
            % {"n": sent},
        )

    return _act(request, pk, "submissions.manage_submissions", act)


# --- the public inputs ----------------------------------------------------------------------


@login_required
@require_GET
def inputs_download(request: HttpRequest, slug: str, fmt: str) -> HttpResponse:
    board = get_object_for(
        request.user,
        "submissions.download_inputs",
        Leaderboard,
        role="submissions.view_submissions",
        slug=slug,
    )
    if fmt not in ("jsonl", "xlsx"):
        raise Http404
    version = _version(request, board)
    if isinstance(version, HttpResponse):
        return version
    # A closed test's inputs: the admins' only.
    require(request.user, "submissions.download_version_inputs", version)
    rows = services.public_inputs(version)
    if fmt == "jsonl":
        body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        response = HttpResponse(body.encode(), content_type="application/jsonl; charset=utf-8")
    else:
        # The workbook's text cells are never formulas (lib.xlsx), and the instructions keep
        # their exact text (a CSV would have to alter a formula-like one).
        table = pa.Table.from_pylist(
            rows, schema=pa.schema([(f, pa.string()) for f in services.INPUT_FIELDS])
        )
        response = HttpResponse(
            workbook_bytes({"inputs": table}),
            content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        )
    name = f"{board.slug}-v{version.number}-inputs.{fmt}"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


# --- participants ---------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def participant_register(request: HttpRequest) -> HttpResponse:
    """Anyone may ask to take part; an admin approves the account before it can submit."""
    if request.user.is_authenticated:
        return redirect("submissions")
    form = RegisterForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            with transaction.atomic():
                user = form.save(commit=False)
                user.email = form.cleaned_data["email"]
                # Inactive until an admin approves: a stranger's account reads nothing that
                # needs a login (internal boards are for vetted users).
                user.is_active = False
                user.save()
                Participant.objects.create(
                    user=user, organisation=form.cleaned_data["organisation"], approved=False
                )
            return render(request, "submissions/registered.html", {"username": user.username})
        return render(request, "submissions/register.html", {"form": form}, status=400)
    return render(request, "submissions/register.html", {"form": form})


@login_required
@require_GET
def participant_list(request: HttpRequest) -> HttpResponse:
    require(request.user, "participants.manage_participants")
    participants = Participant.objects.select_related("user").order_by("approved", "-created_at")
    return render(request, "submissions/participants.html", {"participants": participants})


@login_required
@require_POST
def participant_approve(request: HttpRequest, pk: int) -> HttpResponse:
    require(request.user, "participants.manage_participants")
    participant = get_object_or_404(Participant, pk=pk)
    approve = request.POST.get("approved", "1") == "1"
    with transaction.atomic():
        Participant.objects.filter(pk=participant.pk).update(approved=approve)
        if approve:
            # A self-registered account is inactive until its first approval.
            type(participant.user).objects.filter(pk=participant.user_id).update(is_active=True)
    if approve:
        messages.success(request, _("%(name)s may submit now.") % {"name": participant})
    else:
        messages.info(request, _("%(name)s may no longer submit.") % {"name": participant})
    return redirect("participants")
