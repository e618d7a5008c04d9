"""Model rankings from side-by-side (REPA) comparisons: battles, ratings, the stored Ranking.

- A *battle* is one pairwise triple's aggregate: the pair's model A against its model B on one
  comparison criterion, with A's score from the majority label (`protocol.pairwise.outcome`,
  the tie mapping explicit). Aggregates without a label (no consensus, or any other excluded
  reason) are left out and counted per reason; so is a pair of two answers of one model (it
  rates nothing and `lib.ratings` refuses a self-battle).
- The *source* of the labels is the experts' majority ("human") or a registered label source
  (`dataset.label_sources`: "judge:<run id>", a pairwise judge run's final labels, registered
  by judging). A judge's triple without a final label ("no_majority") is left out and counted
  the same way; the battles, the rating code and its parameters are the same for every source.
- Battles keep the order of their triples (ids: the order the pairs were built in), which the
  online systems (Elo, Glicko-2) read; the bootstrap averages that order away (REPA §3.1).
- `rankings_compute` rates each criterion on its own battles: Elo, Bradley–Terry and Glicko-2
  on the battles as they are ("fit"), and the bootstrap mean with its 2.5–97.5 % interval over
  `rounds` resamples, then Borda points of the three systems' rankings. All criteria go through
  one `lib.ratings.rate_groups` call (one pass for every criterion's rounds and fits, one
  seeded generator per criterion).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Max
from django.utils.translation import gettext as _

from comparison.models import ALL_CRITERIA, SOURCE_HUMAN, Ranking
from dataset import label_sources
from dataset.models import TripleAggregate
from jobs.models import Job, JobKind, JobStatus
from jobs.services import enqueue
from lib.numbers import decimal_number
from lib.ratings import (
    BradleyTerryParams,
    EloParams,
    Glicko2Params,
    GroupRatings,
    borda,
    ranking,
    rate_groups,
)
from material.models import LanguageModel
from protocol.pairwise import Label, outcome
from taxonomy.models import ComparisonCriterion
from work.models import Triple, TripleKind

Progress = Callable[..., None]
SYSTEMS = ("elo", "bradley_terry", "glicko2")
SAME_MODEL = "same_model"
INVALID_LABEL = "invalid_label"
NO_LABEL = "no_label"
MAX_ROUNDS = 10_000
MAX_BT_ITERATIONS = 10_000
# The rankings pass in two threads (numpy releases the GIL inside its loops): one rankings job
# runs at a time, and on a two-core worker it then takes about half the wall time; the rounds
# are the same however many threads (lib.ratings.rate_groups).
RANKING_THREADS = 2


class ParamsError(ValueError):
    """A ranking parameter that cannot be used; `field` names it (the form shows it there)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class RankingParams:
    """Every input of a ranking, flat (the form's fields and the stored JSON are the same).

    Defaults: Arena's Elo (initial 1000, K 4, scale 400, base 10), Bradley–Terry by 50 MM
    iterations (REPA §3.1), Glicko-2 from Glickman's example (1500, RD 350, σ 0.06, τ 0.5),
    1,000 bootstrap rounds (REPA §3.1; 0 = none, the plain fit only), ties 0.5 (issue #13).
    """

    criterion: str = ALL_CRITERIA
    source: str = SOURCE_HUMAN
    elo_initial: float = 1000.0
    elo_k: float = 4.0
    elo_scale: float = 400.0
    elo_base: float = 10.0
    bt_iterations: int = 50
    glicko_rating: float = 1500.0
    glicko_rd: float = 350.0
    glicko_volatility: float = 0.06
    glicko_tau: float = 0.5
    rounds: int = 1000
    seed: int = 0
    both_good: float = 0.5
    both_bad: float = 0.5

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RankingParams:
        """Parameters from a job's params or a form (absent or empty = default); ParamsError
        names the first bad field. Unknown keys are refused (a typo would silently not apply)."""
        defaults = cls()
        values: dict[str, Any] = {}
        unknown = sorted(set(data) - set(asdict(defaults)))
        if unknown:
            raise ParamsError(unknown[0], _("unknown parameter"))
        for name, default in asdict(defaults).items():
            raw = data.get(name)
            if raw is None or raw == "":
                values[name] = default
            elif isinstance(default, str):
                values[name] = str(raw).strip()
            else:
                values[name] = _number(name, raw, int if isinstance(default, int) else float)
        params = cls(**values)
        params.check()
        return params

    def check(self) -> None:
        """The ranges each system needs (the criterion's existence is asked of the database)."""
        if self.source != SOURCE_HUMAN and label_sources.parse(self.source) is None:
            raise ParamsError("source", _("unknown source of labels %(s)r") % {"s": self.source})
        for name in ("elo_k", "elo_scale", "glicko_rd", "glicko_volatility", "glicko_tau"):
            if getattr(self, name) <= 0:
                raise ParamsError(name, _("must be positive"))
        if self.elo_base <= 1:
            raise ParamsError("elo_base", _("must be greater than 1"))
        if not 1 <= self.bt_iterations <= MAX_BT_ITERATIONS:
            raise ParamsError(
                "bt_iterations", _("must be between 1 and %(n)d") % {"n": MAX_BT_ITERATIONS}
            )
        if not 0 <= self.rounds <= MAX_ROUNDS:
            raise ParamsError("rounds", _("must be between 0 and %(n)d") % {"n": MAX_ROUNDS})
        if self.seed < 0:
            raise ParamsError("seed", _("must not be negative"))
        for name in ("both_good", "both_bad"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ParamsError(name, _("must be between 0 and 1"))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def criterion_keys(self) -> list[str] | None:
        """None for every criterion, else the one key (which must exist)."""
        if self.criterion == ALL_CRITERIA:
            return None
        if not ComparisonCriterion.objects.filter(key=self.criterion).exists():
            raise ParamsError(
                "criterion", _("no comparison criterion %(key)r") % {"key": self.criterion}
            )
        return [self.criterion]

    def check_source(self) -> None:
        """The source's run may be ranked now (a judge run that finished): asked of the
        database, in the request, like the criterion."""
        if self.source == SOURCE_HUMAN:
            return
        if self.source not in dict(label_sources.choices()):
            raise ParamsError(
                "source",
                _("%(s)s is not a finished side-by-side judge run") % {"s": self.source},
            )

    @property
    def elo(self) -> EloParams:
        return EloParams(
            k=self.elo_k, scale=self.elo_scale, base=self.elo_base, initial=self.elo_initial
        )

    @property
    def bradley_terry(self) -> BradleyTerryParams:
        # The reported scale follows Elo's (Arena's convention for its MLE ratings).
        return BradleyTerryParams(
            iterations=self.bt_iterations,
            scale=self.elo_scale,
            base=self.elo_base,
            anchor=self.elo_initial,
        )

    @property
    def glicko2(self) -> Glicko2Params:
        return Glicko2Params(
            rating=self.glicko_rating,
            rd=self.glicko_rd,
            volatility=self.glicko_volatility,
            tau=self.glicko_tau,
        )


def _number(name: str, raw: Any, kind: type) -> Any:
    # The page shows 0.5 as "0,5" in Russian: either separator is taken back (lib.numbers).
    value = decimal_number(raw)
    if value is None:
        raise ParamsError(name, _("must be a number"))
    if kind is int:
        if value != int(value):
            raise ParamsError(name, _("must be a whole number"))
        return int(value)
    return value


# --------------------------------------------------------------------------- battles


@dataclass
class CriterionBattles:
    """One criterion's battles (model ids, in triple order) and the aggregates left out."""

    key: str
    position: int
    model_a: list[int] = field(default_factory=list)
    model_b: list[int] = field(default_factory=list)
    outcome: list[float] = field(default_factory=list)
    excluded: Counter[str] = field(default_factory=Counter)

    def __len__(self) -> int:
        return len(self.outcome)


def _criterion_positions(keys: list[str] | None) -> dict[str, CriterionBattles]:
    criteria = ComparisonCriterion.objects.order_by("position", "key")
    if keys is not None:
        criteria = criteria.filter(key__in=keys)
    positions: dict[str, int] = {}
    for key, position in criteria.values_list("key", "position"):
        positions.setdefault(key, position)
    return {key: CriterionBattles(key, position) for key, position in positions.items()}


# (criterion key, label, excluded reason, model of A, model of B), in triple order.
BattleRow = tuple[str, str, str, int, int]


def _battles(
    rows: Iterable[BattleRow], keys: list[str] | None, both_good: float, both_bad: float
) -> dict[str, CriterionBattles]:
    """The battles of the rows, each criterion's in row order; the rules of the module doc."""
    result = _criterion_positions(keys)
    scores = {label: outcome(label, both_good=both_good, both_bad=both_bad) for label in Label}
    for key, label, reason, model_a, model_b in rows:
        battles = result.get(key)
        if battles is None:  # a key of a criterion set loaded meanwhile
            battles = result[key] = CriterionBattles(key, len(result))
        if reason:
            battles.excluded[reason] += 1
        elif not label:
            battles.excluded[NO_LABEL] += 1
        elif label not in scores:
            battles.excluded[INVALID_LABEL] += 1
        elif model_a == model_b:
            battles.excluded[SAME_MODEL] += 1
        else:
            battles.model_a.append(model_a)
            battles.model_b.append(model_b)
            battles.outcome.append(scores[Label(label)])
    return dict(sorted(result.items(), key=lambda kv: (kv[1].position, kv[0])))


def battles_from_aggregates(
    criterion_keys: Iterable[str] | None = None,
    *,
    both_good: float = 0.5,
    both_bad: float = 0.5,
) -> dict[str, CriterionBattles]:
    """The battles of every criterion (or of the given keys), in criterion order.

    One battle per pairwise TripleAggregate with a label: (model of answer A, model of answer
    B, A's score by `protocol.pairwise.outcome` with the tie mapping). Left out and counted:
    an excluded aggregate by its reason ("no_consensus"), one without a label ("no_label"), a
    label that is not one of the four ("invalid_label"), a pair of one model ("same_model").
    A requested key without aggregates is present with no battles.
    """
    keys = None if criterion_keys is None else list(criterion_keys)
    rows = TripleAggregate.objects.filter(triple__kind=TripleKind.PAIRWISE)
    if keys is not None:
        rows = rows.filter(triple__comparison_criterion__key__in=keys)
    values = (
        rows.order_by("triple_id")
        .values_list(
            "triple__comparison_criterion__key",
            "label",
            "excluded_reason",
            "triple__pair__answer_a__model_id",
            "triple__pair__answer_b__model_id",
        )
        .iterator(chunk_size=5000)
    )
    return _battles(values, keys, both_good, both_bad)


TRIPLE_CHUNK = 5000


def battles_from_source(
    source: str,
    criterion_keys: Iterable[str] | None = None,
    *,
    both_good: float = 0.5,
    both_bad: float = 0.5,
) -> dict[str, CriterionBattles]:
    """The battles of a label source: the experts' aggregates ("human") or a registered
    source's labels (a judge run's final labels, `dataset.label_sources`), by the same rules;
    a source's "no_majority" is left out and counted under that name. ParamsError("source")
    when no registered source has that name."""
    if source == SOURCE_HUMAN:
        return battles_from_aggregates(criterion_keys, both_good=both_good, both_bad=both_bad)
    labelled = label_sources.labels(source)
    if labelled is None:
        raise ParamsError("source", _("unknown source of labels %(s)r") % {"s": source})
    keys = None if criterion_keys is None else list(criterion_keys)
    return _battles(_source_rows(labelled, keys), keys, both_good, both_bad)


def _source_rows(labelled: list[tuple[int, str]], keys: list[str] | None) -> Iterable[BattleRow]:
    """The source's labels joined with their triples (criterion, the pair's models), in triple
    order; a label of a triple that is gone or not pairwise is skipped (nothing to rate)."""
    ordered = sorted(labelled)
    for start in range(0, len(ordered), TRIPLE_CHUNK):
        chunk = ordered[start : start + TRIPLE_CHUNK]
        triples = Triple.objects.filter(
            pk__in=[triple_id for triple_id, _label in chunk], kind=TripleKind.PAIRWISE
        )
        if keys is not None:
            triples = triples.filter(comparison_criterion__key__in=keys)
        info = {
            pk: (key, model_a, model_b)
            for pk, key, model_a, model_b in triples.values_list(
                "pk",
                "comparison_criterion__key",
                "pair__answer_a__model_id",
                "pair__answer_b__model_id",
            )
        }
        for triple_id, label in chunk:
            found = info.get(triple_id)
            if found is None:
                continue
            key, model_a, model_b = found
            if label == label_sources.NO_MAJORITY:
                yield key, "", label_sources.NO_MAJORITY, model_a, model_b
            else:
                yield key, label, "", model_a, model_b


# --------------------------------------------------------------------------- ratings


def _finite(value: float) -> float | None:
    # JSON (and PostgreSQL's jsonb) has no infinity: a Bradley–Terry rating of a model without a
    # single win or tie is -inf (lib.ratings.bradley_terry) and is stored as null.
    return float(value) if math.isfinite(value) else None


def _ranks(values: np.ndarray) -> np.ndarray:
    """1-based rank per position (best first; equal values keep the model order)."""
    ranks = np.empty(len(values), dtype=np.int64)
    ranks[ranking(values)] = np.arange(1, len(values) + 1)
    return ranks


def rankings_compute(
    params: RankingParams,
    *,
    battles: dict[str, CriterionBattles] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every criterion's rankings as the JSON stored on a Ranking (see the module doc).

    Per criterion: `models` (best Borda first), each with `elo`, `bradley_terry`, `glicko2`
    ({fit, mean, low, high, rank}; with 0 rounds mean is the fit and there is no interval;
    Glicko-2's fit also has its `rd`), `borda` and `borda_rank`, `n_battles`; the criterion's
    `n_battles` and `excluded` counts by reason.
    """
    report = progress or (lambda *args: None)
    report(0, 3, "battles")
    if battles is None:
        battles = battles_from_source(
            params.source,
            params.criterion_keys(),
            both_good=params.both_good,
            both_bad=params.both_bad,
        )
    model_ids = sorted({m for b in battles.values() for m in (*b.model_a, *b.model_b)})
    index = {model_id: i for i, model_id in enumerate(model_ids)}
    n_models = len(model_ids)
    played = [b for b in battles.values() if len(b)]
    report(1, 3, "ratings")
    rated: dict[str, GroupRatings] = {}
    if played:
        # Every criterion at once: the plain fits ride in the bootstrap's pass (lib.ratings).
        results = rate_groups(
            [index[m] for b in played for m in b.model_a],
            [index[m] for b in played for m in b.model_b],
            [x for b in played for x in b.outcome],
            [g for g, b in enumerate(played) for _ in range(len(b))],
            n_models,
            rounds=params.rounds,
            seed=params.seed,
            elo_params=params.elo,
            bt_params=params.bradley_terry,
            glicko2_params=params.glicko2,
            workers=RANKING_THREADS,
        )
        rated = {b.key: res for b, res in zip(played, results, strict=True)}
    names = {lm.pk: str(lm) for lm in LanguageModel.objects.filter(pk__in=model_ids)}
    criteria = [_criterion_result(b, model_ids, rated.get(b.key), names) for b in battles.values()]
    report(2, 3, "stored")
    return {
        "criteria": criteria,
        "n_models": n_models,
        "n_battles": sum(len(b) for b in battles.values()),
        "excluded": dict(sum((b.excluded for b in battles.values()), Counter())),
    }


def _criterion_result(
    battles: CriterionBattles,
    model_ids: list[int],
    rated: GroupRatings | None,
    names: dict[int, str],
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "key": battles.key,
        "position": battles.position,
        "n_battles": len(battles),
        "excluded": dict(battles.excluded),
        "models": [],
    }
    if not len(battles) or rated is None:
        return out
    n_models = len(model_ids)
    index = {model_id: i for i, model_id in enumerate(model_ids)}
    a = np.array([index[m] for m in battles.model_a], dtype=np.int64)
    b = np.array([index[m] for m in battles.model_b], dtype=np.int64)
    # Only the models that played this criterion are ranked in it.
    n_played = np.bincount(np.concatenate([a, b]), minlength=n_models)
    here = np.flatnonzero(n_played)
    glicko = rated.glicko2
    fits = {"elo": rated.elo, "bradley_terry": rated.bradley_terry, "glicko2": glicko.rating}
    boot = rated.bootstrap
    systems: dict[str, dict[str, np.ndarray | None]] = {}
    for system in SYSTEMS:
        fit = fits[system][here]
        if boot is None:
            systems[system] = {"fit": fit, "mean": fit, "low": None, "high": None}
        else:
            interval = getattr(boot, system)
            systems[system] = {
                "fit": fit,
                "mean": interval.mean[here],
                "low": interval.low[here],
                "high": interval.high[here],
            }
    ranks = {system: _ranks(systems[system]["mean"]) for system in SYSTEMS}  # type: ignore[arg-type]
    points = borda([ranking(systems[system]["mean"]) for system in SYSTEMS])  # type: ignore[arg-type]
    borda_ranks = _ranks(points)
    rows = []
    for j, i in enumerate(here.tolist()):
        row: dict[str, Any] = {
            "model": model_ids[i],
            "name": names.get(model_ids[i], ""),
            "n_battles": int(n_played[i]),
            "borda": float(points[j]),
            "borda_rank": int(borda_ranks[j]),
        }
        for system in SYSTEMS:
            values = systems[system]
            row[system] = {
                part: None if values[part] is None else _finite(values[part][j])  # type: ignore[index]
                for part in ("fit", "mean", "low", "high")
            }
            row[system]["rank"] = int(ranks[system][j])
        row["glicko2"]["rd"] = float(glicko.rd[i])
        rows.append(row)
    out["models"] = sorted(rows, key=lambda r: (r["borda_rank"], r["model"]))
    return out


# --------------------------------------------------------------------------- the job


@transaction.atomic
def rankings_request(*, data: Mapping[str, Any], user: Any) -> tuple[Job, bool]:
    """Enqueue a rankings job with the given parameters (ParamsError names a bad one).

    One computation at a time: while a rankings job is queued or running, that job is returned
    with False and nothing is queued (a second one would compute the same thing).
    """
    params = RankingParams.from_dict(data)
    params.criterion_keys()  # an unknown criterion fails here, in the request
    params.check_source()  # so does a judge run that is not (or no longer) finished
    active = (
        Job.objects.select_for_update()
        .filter(kind=JobKind.RANKINGS, status__in=(JobStatus.QUEUED, JobStatus.RUNNING))
        .first()
    )
    if active is not None:
        return active, False
    return enqueue(JobKind.RANKINGS, params.as_dict(), user=user), True


def ranking_store(
    params: RankingParams, *, job: Job | None = None, progress: Progress | None = None
) -> Ranking:
    """Compute the rankings and store them as one Ranking row (written once, complete)."""
    started = time.perf_counter()
    result = rankings_compute(params, progress=progress)
    return Ranking.objects.create(
        job=job,
        source=params.source,
        criterion=params.criterion,
        params=params.as_dict(),
        result=result,
        seconds=time.perf_counter() - started,
    )


def latest_job() -> Job | None:
    return Job.objects.filter(kind=JobKind.RANKINGS).order_by("-created_at", "-pk").first()


def latest_ranking(source: str = SOURCE_HUMAN) -> Ranking | None:
    return Ranking.objects.filter(source=source).order_by("-created_at", "-pk").first()


def latest_judge_rankings() -> list[Ranking]:
    """The latest ranking of each label source other than the experts' (judge runs), in
    source order."""
    # The newest id per source first (ids only), then those rows: portable (SQLite has no
    # DISTINCT ON) and it still reads one stored result per source.
    newest = (
        Ranking.objects.exclude(source=SOURCE_HUMAN)
        .values("source")
        .annotate(last=Max("pk"))
        .values_list("last", flat=True)
    )
    return list(Ranking.objects.filter(pk__in=list(newest)).order_by("source"))


def source_names() -> dict[str, str]:
    """Display name per source key: the experts', and each run a registered source lists."""
    return {SOURCE_HUMAN: _("experts' majority labels"), **dict(label_sources.choices())}
