"""REST API for experts' tools: the same scoring as the web page (DRF, OpenAPI at /api/schema/)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response

from lib.integers import StrictIntegerField
from lib.jsonparser import JSONParser
from material.models import Instruction
from panels.access import allowed
from protocol.rationale import MAX_LENGTH as RATIONALE_MAX_LENGTH
from work import selectors, services
from work.forms import BIGINT_MAX, TIME_SPENT_MAX_MS
from work.models import Assignment


class BoundedLimitOffset(LimitOffsetPagination):
    """Limit and offset are clamped: a huge value must be a client error, never a 500."""

    max_limit = 200

    def get_offset(self, request: Request) -> int:
        return min(super().get_offset(request), 10_000_000)


class IsExpert(permissions.BasePermission):
    """The scoring API is for experts (`work.view_queue`); their own assignments only (the
    queryset: another expert's work does not exist, 404)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return allowed(request.user, "work.view_queue")


def _task_name(instruction: Instruction) -> str:
    # "" for an instruction without a POLLUX task (a query only compared side by side).
    return instruction.task.name if instruction.task is not None else ""


class AssignmentListOutput(serializers.ModelSerializer[Assignment]):
    task = serializers.SerializerMethodField()
    panel = serializers.IntegerField(source="panel.number", read_only=True)
    # A silent control item is reported as work: nothing an expert receives tells gold apart.
    kind = serializers.SerializerMethodField()

    @extend_schema_field(serializers.ChoiceField(choices=["work", "exam"]))
    def get_kind(self, obj: Assignment) -> str:
        return selectors.kind_shown_to_expert(obj.kind)

    def get_task(self, obj: Assignment) -> str:
        return _task_name(obj.answer.instruction)

    class Meta:
        model = Assignment
        fields = ["id", "status", "kind", "task", "panel", "reserved_until", "submitted_at"]


class RubricLevelOutput(serializers.Serializer[Any]):
    value = serializers.IntegerField()
    text = serializers.CharField()


class CriterionOutput(serializers.Serializer[Any]):
    triple_id = serializers.IntegerField()
    key = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    group = serializers.CharField()
    allows_na = serializers.BooleanField()
    levels = RubricLevelOutput(many=True)
    status = serializers.CharField()
    score = serializers.IntegerField(allow_null=True)
    is_na = serializers.BooleanField()
    rationale = serializers.CharField(allow_blank=True)


class AssignmentDetailOutput(serializers.Serializer[Any]):
    """Everything needed to score: never the model's identity, never other experts' scores."""

    id = serializers.IntegerField()
    status = serializers.CharField()
    task = serializers.CharField()
    functional_style = serializers.CharField(allow_null=True)
    complexity = serializers.CharField(allow_blank=True)
    instruction = serializers.CharField()
    reference_answer = serializers.CharField(allow_blank=True)
    answer = serializers.CharField()
    criteria = CriterionOutput(many=True)


# Explicit ranges: a value the database column cannot hold is a 400 naming the field; ASCII
# digits only (StrictIntegerField), as the scoring form reads them.
class ScoreInputSerializer(serializers.Serializer[Any]):
    triple_id = StrictIntegerField(min_value=1, max_value=BIGINT_MAX)
    score = StrictIntegerField(required=False, allow_null=True, min_value=-10, max_value=10)
    is_na = serializers.BooleanField(required=False, default=False)
    rationale = serializers.CharField(
        required=False, allow_blank=True, max_length=RATIONALE_MAX_LENGTH
    )
    time_spent_ms = StrictIntegerField(
        required=False, default=0, min_value=0, max_value=TIME_SPENT_MAX_MS
    )


class SubmitInput(serializers.Serializer[Any]):
    items = ScoreInputSerializer(many=True)
    submission_key = serializers.CharField(required=False, allow_blank=True, max_length=64)
    time_spent_ms = StrictIntegerField(
        required=False, default=0, min_value=0, max_value=TIME_SPENT_MAX_MS
    )


class SubmitOutput(serializers.Serializer[Any]):
    ok = serializers.BooleanField()
    already_submitted = serializers.BooleanField()
    critical_stop = serializers.BooleanField()
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField())
    )
    form_errors = serializers.ListField(child=serializers.CharField())


class ErrorOutput(serializers.Serializer[Any]):
    detail = serializers.CharField()


