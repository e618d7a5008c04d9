"""The session API for participants' markup systems (markup.contest): open a run over a sample,
get the next text, return its markup, read the run's report, close it. Authentication: a token
(`Authorization: Token …`), HTTP Basic or the session; the role and the run are checked by
django-rules (markup.rules): another participant's run does not exist (404)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.decorators import api_view, permission_classes
from rest_framework.request import Request
from rest_framework.response import Response

from lib.integers import StrictIntegerField
from markup import contest
from markup.models import MarkupRun, MarkupSample
from panels.access import allowed


class IsParticipant(permissions.BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        return allowed(request.user, "markup.participate")


class Error(serializers.Serializer[Any]):
    field = serializers.CharField()
    error = serializers.CharField()
    annulled = serializers.BooleanField(required=False)
    run = serializers.IntegerField(required=False, allow_null=True)
    issues = serializers.ListField(child=serializers.DictField(), required=False)


class Detail(serializers.Serializer[Any]):
    detail = serializers.CharField()


class SampleOutput(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    mode = serializers.CharField()
    texts = serializers.IntegerField()
    interval_s = serializers.IntegerField()
    deadline_s = serializers.IntegerField()
    max_submissions = serializers.IntegerField()
    annul_limit = serializers.FloatField()
    starts_at = serializers.DateTimeField(allow_null=True)


class ItemOutput(serializers.Serializer[Any]):
    text_id = serializers.IntegerField()
    position = serializers.IntegerField()
    released_at = serializers.DateTimeField()
    deadline_at = serializers.DateTimeField()
    answered_at = serializers.DateTimeField(allow_null=True)
    response_ms = serializers.IntegerField(allow_null=True)
    submissions = serializers.IntegerField()
    annulled = serializers.BooleanField()
    star_term = serializers.FloatField(allow_null=True)


class RunOutput(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    sample = serializers.IntegerField()
    system = serializers.CharField()
    mode = serializers.CharField()
    opened_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)
    texts = serializers.IntegerField()
    released = serializers.IntegerField()
    answered = serializers.IntegerField()
    annulled = serializers.IntegerField()
    annulled_share = serializers.FloatField()
    void = serializers.BooleanField()
    star = serializers.FloatField(allow_null=True)
    scored = serializers.IntegerField()
    items = ItemOutput(many=True)


class OpenInput(serializers.Serializer[Any]):
    sample = StrictIntegerField(min_value=1, max_value=2**31 - 1)
    system = serializers.CharField(max_length=contest.MAX_SYSTEM_CHARS)


class NextOutput(serializers.Serializer[Any]):
    done = serializers.BooleanField()
    next_at = serializers.DateTimeField(allow_null=True)
    text_id = serializers.IntegerField(allow_null=True)
    text = serializers.CharField(allow_null=True)
    meta = serializers.DictField(allow_null=True)
    released_at = serializers.DateTimeField(allow_null=True)
    deadline_at = serializers.DateTimeField(allow_null=True)


class MarkupInput(serializers.Serializer[Any]):
    text_id = StrictIntegerField(min_value=1, max_value=2**31 - 1)
    selections = serializers.ListField(child=serializers.DictField())
    text = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)


class MarkupOutput(serializers.Serializer[Any]):
    text_id = serializers.IntegerField()
    accepted = serializers.BooleanField()
    submissions = serializers.IntegerField()
    response_ms = serializers.IntegerField()


def _refused(error: contest.RunRefused) -> Response:
    return Response(
        {"field": error.field, "error": error.message, **error.extra}, status=error.status
    )


def _own_run(request: Request, pk: int) -> MarkupRun | None:
    run = MarkupRun.objects.select_related("sample", "participant").filter(pk=pk).first()
    return run if run is not None and allowed(request.user, "markup.use_run", run) else None


def _run_data(report: contest.RunReport) -> dict[str, Any]:
    run = report.run
    return {
        "id": run.pk,
        "sample": run.sample_id,
        "system": run.system,
        "mode": run.sample.mode,
        "opened_at": run.opened_at,
        "closed_at": run.closed_at,
        "texts": report.texts,
        "released": report.released,
        "answered": report.answered,
        "annulled": report.annulled,
        "annulled_share": report.annulled_share,
        "void": report.void,
        "star": report.star,
        "scored": report.scored,
        "items": [asdict(item) for item in report.items],
    }


NOT_FOUND = {"detail": "Not found."}
COMMON = {403: Detail, 404: Detail}


@extend_schema(responses={200: SampleOutput(many=True), 403: Detail})
@api_view(["GET"])
@permission_classes([IsParticipant])
def samples(request: Request) -> Response:
    """The samples open for runs, with their rules."""
    rows = []
    for sample in MarkupSample.objects.filter(is_open=True).order_by("pk"):
        rows.append(
            {
                "id": sample.pk,
                "name": sample.name,
                "mode": sample.mode,
                "texts": sample.entries.count(),
                "interval_s": sample.interval_s,
                "deadline_s": sample.deadline_s,
                "max_submissions": sample.max_submissions,
                "annul_limit": sample.annul_limit,
                "starts_at": sample.starts_at,
            }
        )
    return Response(SampleOutput(rows, many=True).data)


@extend_schema(
    methods=["GET"], responses={200: RunOutput(many=True), 403: Detail}, operation_id="runs_list"
)
@extend_schema(
    methods=["POST"],
    request=OpenInput,
    responses={201: RunOutput, 400: OpenApiTypes.OBJECT, 409: Error, **COMMON},
    operation_id="runs_open",
)
@api_view(["GET", "POST"])
@permission_classes([IsParticipant])
def runs(request: Request) -> Response:
    """GET: your runs with their reports. POST: open a run (a session) over a sample."""
    participant = request.user.participant  # type: ignore[union-attr]
    if request.method == "GET":
        own = MarkupRun.objects.filter(participant=participant).select_related("sample")
        return Response([_run_data(contest.run_report(run)) for run in own])
    form = OpenInput(data=request.data)
    form.is_valid(raise_exception=True)
    sample = MarkupSample.objects.filter(pk=form.validated_data["sample"]).first()
    if sample is None:
        return Response(NOT_FOUND, status=status.HTTP_404_NOT_FOUND)
    try:
        run = contest.run_open(participant, sample, form.validated_data["system"])
    except contest.RunRefused as error:
        return _refused(error)
    return Response(_run_data(contest.run_report(run)), status=status.HTTP_201_CREATED)


@extend_schema(responses={200: RunOutput, **COMMON})
@api_view(["GET"])
@permission_classes([IsParticipant])
def run_detail(request: Request, pk: int) -> Response:
    """The run's report: texts released, answered and annulled, whether it is void, СТАР."""
    run = _own_run(request, pk)
    if run is None:
        return Response(NOT_FOUND, status=status.HTTP_404_NOT_FOUND)
    return Response(_run_data(contest.run_report(run)))


