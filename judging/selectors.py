"""Reads of the judging app: scopes, runs, the stored report and the contradictions drill-down."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _

from jobs.services import job_is_active
from judging.models import JudgeConfig, JudgeEstimate, JudgeReport, JudgeRun, RunKind, RunStatus
from judging.pairwise import final_labels
from judging.report import report_fingerprint
from panels.rules import is_admin
from taxonomy.models import Task
from work.models import Estimate, EstimateStatus, Triple, TripleKind


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


def scope_triples(scope: dict[str, Any], kind: str = TripleKind.POINTWISE) -> QuerySet[Triple]:
    """The triples a run covers, in prompt-friendly order: an answer's (a pair's) criteria side
    by side, so a batch shares the (instruction, answer) or (pair, template) prefix as much as
    possible. A pointwise run covers rubric triples, a pairwise run side-by-side triples."""
    pairwise = kind == TripleKind.PAIRWISE
    qs = Triple.objects.filter(kind=TripleKind.PAIRWISE if pairwise else TripleKind.POINTWISE)
    instruction = "pair__instruction" if pairwise else "answer__instruction"
    if not scope.get("all"):
        if scope.get("model"):
            if pairwise:
                qs = qs.filter(
                    Q(pair__answer_a__model_id=scope["model"])
                    | Q(pair__answer_b__model_id=scope["model"])
                )
            else:
                qs = qs.filter(answer__model_id=scope["model"])
        if scope.get("panel"):
            qs = qs.filter(panel_id=scope["panel"])
        if scope.get("task"):
            # A task of any level: its own instructions and those of every leaf under it.
            task = Task.objects.get(pk=scope["task"])
            qs = qs.filter(
                Q(**{f"{instruction}__task": task})
                | Q(**{f"{instruction}__task__path__startswith": task.path + " / "})
            )
    if pairwise:
        return qs.order_by("pair_id", "comparison_criterion__position", "id")
    return qs.order_by("answer_id", "position", "id")


def runs_for_user(user: Any) -> QuerySet[JudgeRun]:
    """Admins see every run, supervisors the runs over one of their panels."""
    qs = JudgeRun.objects.select_related("config", "created_by")
    if is_admin(user):
        return qs
    panel_ids = list(user.supervised_panels.values_list("pk", flat=True))
    return qs.filter(scope__panel__in=panel_ids)


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


def run_twins(run: JudgeRun) -> list[JudgeRun]:
    """The position-bias runs tied to a side-by-side run: the run it mirrors and its mirrors."""
    return list(JudgeRun.objects.filter(Q(pk=run.swap_of_id) | Q(swap_of=run)).order_by("pk"))


def pairwise_judge_labels(run_id: int) -> list[tuple[int, str]]:
    """(triple id, final label) of a pairwise run, for rankings from the judge's labels: the
    majority over the run's templates in the pair's own orientation, a protocol.pairwise.Label
    code or "no_majority" (judging.pairwise.NO_MAJORITY), sorted by triple id. A pointwise or
    missing run gives an empty list."""
    run = JudgeRun.objects.filter(pk=run_id, kind=RunKind.PAIRWISE).first()
    if run is None:
        return []
    return sorted(final_labels(run).items())


def finished_pairwise_runs() -> list[tuple[int, str]]:
    """(id, display name) of the pairwise runs that finished, newest first: the judge label
    sources the model rankings may rank (dataset.label_sources, registered by the app)."""
    runs = JudgeRun.objects.filter(kind=RunKind.PAIRWISE, status=RunStatus.DONE).select_related(
        "config"
    )
    out = []
    for run in runs.order_by("-created_at", "-pk"):
        name = _("judge run %(pk)d: %(config)s") % {"pk": run.pk, "config": run.config}
        if run.swapped:
            name += " " + _("(swapped)")
        out.append((run.pk, name))
    return out


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