def _detail(assignment: Assignment) -> dict[str, Any]:
    instruction = assignment.answer.instruction
    # The page's rows (one builder), shaped for JSON: numbers stay numbers.
    criteria = [
        {
            "triple_id": row["triple_id"],
            "key": row["key"],
            "name": row["name"],
            "description": row["desc"],
            "group": row["group"],
            "allows_na": row["allows_na"],
            "levels": [
                {"value": int(level["value"]), "text": level["text"]} for level in row["levels"]
            ],
            "status": row["status"],
            "score": row["score"],
            "is_na": row["is_na"],
            "rationale": row["rationale"],
        }
        for row in selectors.scoring_rows(assignment)
    ]
    return {
        "id": assignment.pk,
        "status": assignment.status,
        "task": _task_name(instruction),
        "functional_style": instruction.style.name if instruction.style else None,
        "complexity": instruction.complexity,
        "instruction": instruction.text,
        "reference_answer": instruction.reference_answer,
        "answer": assignment.answer.text,
        "criteria": criteria,
    }


class AssignmentViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[Assignment]
):
    """The requesting expert's own assignments; anyone else's do not exist (404)."""

    permission_classes = [IsExpert]
    serializer_class = AssignmentListOutput
    pagination_class = BoundedLimitOffset
    # JSON only: a form encoding cannot say "no score" (null) for a nullable integer.
    parser_classes = [JSONParser]

    def get_queryset(self) -> QuerySet[Assignment]:
        if getattr(self, "swagger_fake_view", False):  # schema generation: no user
            return Assignment.objects.none()
        expert = self.request.user.expert  # type: ignore[union-attr]
        qs = selectors.expert_assignments(expert)
        if self.action == "list":
            # The API scores on rubrics: side-by-side work (one assignment per pair) is not
            # listed; asked for by id, it is refused with 409 (see _refusal).
            qs = qs.filter(pair__isnull=True)
        return qs.select_related(
            "answer__instruction__task", "answer__instruction__style", "panel"
        ).order_by("id")

    @staticmethod
    def _refusal(assignment: Assignment) -> Response | None:
        """409 naming the assignment when it is not rubric work (None when it is)."""
        reason = services.not_rubric_work_reason(assignment)
        return Response({"detail": reason}, status=status.HTTP_409_CONFLICT) if reason else None

    @extend_schema(responses={200: AssignmentDetailOutput, 409: ErrorOutput})
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        assignment = self.get_object()
        refused = self._refusal(assignment)
        if refused is not None:
            return refused
        if services.assignment_paused(assignment):
            # Paused in this panel: its answers are not opened until the supervisor resumes.
            return Response(
                {"detail": services.closed_reason(assignment)}, status=status.HTTP_409_CONFLICT
            )
        return Response(AssignmentDetailOutput(_detail(assignment)).data)

    @extend_schema(
        request=SubmitInput,
        responses={
            200: SubmitOutput,
            400: OpenApiTypes.OBJECT,  # DRF's field errors: {field: [messages]}
            409: ErrorOutput,
            422: SubmitOutput,
        },
    )
    @action(detail=True, methods=["post"])
    def submit(self, request: Request, pk: str | None = None) -> Response:
        assignment = self.get_object()
        refused = self._refusal(assignment)
        if refused is not None:
            return refused
        payload = SubmitInput(data=request.data)
        payload.is_valid(raise_exception=True)
        items = [services.ScoreInput(**item) for item in payload.validated_data["items"]]
        try:
            result = services.assignment_submit(
                assignment=assignment,
                items=items,
                user=request.user,
                submission_key=payload.validated_data.get("submission_key", ""),
                time_spent_ms=payload.validated_data.get("time_spent_ms", 0),
            )
        except services.ScoringClosed as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        body = {
            "ok": result.ok,
            "already_submitted": result.already_submitted,
            "critical_stop": result.critical_stop,
            "errors": {str(k): v for k, v in result.errors.items()},
            "form_errors": result.form_errors,
        }
        code = status.HTTP_200_OK if result.ok else status.HTTP_422_UNPROCESSABLE_ENTITY
        return Response(SubmitOutput(body).data, status=code)

    @extend_schema(
        request=ScoreInputSerializer,
        responses={
            200: ErrorOutput,
            400: OpenApiTypes.OBJECT,
            404: ErrorOutput,
            409: ErrorOutput,
        },
    )
    @action(detail=True, methods=["post"])
    def draft(self, request: Request, pk: str | None = None) -> Response:
        assignment = self.get_object()
        refused = self._refusal(assignment)
        if refused is not None:
            return refused
        payload = ScoreInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        if not assignment.estimates.filter(triple_id=payload.validated_data["triple_id"]).exists():
            return Response({"detail": "unknown triple"}, status=status.HTTP_404_NOT_FOUND)
        try:
            services.estimate_save_draft(
                assignment=assignment,
                item=services.ScoreInput(**payload.validated_data),
                onto_submitted=False,
            )
        except services.ScoringClosed as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        except services.DraftRefused as exc:
            # Refused as a submission would refuse it: the field named, DRF's error shape.
            return Response({exc.field: [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        return Response({"detail": "saved"})