@extend_schema(request=None, responses={200: NextOutput, 409: Error, **COMMON})
@api_view(["POST"])
@permission_classes([IsParticipant])
def run_next(request: Request, pk: int) -> Response:
    """The next text to mark up (pull: released now; paced: the text open now), `done` at the
    end of the sample, or `next_at` when the next text of a schedule opens."""
    run = _own_run(request, pk)
    if run is None:
        return Response(NOT_FOUND, status=status.HTTP_404_NOT_FOUND)
    try:
        result = contest.run_next(run)
    except contest.RunRefused as error:
        return _refused(error)
    item = result.item
    data: dict[str, Any] = {
        "done": result.done,
        "next_at": result.next_at,
        "text_id": None,
        "text": None,
        "meta": None,
        "released_at": None,
        "deadline_at": None,
    }
    if item is not None:
        text = item.text
        data.update(
            text_id=text.pk,
            text=text.text,
            # The task's public description only: never an expert's name or markup.
            meta={
                "subject": text.subject,
                "theme": text.meta.get("theme", ""),
                "taskText": text.meta.get("taskText", ""),
            },
            released_at=item.released_at,
            deadline_at=item.deadline_at,
        )
    return Response(NextOutput(data).data)


@extend_schema(
    request=MarkupInput,
    responses={
        200: MarkupOutput,
        400: OpenApiTypes.OBJECT,
        409: Error,
        422: Error,
        429: Error,
        **COMMON,
    },
)
@api_view(["POST"])
@permission_classes([IsParticipant])
def run_markup(request: Request, pk: int) -> Response:
    """Return the markup of a released text (the contest JSON's `selections`). Late: the text is
    annulled (409); not released to this run: ignored (409); over the cap: 429; breaking the
    classifier's rules: 422 with every issue."""
    run = _own_run(request, pk)
    if run is None:
        return Response(NOT_FOUND, status=status.HTTP_404_NOT_FOUND)
    form = MarkupInput(data=request.data)
    form.is_valid(raise_exception=True)
    payload = dict(form.validated_data)
    try:
        accepted = contest.run_submit(run, payload.pop("text_id"), payload)
    except contest.RunRefused as error:
        return _refused(error)
    item = accepted.item
    return Response(
        {
            "text_id": item.text_id,
            "accepted": True,
            "submissions": item.submissions,
            "response_ms": item.response_ms or 0,
        }
    )


@extend_schema(request=None, responses={200: RunOutput, 409: Error, **COMMON})
@api_view(["POST"])
@permission_classes([IsParticipant])
def run_close(request: Request, pk: int) -> Response:
    """Close the run: texts never released count as annulled from now on."""
    run = _own_run(request, pk)
    if run is None:
        return Response(NOT_FOUND, status=status.HTTP_404_NOT_FOUND)
    try:
        closed = contest.run_close(run)
    except contest.RunRefused as error:
        return _refused(error)
    return Response(_run_data(contest.run_report(closed)))
