"""Reads of the judging app: scopes, runs, and the judge-vs-experts rows behind the metrics."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet

from dataset.aggregation import (
    AggregationSettings,
    aggregate_estimates,
    read_estimate_frame,
    snapshot,
)
from jobs.services import job_is_active
from judging.models import JudgeConfig, JudgeEstimate, JudgeReport, JudgeRun
from judging.report import report_fingerprint
from panels.rules import is_admin
from taxonomy.models import Task
from taxonomy.services import task_tops
from work.models import Estimate, EstimateStatus, Triple


def config_current(name: str) -> JudgeConfig:
    """The latest version of the configuration called `name`."""
    return JudgeConfig.objects.filter(name=name).order_by("-version").first() or _missing(name)


def _missing(name: str) -> JudgeConfig:
    raise JudgeConfig.DoesNotExist(f"no judge configuration named {name!r}")


def configs_current() -> list[JudgeConfig]:
    """One row per configuration name: its latest version."""
    latest: dict[str, JudgeConfig] = {}
    for config in JudgeConfig.objects.order_by("name", "-version"):
        latest.setdefault(config.name, config)
    return list(latest.values())


def scope_triples(scope: dict[str, Any]) -> QuerySet[Triple]:
    """The triples a run covers, in prompt-friendly order: an answer's criteria side by side, so
    a batch shares the (instruction, answer) prefix as much as possible."""
    qs = Triple.objects.all()
    if not scope.get("all"):
        if scope.get("model"):
            qs = qs.filter(answer__model_id=scope["model"])
        if scope.get("panel"):
            qs = qs.filter(panel_id=scope["panel"])
        if scope.get("task"):
            # A task of any level: its own instructions and those of every leaf under it.
            task = Task.objects.get(pk=scope["task"])
            qs = qs.filter(
                Q(answer__instruction__task=task)
                | Q(answer__instruction__task__path__startswith=task.path + " / ")
            )
    return qs.order_by("answer_id", "position", "id")


def runs_for_user(user: Any) -> QuerySet[JudgeRun]:
    """Admins see every run, supervisors the runs over one of their panels."""
    qs = JudgeRun.objects.select_related("config", "created_by")
    if is_admin(user):
        return qs
    panel_ids = list(user.supervised_panels.values_list("pk", flat=True))
    return qs.filter(scope__panel__in=panel_ids)


@dataclass
class ComparisonRow:
    """One judged triple with what the experts said about it.

    `expert_scores` are the triple's scores in the POLLUX dataset (the aggregation's rules:
    estimates with an invalid rationale dropped, and nothing when the triple is excluded, the
    reason then in `excluded`); `all_scores` are every submitted non-NA score, for the
    labelled unfiltered view. `task` is the task type (top-level task), `criterion` the
    criterion's name: the paper's pooling.
    """

    triple_id: int
    judge: float | None
    parse_ok: bool
    expert_scores: list[float] = field(default_factory=list)
    model: str = ""
    task: str = ""
    task_group: str = ""
    criterion: str = ""
    answer_length: int = 0
    all_scores: list[float] = field(default_factory=list)
    excluded: str = ""


# Why a judged triple has no dataset scores although the aggregation gave it no reason: no
# submitted estimate at all, or every one of them dropped for its rationale (rule 1).
NOT_SCORED = "no_expert_scores"
ALL_RATIONALES_INVALID = "invalid_rationale"


def comparison_rows(run: JudgeRun) -> list[ComparisonRow]:
    """Every estimate of the run with its triple's expert scores, filtered as the dataset is.

    A handful of queries whatever the size of the run; long texts are never loaded (length in
    SQL), and the dataset filter reads only the answers the run judged, through the
    aggregation's own reader and rules (dataset.aggregation), so both agree by construction.
    """
    from django.db.models.functions import Length

    tops = task_tops()
    task_names = dict(Task.objects.filter(level=0).values_list("pk", "name_en"))
    judged = (
        JudgeEstimate.objects.filter(run=run)
        .annotate(answer_length=Length("triple__answer__text"))
        .values_list(
            "triple_id",
            "score",
            "parse_ok",
            "triple__answer__model__name",
            "triple__answer__instruction__task_id",
            "triple__answer__instruction__task__group__name_en",
            "triple__criterion__name_en",
            "answer_length",
        )
        .order_by("triple_id")
    )
    rows = {
        tid: ComparisonRow(
            tid,
            score,
            ok,
            [],
            model,
            task_names.get(tops.get(task_id, task_id), ""),
            group,
            crit,
            length or 0,
        )
        for tid, score, ok, model, task_id, group, crit, length in judged
    }
    expert = Estimate.objects.filter(
        triple__judge_estimates__run=run,
        status=EstimateStatus.SUBMITTED,
        is_na=False,
        score__isnull=False,
    ).values_list("triple_id", "score")
    scores: dict[int, list[float]] = defaultdict(list)
    for tid, score in expert:
        if score is not None:
            scores[tid].append(float(score))
    for tid, values in scores.items():
        if tid in rows:
            rows[tid].all_scores = sorted(values)

    # The dataset's view of the same triples: whole answers (rule 2 needs their critical votes).
    answers_sql = (
        f"SELECT DISTINCT jt.answer_id FROM {JudgeEstimate._meta.db_table} je "  # noqa: S608 (trusted names, an integer)
        f"JOIN {Triple._meta.db_table} jt ON jt.id = je.triple_id WHERE je.run_id = {int(run.pk)}"
    )
    with snapshot():
        frame = read_estimate_frame(answers_sql=answers_sql)
    result = aggregate_estimates(frame, AggregationSettings())
    reasons = dict(
        zip(
            result.triples["triple_id"].astype(int).tolist(),
            result.triples["excluded_reason"].astype(str).tolist(),
            strict=True,
        )
    )
    kept = frame[
        frame["estimate_id"].isin(result.kept_estimate_ids).to_numpy()
        & ~frame["is_na"].to_numpy(dtype=bool)
    ]
    dataset: dict[int, list[float]] = defaultdict(list)
    for tid, score in zip(
        kept["triple_id"].astype(int).tolist(), kept["score"].astype(float).tolist(), strict=True
    ):
        dataset[tid].append(score)
    submitted = set(frame["triple_id"].astype(int).tolist())
    for tid, row in rows.items():
        row.excluded = reasons.get(tid) or (
            "" if tid in reasons else ALL_RATIONALES_INVALID if tid in submitted else NOT_SCORED
        )
        row.expert_scores = sorted(dataset.get(tid, [])) if not row.excluded else []
    return list(rows.values())


def contradictions(run: JudgeRun) -> list[int]:
    """Triples where a parsed judge score differs from a unanimous panel of two or more."""
    out = []
    for row in comparison_rows(run):
        panel = row.expert_scores
        if row.parse_ok and len(panel) >= 2 and len(set(panel)) == 1 and row.judge != panel[0]:
            out.append(row.triple_id)
    return out


def contradiction_details(run: JudgeRun, triple_ids: list[int]) -> list[dict[str, Any]]:
    """The drill-down: instruction, answer, the experts' rationales beside the judge's."""
    estimates = {
        e.triple_id: e
        for e in JudgeEstimate.objects.filter(run=run, triple_id__in=triple_ids).select_related(
            "triple__answer__instruction", "triple__answer__model", "triple__criterion"
        )
    }
    rationales: dict[int, list[Estimate]] = defaultdict(list)
    for est in (
        Estimate.objects.filter(
            triple_id__in=triple_ids, status=EstimateStatus.SUBMITTED, is_na=False
        )
        .select_related("expert")
        .order_by("triple_id", "slot")
    ):
        rationales[est.triple_id].append(est)
    return [
        {"judge": estimates[tid], "experts": rationales.get(tid, [])}
        for tid in triple_ids
        if tid in estimates
    ]


@dataclass
class StoredReport:
    """What the run page shows of the stored report: its data (None before the first
    computation), when it was computed, whether its inputs changed since, whether a computation
    is under way."""

    data: dict[str, Any] | None
    computed_at: Any = None
    stale: bool = True
    computing: bool = False
    error: str = ""


def report_claim_stale_after() -> timedelta:
    """A report computation silent for longer than this belonged to a worker that died."""
    return timedelta(seconds=float(getattr(settings, "JUDGE_REPORT_CLAIM_STALE_SECONDS", 900)))


def report_job_active(report: JudgeReport) -> bool:
    """Whether the report's latest computation will still run or finish (one at a time)."""
    return report.job is not None and job_is_active(report.job, report_claim_stale_after())


def report_stored(run: JudgeRun) -> StoredReport:
    """The run's stored report and whether it is stale: one read of the report row and one
    aggregate for the fingerprint (judging.report.report_fingerprint); no estimate is read."""

    stored = JudgeReport.objects.filter(run=run).select_related("job").first()
    if stored is None:
        return StoredReport(data=None)
    stale = stored.data is None or stored.fingerprint != report_fingerprint(run)
    return StoredReport(
        data=stored.data,
        computed_at=stored.computed_at,
        stale=stale,
        computing=report_job_active(stored),
        error=stored.error,
    )
