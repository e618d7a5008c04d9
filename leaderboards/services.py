"""Computing a leaderboard's snapshot and setting its visibility.

The snapshot (`snapshot_data`) is one version's (leaderboards.versions): its rows are computed
over the version's items only (each instruction with the criteria frozen for it), under the
version's gate rule and aggregation minimum, and show only the submissions made to that
version; scores of two versions never meet. It holds, per source — the experts' verdicts
(dataset.TripleAggregate, the aggregation job's output) and each judge configuration's latest
pointwise scores — one row per model: the mean normalised score under the version's critical
gate rule, with its bootstrap
95 % interval, per task type (the catalogue's top-level task of the instruction's task: POLLUX's
35 task types) and per criterion (protocol.leaderboard, whose docstring states the rules); the
rule and the reported scale (0–2); and the cells (model × task type ×
criterion × complexity × style: sum and count) from which the page's filters recompute a mean
without reading a verdict again. A random baseline row per source is computed from the same
rows' scales; a model whose provider is "human" is the human baseline.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Max, Q
from django.utils import translation
from django.utils.translation import gettext as _

from comparison.models import SOURCE_HUMAN
from comparison.services import latest_ranking
from dataset.models import EXCLUDED_CRITICAL, TripleAggregate
from jobs.models import Job, JobKind, JobStatus
from jobs.services import enqueue
from judging.models import JudgeConfig, JudgeEstimate, JudgeRun, RunKind, RunStatus
from leaderboards import hooks
from leaderboards.models import (
    BoardVersion,
    Leaderboard,
    LeaderboardSnapshot,
    Visibility,
    VisibilityChange,
)
from leaderboards.versions import item_criteria, version_current
from material.models import LanguageModel
from protocol.critical import DEFAULT_GATE_RULE, is_violation, violation_share
from protocol.leaderboard import (
    REPORTED_HIGH,
    REPORTED_LOW,
    gate,
    model_scores,
    normalise,
    random_baseline,
)
from taxonomy.models import BestEnd, Criterion, CriterionGroup, FunctionalStyle, Rubric, Task
from work.models import TripleKind

HUMAN_PROVIDER = "human"
# The REPA criterion whose ratings the board shows beside the scores.
PAIRWISE_CRITERION = "overall"
RATING_SYSTEMS = ("elo", "bradley_terry", "glicko2")
EXPERTS = "experts"
BOOTSTRAP_ROUNDS = 1000


@dataclass
class Verdicts:
    """The rows of one source, as columns."""

    model: list[int]
    answer: list[int]
    group: list[int]
    criterion: list[int]
    complexity: list[str]
    style: list[int]
    rubric: list[int]
    value: list[float]  # the verdict on its rubric's scale
    critical: list[bool]  # a critical criterion's row (a gate, not averaged)
    violated: list[float]  # critical rows: the share of their scored votes that are violations

    @classmethod
    def empty(cls) -> Verdicts:
        return cls([], [], [], [], [], [], [], [], [], [])

    def add(self, row: tuple[Any, ...], value: float, critical: bool, violated: float) -> None:
        """`row`: model, answer, task type (the row's task mapped by `task_types`), criterion,
        complexity, style, rubric."""
        model, answer, group, criterion, complexity, style, rubric = row
        self.model.append(model)
        self.answer.append(answer)
        self.group.append(group or 0)
        self.criterion.append(criterion)
        self.complexity.append(complexity or "")
        self.style.append(style or 0)
        self.rubric.append(rubric)
        self.value.append(value)
        self.critical.append(critical)
        self.violated.append(violated)


# The columns every source reads of a triple (through its aggregate or its judge estimate).
def _triple_columns(prefix: str) -> list[str]:
    answer = f"{prefix}answer__"
    return [
        f"{answer}model_id",
        f"{prefix}answer_id",
        f"{answer}instruction__task_id",
        f"{prefix}criterion_id",
        f"{answer}instruction__complexity",
        f"{answer}instruction__style_id",
        f"{prefix}rubric_id",
    ]


def _scope(items: dict[int, set[int]], prefix: str) -> dict[str, Any]:
    """The version's instructions (their criteria are checked per row: `_in_version`)."""
    return {
        f"{prefix}kind": TripleKind.POINTWISE,
        f"{prefix}answer__instruction_id__in": list(items),
    }


def _in_version(items: dict[int, set[int]], instruction: int, criterion: int) -> bool:
    """A row counts when its criterion is one its instruction had when the version was cut (a
    criterion added to the catalogue later is not the version's)."""
    return criterion in items.get(instruction, ())


def expert_verdicts(version: BoardVersion, rubrics: dict[int, Rubric]) -> Verdicts:
    """The aggregated triples of the board's scope. A critical triple carries the share of its
    scored votes that are violations (its mean on the binary scale), whatever the dataset did
    with it: the board's gate rule reads the votes. A triple the dataset dropped because its
    answer has a violation vote (rule 2) stays in, for the board's rule to gate or keep, unless
    it has no numeric score or fewer estimates than rule 3 asks; triples dropped for another
    reason are left out."""
    items = item_criteria(version)
    rows = (
        TripleAggregate.objects.filter(**_scope(items, "triple__"))
        .filter(_shown(version, "triple__"))
        .values_list(
            *_triple_columns("triple__"),
            "triple__group",
            "mean",
            "excluded_reason",
            "n_estimates",
            "triple__answer__instruction_id",
        )
    )
    out = Verdicts.empty()
    types = task_types()
    min_estimates = version.min_estimates
    for raw in rows:
        if not _in_version(items, raw[-1], raw[3]):
            continue
        r = (raw[0], raw[1], types.get(raw[2]), *raw[3:-1])
        critical = r[7] == CriterionGroup.CRITICAL
        mean, excluded, n_estimates = r[8], r[9], r[10]
        if mean is None:
            continue
        if critical:
            # A gate only (never averaged): its votes count even where too few were cast.
            rubric = rubrics[r[6]]
            share = violation_share(mean, low=min(rubric.values), top=float(rubric.max_value))
            out.add(r[:7], float(mean), True, share)
            continue
        if excluded == EXCLUDED_CRITICAL and n_estimates < min_estimates:
            continue
        if excluded and excluded != EXCLUDED_CRITICAL:
            continue
        out.add(r[:7], float(mean), False, 0.0)
    return out


def withheld_models(version: BoardVersion) -> tuple[list[int], list[int]]:
    """(published on this version, withheld from it) of the participants' submitted models: a
    submission is published on the version of the board it was submitted to, and only there
    (another version of the same board ranks other items)."""
    submitted = hooks.submitted()
    published = [m for m, (on, shown) in submitted.items() if shown and on == version.pk]
    withheld = [m for m, (on, shown) in submitted.items() if not shown or on != version.pk]
    return published, withheld


def _shown(version: BoardVersion, prefix: str) -> Q:
    """The rows a version shows: of answers that are not reserved (exam and control copies,
    participants' submissions) or of a submission published on this version; never of another
    submitted model (its answers may have gone to the panels)."""
    published, withheld = withheld_models(version)
    answer = f"{prefix}answer__"
    shown = Q(**{f"{answer}reserved__isnull": True}) | Q(**{f"{answer}model_id__in": published})
    return shown & ~Q(**{f"{answer}model_id__in": withheld})


def task_types() -> dict[int, int]:
    """Each catalogue task's task type: its top-level task (POLLUX's 35 task types, Table 1)."""
    parents = {
        pk: (parent, level)
        for pk, parent, level in Task.objects.values_list("pk", "parent_id", "level")
    }
    roots: dict[int, int] = {}
    for pk in parents:
        node = pk
        while parents[node][1] > 0 and parents[node][0] is not None:
            node = parents[node][0]
        roots[pk] = node
    return roots


def judge_sources() -> list[JudgeConfig]:
    """Judge configurations with a finished pointwise run."""
    ids = (
        JudgeRun.objects.filter(kind=RunKind.POINTWISE, status=RunStatus.DONE)
        .values_list("config_id", flat=True)
        .distinct()
    )
    return list(JudgeConfig.objects.filter(pk__in=list(ids)).order_by("pk"))


def judge_verdicts(
    version: BoardVersion,
    config: JudgeConfig,
    rubrics: dict[int, Rubric],
    *,
    only_model: int | None = None,
) -> Verdicts:
    """The configuration's parsed scores from its finished pointwise runs, the newest run's per
    triple; a critical row is violated when its score is the top of its scale. With
    `only_model`, that model's scores whatever its visibility (a participant's private
    result)."""
    items = item_criteria(version)
    estimates = JudgeEstimate.objects.filter(
        config=config,
        parse_ok=True,
        run__kind=RunKind.POINTWISE,
        run__status=RunStatus.DONE,
        **_scope(items, "triple__"),
    )
    if only_model is None:
        estimates = estimates.filter(_shown(version, "triple__"))
    else:
        estimates = estimates.filter(triple__answer__model_id=only_model)
    newest = estimates.values("triple_id").annotate(last=Max("pk")).values_list("last", flat=True)
    rows = JudgeEstimate.objects.filter(pk__in=list(newest)).values_list(
        *_triple_columns("triple__"), "triple__group", "score", "triple__answer__instruction_id"
    )
    out = Verdicts.empty()
    types = task_types()
    for raw in rows:
        if not _in_version(items, raw[-1], raw[3]):
            continue
        r = (raw[0], raw[1], types.get(raw[2]), *raw[3:-1])
        critical = r[7] == CriterionGroup.CRITICAL
        rubric = rubrics[r[6]]
        top = float(rubric.max_value)
        violated = is_violation(critical=critical, is_na=False, score=r[8], top=top)
        out.add(r[:7], float(r[8]), critical, 1.0 if violated else 0.0)
    return out


def _normalised(verdicts: Verdicts, rubrics: dict[int, Rubric]) -> np.ndarray:
    values = []
    for rubric_id, value in zip(verdicts.rubric, verdicts.value, strict=True):
        rubric = rubrics[rubric_id]
        values.append(
            normalise(value, rubric.values, best_is_lowest=rubric.best_end == BestEnd.LOWEST)
        )
    return np.asarray(values, dtype=float)


def source_rows(
    verdicts: Verdicts,
    rubrics: dict[int, Rubric],
    *,
    rule: str = DEFAULT_GATE_RULE,
    rounds: int = BOOTSTRAP_ROUNDS,
) -> dict[str, Any]:
    """One source's model rows, its random baseline and its cells, under the gate `rule` (the
    board's)."""
    if not verdicts.model:
        return {"models": [], "random": None, "cells": []}
    normalised = _normalised(verdicts, rubrics)
    critical = np.asarray(verdicts.critical, dtype=bool)
    violated = np.asarray(verdicts.violated, dtype=float)
    scores = model_scores(
        model=verdicts.model,
        answer=verdicts.answer,
        group=verdicts.group,
        criterion=verdicts.criterion,
        normalised=normalised,
        critical=critical,
        violated=violated,
        rule=rule,
        rounds=rounds,
    )
    level_means = {
        pk: float(np.mean([normalise(v, r.values) for v in r.values])) for pk, r in rubrics.items()
    }
    overall, by_group, by_criterion = random_baseline(
        answer=verdicts.answer,
        group=verdicts.group,
        criterion=verdicts.criterion,
        level_mean=[level_means[r] for r in verdicts.rubric],
        critical=critical,
        levels=[len(rubrics[r].values) for r in verdicts.rubric],
        rule=rule,
    )
    return {
        "models": [
            {
                "model": s.model,
                "mean": s.mean,
                "low": s.low,
                "high": s.high,
                "verdicts": s.verdicts,
                "answers": s.answers,
                "gated_answers": s.gated_answers,
                "by_group": {str(k): v for k, v in s.by_group.items()},
                "by_criterion": {str(k): v for k, v in s.by_criterion.items()},
            }
            for s in scores
        ],
        "random": {
            "mean": overall,
            "by_group": {str(k): v for k, v in by_group.items()},
            "by_criterion": {str(k): v for k, v in by_criterion.items()},
        },
        "cells": _cells(verdicts, normalised, critical, violated, rule),
    }


def _cells(
    verdicts: Verdicts,
    normalised: np.ndarray,
    critical: np.ndarray,
    violated: np.ndarray,
    rule: str,
) -> list[list[Any]]:
    """[model, group, criterion, complexity, style, sum, count] of the values that count under
    the gate rule (a dropped answer's are not in them)."""
    gated = gate(
        answer=verdicts.answer,
        normalised=normalised,
        critical=critical,
        violated=violated,
        rule=rule,
    )
    sums: dict[tuple[Any, ...], list[float]] = defaultdict(lambda: [0.0, 0])
    for i in np.flatnonzero(gated.counted):
        key = (
            verdicts.model[i],
            verdicts.group[i],
            verdicts.criterion[i],
            verdicts.complexity[i],
            verdicts.style[i],
        )
        cell = sums[key]
        cell[0] += float(gated.value[i])
        cell[1] += 1
    return [[*key, round(s, 9), int(n)] for key, (s, n) in sorted(sums.items())]


def _names(ids: Iterable[int], model: Any, attr: str = "name") -> dict[str, str]:
    return {str(o.pk): str(getattr(o, attr, o)) for o in model.objects.filter(pk__in=set(ids))}


def criterion_names(criterion: Criterion) -> dict[str, str]:
    """A criterion's names as the pages show them (`Criterion.display_name`) in each language,
    kept in the snapshot."""
    names = {}
    for language in ("en", "ru"):
        with translation.override(language):
            names[language] = criterion.display_name
    return {**names, "key": criterion.key}


def pairwise_ratings(version: BoardVersion, criterion: str = PAIRWISE_CRITERION) -> dict[str, Any]:
    """The models' side-by-side ratings from the experts' latest REPA ranking (comparison): per
    model the Elo, Bradley–Terry and Glicko-2 means (bootstrap means where computed) and Borda
    points on `criterion` (Overall), for the board's rating columns. A submitted model that is
    not published is left out, as everywhere on a board."""
    ranking = latest_ranking(SOURCE_HUMAN)
    if ranking is None:
        return {"ranking": None, "models": {}}
    withheld = set(withheld_models(version)[1])
    chosen = next(
        (c for c in ranking.result.get("criteria", []) if c.get("key") == criterion), None
    )
    models: dict[str, dict[str, float | None]] = {}
    for row in (chosen or {}).get("models", []):
        if row["model"] in withheld:
            continue
        models[str(row["model"])] = {
            **{system: (row.get(system) or {}).get("mean") for system in RATING_SYSTEMS},
            "borda": row.get("borda"),
            "battles": row.get("n_battles"),
        }
    return {
        "ranking": ranking.pk,
        "at": ranking.created_at.isoformat(),
        "criterion": criterion,
        "models": models,
    }


def snapshot_data(
    version: BoardVersion,
    *,
    rounds: int = BOOTSTRAP_ROUNDS,
    progress: Callable[[int, int], Any] | None = None,
) -> dict[str, Any]:
    """Every source's rows over the version's items under its gate rule, and the names the
    page shows (models, task types, criteria, styles)."""
    rubrics = {r.pk: r for r in Rubric.objects.all()}
    configs = judge_sources()
    total = 1 + len(configs)
    sources = []
    rule = version.gate_rule
    expert = expert_verdicts(version, rubrics)
    rows = source_rows(expert, rubrics, rule=rule, rounds=rounds)
    sources.append({"key": EXPERTS, "kind": "experts", "name": "experts", **rows})
    if progress:
        progress(1, total)
    seen = [expert]
    for n, config in enumerate(configs, start=2):
        verdicts = judge_verdicts(version, config, rubrics)
        seen.append(verdicts)
        sources.append(
            {
                "key": f"judge:{config.pk}",
                "kind": "judge",
                "name": config.name,
                **source_rows(verdicts, rubrics, rule=rule, rounds=rounds),
            }
        )
        if progress:
            progress(n, total)
    pairwise = pairwise_ratings(version)
    model_ids = {m for v in seen for m in v.model} | {int(m) for m in pairwise["models"]}
    models = LanguageModel.objects.filter(pk__in=model_ids)
    return {
        # The version and the rule the means were computed with, and the scale the pages report
        # them on (the stored means are on [0, 1]).
        "version": version.number,
        "gate_rule": rule,
        "scale": [REPORTED_LOW, REPORTED_HIGH],
        "sources": sources,
        "pairwise": pairwise,
        "models": {
            str(m.pk): {"name": str(m), "human": m.provider.strip().lower() == HUMAN_PROVIDER}
            for m in models
        },
        "groups": {
            str(t.pk): {"en": t.name_en, "ru": t.name_ru}
            for t in Task.objects.filter(pk__in={x for v in seen for x in v.group})
        },
        "criteria": {
            str(c.pk): criterion_names(c)
            for c in Criterion.objects.filter(
                pk__in={x for v in seen for x in v.criterion}
            ).select_related("style")
        },
        "styles": {
            str(s.pk): {"en": s.name_en, "ru": s.name_ru}
            for s in FunctionalStyle.objects.filter(pk__in={x for v in seen for x in v.style})
        },
    }


def snapshot_store(
    board: Leaderboard,
    *,
    version: BoardVersion | None = None,
    job: Job | None = None,
    rounds: int = BOOTSTRAP_ROUNDS,
    progress: Callable[[int, int], Any] | None = None,
) -> LeaderboardSnapshot:
    """Compute and store a snapshot of the version (the board's current one by default)."""
    version = version or version_current(board)
    started = time.perf_counter()
    data = snapshot_data(version, rounds=rounds, progress=progress)
    return LeaderboardSnapshot.objects.create(
        leaderboard=board,
        version=version,
        job=job,
        data=data,
        seconds=time.perf_counter() - started,
    )


def snapshot_queue(
    board: Leaderboard,
    user: Any,
    *,
    fresh: bool = False,
    version: BoardVersion | None = None,
) -> tuple[Job, bool]:
    """Queue a recomputation of the version (the board's current one by default) unless one is
    already queued or running for it. With
    `fresh` (the data changed just now: a publication), a running one does not count, as it
    may have read the data before the change; a queued one has not read anything yet."""
    statuses = [JobStatus.QUEUED] if fresh else [JobStatus.QUEUED, JobStatus.RUNNING]
    version = version or version_current(board)
    with transaction.atomic():
        running = (
            Job.objects.select_for_update()
            .filter(
                kind=JobKind.LEADERBOARD,
                params__leaderboard=board.pk,
                params__version=version.pk,
                status__in=statuses,
            )
            .first()
        )
        if running is not None:
            return running, False
        params = {"leaderboard": board.pk, "version": version.pk}
        return enqueue(JobKind.LEADERBOARD, params, user=user), True


def settings_problem(value: Any) -> str:
    """Why a set of inference settings (the board's fixed ones, a submission's) cannot be
    stored, or "": a JSON object of single finite values, no NUL in a text."""
    if not isinstance(value, dict):
        return _('A JSON object is expected, like {"temperature": 0}.')
    for key, item in value.items():
        if isinstance(item, dict | list):
            return _("Each setting is a single value (a number, text, true/false).")
        if isinstance(item, float) and not math.isfinite(item):
            return _("A setting is not a finite number.")
        if "\x00" in key or (isinstance(item, str) and "\x00" in item):
            return _("A setting contains a NUL character.")
    return ""


@transaction.atomic
def visibility_set(board: Leaderboard, visibility: str, *, actor: Any, reason: str = "") -> bool:
    """Set the visibility (an admin's action), audited; False when it was already so."""
    if visibility not in Visibility.values:
        raise ValueError(f"visibility must be one of {', '.join(Visibility.values)}")
    locked = Leaderboard.objects.select_for_update().get(pk=board.pk)
    if locked.visibility == visibility:
        return False
    VisibilityChange.objects.create(
        leaderboard=locked, actor=actor, old=locked.visibility, new=visibility, reason=reason[:500]
    )
    locked.visibility = visibility
    locked.save(update_fields=["visibility"])
    board.visibility = visibility
    return True
