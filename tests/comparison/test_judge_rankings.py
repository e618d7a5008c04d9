"""comparison with a judge's labels: the label-source registry (judging registers "judge"), a
ranking from a pairwise judge run's final labels, the rank correlations with the experts'
ranking (against scipy), the page beside the experts', and the XLSX / Parquet downloads.

The world is tests/comparison/test_rankings.py's round robin on "overall" (with the experts'
aggregates); the judge labels the same triples: the experts' label with A and B exchanged
(so its ranking is the experts' turned over), except one triple where its three templates
disagree (no majority: left out) and the one-model pair (left out as in the human ranking).
"""

from __future__ import annotations

import io
import math
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np
import openpyxl
import pyarrow.parquet as pq
import pytest
import scipy.stats
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from comparison import tables
from comparison.models import Ranking
from comparison.services import (
    CriterionBattles,
    ParamsError,
    RankingParams,
    battles_from_source,
    rankings_compute,
    rankings_request,
)
from dataset import label_sources
from jobs.models import JobStatus
from judging.models import JudgeConfig, JudgeRun, PairwiseJudgeEstimate, RunKind, RunStatus
from judging.pairwise import NO_MAJORITY
from material.models import LanguageModel
from tests.comparison.test_rankings import ROUND_ROBIN, World
from tests.conftest import PASSWORD, Personas, make_expert
from work.models import Assignment, AssignmentStatus, Estimate, EstimateStatus, Triple

pytestmark = pytest.mark.django_db

TEMPLATES = ("repa_1", "repa_2", "repa_3")
FLIP = {"a": "b", "b": "a", "both_good": "both_good", "both_bad": "both_bad"}
FORMULA = '=HYPERLINK("http://evil","x")'
FORMULA_NAME = f"{FORMULA} 1"  # str(LanguageModel): name and version


class JudgeWorld:
    def __init__(self, personas: Personas) -> None:
        self.personas = personas
        self.world = World(personas.panel_a)
        self.overall: list[Triple] = []
        for i, j, label in ROUND_ROBIN:
            self.world.aggregate(i, j, "overall", label)
            self.overall.append(Triple.objects.latest("pk"))
        self.world.aggregate(2, 2, "overall", "a")  # one model: left out
        self.same_model = Triple.objects.latest("pk")
        self.config = JudgeConfig.objects.create(name="sbs-judge", model_family="giga")

    def run(self, status: str = RunStatus.DONE, *, disagree: int = 4) -> JudgeRun:
        """A pairwise run labelling every overall triple flipped; triple `disagree` gets three
        different labels (no majority)."""
        run = JudgeRun.objects.create(
            config=self.config,
            kind=RunKind.PAIRWISE,
            templates=list(TEMPLATES),
            backend=self.config.backend,
            status=status,
        )
        for n, (triple, (_i, _j, label)) in enumerate(zip(self.overall, ROUND_ROBIN, strict=True)):
            labels = ("a", "b", "both_bad") if n == disagree else (FLIP[label],) * 3
            self.estimates(run, triple, labels)
        self.estimates(run, self.same_model, ("a", "a", ""))
        return run

    def estimates(self, run: JudgeRun, triple: Triple, labels: tuple[str, ...]) -> None:
        for template, label in zip(TEMPLATES, labels, strict=True):
            PairwiseJudgeEstimate.objects.create(
                run=run,
                triple=triple,
                config=self.config,
                template=template,
                shown_label=label,
                label=label,
                parse_ok=bool(label),
            )


@pytest.fixture
def jw(personas: Personas) -> JudgeWorld:
    return JudgeWorld(personas)


def _client(user: Any) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


# ----------------------------------------------------------------- the registry and the battles


def test_judging_registers_its_finished_pairwise_runs(jw: JudgeWorld) -> None:
    done = jw.run()
    jw.run(status=RunStatus.RUNNING)
    assert label_sources.NO_MAJORITY == NO_MAJORITY
    choices = dict(label_sources.choices())
    assert list(choices) == [f"judge:{done.pk}"]
    assert f"judge run {done.pk}" in choices[f"judge:{done.pk}"]
    assert label_sources.parse(f"judge:{done.pk}") == ("judge", done.pk)
    for bad in ("judge:", "judge:-1", "judge:0", "judge:1.5", "robot:1", "human", "judge:١"):
        assert label_sources.parse(bad) is None, bad


def test_a_judge_source_battles_on_the_judge_labels(jw: JudgeWorld) -> None:
    run = jw.run()
    ids = jw.world.ids()
    battles = battles_from_source(f"judge:{run.pk}", ["overall"])["overall"]
    kept = [k for k in range(len(ROUND_ROBIN)) if k != 4]
    assert battles.model_a == [ids[ROUND_ROBIN[k][0]] for k in kept]
    assert battles.model_b == [ids[ROUND_ROBIN[k][1]] for k in kept]
    score = {"a": 1.0, "b": 0.0, "both_good": 0.5, "both_bad": 0.5}
    assert battles.outcome == [score[FLIP[ROUND_ROBIN[k][2]]] for k in kept]
    assert dict(battles.excluded) == {"no_majority": 1, "same_model": 1}
    # The experts' aggregates play no part: the judge's battles differ from the human ones.
    human = battles_from_source("human", ["overall"])["overall"]
    assert human.outcome != battles.outcome


def test_a_judge_ranking_is_the_same_computation_on_the_judge_battles(jw: JudgeWorld) -> None:
    run = jw.run()
    source = f"judge:{run.pk}"
    params = RankingParams(source=source, rounds=0)
    result = rankings_compute(params)
    overall = next(c for c in result["criteria"] if c["key"] == "overall")
    assert overall["n_battles"] == 8
    assert overall["excluded"] == {"no_majority": 1, "same_model": 1}
    # The same rating code on battles built by hand from the judge's labels.
    ids = jw.world.ids()
    by_hand = CriterionBattles("overall", overall["position"])
    score = {"a": 1.0, "b": 0.0, "both_good": 0.5, "both_bad": 0.5}
    for k, (i, j, label) in enumerate(ROUND_ROBIN):
        if k != 4:
            by_hand.model_a.append(ids[i])
            by_hand.model_b.append(ids[j])
            by_hand.outcome.append(score[FLIP[label]])
    expected = rankings_compute(RankingParams(rounds=0), battles={"overall": by_hand})
    assert overall["models"] == expected["criteria"][0]["models"]


def test_the_job_stores_a_judge_ranking_and_refuses_an_unfinished_run(
    jw: JudgeWorld, personas: Personas, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    run = jw.run()
    running = jw.run(status=RunStatus.RUNNING)
    with pytest.raises(ParamsError) as caught:
        rankings_request(data={"source": f"judge:{running.pk}"}, user=personas.admin)
    assert caught.value.field == "source"
    with pytest.raises(ParamsError):
        rankings_request(data={"source": "judge:999999"}, user=personas.admin)
    with django_capture_on_commit_callbacks(execute=True):
        job, queued = rankings_request(
            data={"source": f"judge:{run.pk}", "rounds": "10"}, user=personas.admin
        )
    job.refresh_from_db()
    assert queued and job.status == JobStatus.DONE, job.message
    stored = Ranking.objects.get(job=job)
    assert stored.source == f"judge:{run.pk}"
    assert stored.result == rankings_compute(RankingParams(source=f"judge:{run.pk}", rounds=10))
    # The form posts the source; a bad one is a 400 naming it.
    admin = _client(personas.admin)
    bad = admin.post(reverse("comparison_rankings_recompute"), {"source": "judge:nope"})
    assert bad.status_code == 400 and "source" in bad.content.decode()


# ----------------------------------------------------------------- rank correlations


def _ranking(
    source: str, scores: dict[str, dict[int, float | None]], borda: dict[int, float]
) -> Ranking:
    """A stored ranking of "overall" with the given means per system (None: −∞) and Borda."""
    models = []
    for pk in borda:
        row: dict[str, Any] = {"model": pk, "name": f"M{pk}", "n_battles": 1, "borda": borda[pk]}
        for system in ("elo", "bradley_terry", "glicko2"):
            mean = scores[system][pk]
            row[system] = {"fit": mean, "mean": mean, "low": None, "high": None, "rank": 1}
        row["borda_rank"] = 1
        models.append(row)
    return Ranking.objects.create(
        source=source,
        result={"criteria": [{"key": "overall", "position": 0, "n_battles": 1, "models": models}]},
    )


def test_correlations_equal_scipy_over_the_common_models_with_ties() -> None:
    # Models 1..6 by the experts, 2..7 by the judge (1 and 7 are not common). Ties: the
    # experts' Elo ties 3 and 4, the judge's Bradley–Terry has two −∞ (null), Borda ties.
    human = _ranking(
        "human",
        {
            "elo": {1: 9, 2: 1010, 3: 1000, 4: 1000, 5: 990, 6: 980},
            "bradley_terry": {1: 0, 2: 1020, 3: 1010, 4: None, 5: 990, 6: 1000},
            "glicko2": {1: 0, 2: 1600, 3: 1500, 4: 1400, 5: 1300, 6: 1200},
        },
        {1: 0, 2: 12, 3: 9, 4: 9, 5: 4, 6: 2},
    )
    judge = _ranking(
        "judge:1",
        {
            "elo": {2: 1000, 3: 1020, 4: 1010, 5: 990, 6: 985, 7: 0},
            "bradley_terry": {2: 1001, 3: None, 4: None, 5: 1002, 6: 1003, 7: 0},
            "glicko2": {2: 1200, 3: 1300, 4: 1400, 5: 1500, 6: 1600, 7: 0},
        },
        {2: 12, 3: 12, 4: 6, 5: 6, 6: 0, 7: 0},
    )
    (item,) = tables.rank_correlations(human, judge)
    assert item["key"] == "overall"
    got = {c["system"]: c for c in item["systems"]}
    assert list(got) == ["elo", "bradley_terry", "glicko2", "borda"]
    common = [2, 3, 4, 5, 6]

    def side(ranking: Ranking, system: str) -> list[float]:
        rows = {m["model"]: m for m in ranking.result["criteria"][0]["models"]}
        if system == "borda":
            return [rows[pk]["borda"] for pk in common]
        # scipy has no −∞ arithmetic problem with a finite stand-in below every rating.
        return [
            -1e12 if rows[pk][system]["mean"] is None else rows[pk][system]["mean"] for pk in common
        ]

    for system, corr in got.items():
        x, y = side(human, system), side(judge, system)
        assert corr["n_models"] == 5
        assert corr["kendall_tau_b"] == pytest.approx(
            scipy.stats.kendalltau(x, y, variant="b").statistic
        ), system
        assert corr["spearman"] == pytest.approx(scipy.stats.spearmanr(x, y).statistic), system
    # Glicko-2 reversed exactly: −1 both ways.
    assert got["glicko2"]["kendall_tau_b"] == pytest.approx(-1.0)
    assert got["glicko2"]["spearman"] == pytest.approx(-1.0)
    assert not math.isclose(got["elo"]["kendall_tau_b"], got["elo"]["spearman"])


def test_a_flipped_judge_correlates_negatively_on_the_page(
    jw: JudgeWorld, personas: Personas
) -> None:
    run = jw.run(disagree=-1)  # every triple flipped, none left without a majority
    human = Ranking.objects.create(result=rankings_compute(RankingParams(rounds=0)))
    source = f"judge:{run.pk}"
    judge = Ranking.objects.create(
        source=source, result=rankings_compute(RankingParams(source=source, rounds=0))
    )
    (item,) = [c for c in tables.rank_correlations(human, judge) if c["key"] == "overall"]
    got = {c["system"]: c for c in item["systems"]}
    # Flipping every label turns Bradley–Terry's order over exactly (an MLE symmetric in wins).
    assert got["bradley_terry"]["kendall_tau_b"] == pytest.approx(-1.0)
    assert got["bradley_terry"]["n_models"] == 3
    page = _client(personas.supervisor_a).get(reverse("comparison_rankings")).content.decode()
    assert f'id="judge-{judge.pk}"' in page and "Kendall τ-b" in page
    assert f"judge run {run.pk}" in page
    assert "-1.000" in page  # Bradley–Terry's tau-b (formatted with three decimals)
    admin_page = _client(personas.admin).get(reverse("comparison_rankings")).content.decode()
    assert f'<option value="{source}"' in admin_page  # the form offers the finished run


# ----------------------------------------------------------------- the downloads


def _label(triple: Triple, experts: list[Any], labels: tuple[str, ...]) -> None:
    """The experts' submitted labels of a triple (for the agreement table)."""
    now = timezone.now()
    assert triple.pair is not None
    for slot, (expert, label) in enumerate(zip(experts, labels, strict=True), 1):
        assignment, _ = Assignment.objects.get_or_create(
            expert=expert,
            answer=triple.pair.answer_a,
            pair=triple.pair,
            panel=triple.panel,
            defaults={"status": AssignmentStatus.SUBMITTED, "submitted_at": now},
        )
        Estimate.objects.create(
            triple=triple,
            assignment=assignment,
            expert=expert,
            slot=slot,
            status=EstimateStatus.SUBMITTED,
            label=label,
            submitted_at=now,
        )


@pytest.fixture
def stored(jw: JudgeWorld, personas: Personas) -> dict[str, Any]:
    """A human and a judge ranking stored; a model with a formula-like name; expert labels in
    panel A (overall) and panel B (factuality)."""
    LanguageModel.objects.filter(pk=jw.world.ids()[0]).update(name=FORMULA, version="1")
    run = jw.run()
    source = f"judge:{run.pk}"
    human = Ranking.objects.create(result=rankings_compute(RankingParams(rounds=5)))
    judge = Ranking.objects.create(
        source=source, result=rankings_compute(RankingParams(source=source, rounds=5))
    )
    experts = [make_expert(f"dl_expert_{i}", personas.panel_a, personas.panel_b) for i in range(3)]
    for triple in jw.overall[:3]:
        _label(triple, experts, ("a", "a", "b"))
    jw.world.panel = personas.panel_b
    jw.world.aggregate(0, 1, "factuality", "a")
    _label(Triple.objects.latest("pk"), experts, ("b", "b", "b"))
    return {"human": human, "judge": judge, "source": source}


def _rows(table: Any) -> list[dict[str, Any]]:
    return list(table.to_pylist())


def test_the_parquet_download_has_the_rankings_correlations_and_agreement(
    stored: dict[str, Any], personas: Personas
) -> None:
    response = _client(personas.admin).get(reverse("comparison_rankings_parquet"))
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment;")
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    assert sorted(archive.namelist()) == [
        "agreement.parquet",
        "rank_correlation.parquet",
        "rankings.parquet",
    ]
    read = {n.split(".")[0]: pq.read_table(io.BytesIO(archive.read(n))) for n in archive.namelist()}
    rankings = _rows(read["rankings"])
    human, judge = stored["human"], stored["judge"]
    # One row per source × criterion × model × system.
    expected = sum(len(c["models"]) * 3 for r in (human, judge) for c in r.result["criteria"])
    assert len(rankings) == expected
    assert {r["source"] for r in rankings} == {"human", stored["source"]}
    row = next(
        r
        for r in rankings
        if r["source"] == stored["source"]
        and r["criterion"] == "overall"
        and r["system"] == "elo"
        and r["model"] == "Beta 1"
    )
    model = next(m for m in judge.result["criteria"][-1]["models"] if m["name"] == "Beta 1")
    assert (row["mean"], row["low"], row["high"], row["rank"], row["borda"]) == (
        model["elo"]["mean"],
        model["elo"]["low"],
        model["elo"]["high"],
        model["elo"]["rank"],
        model["borda"],
    )
    correlations = _rows(read["rank_correlation"])
    overall = {r["system"]: r for r in correlations if r["criterion"] == "overall"}
    assert set(overall) == {"elo", "bradley_terry", "glicko2", "borda"}
    (item,) = [c for c in tables.rank_correlations(human, judge) if c["key"] == "overall"]
    for corr in item["systems"]:
        assert overall[corr["system"]]["kendall_tau_b"] == corr["kendall_tau_b"]
    agreement = _rows(read["agreement"])
    # Admins: both panels. Panel A: 3 complete items on overall, each a 2-of-3 majority.
    by_panel = {(r["panel"], r["criterion"]): r for r in agreement}
    assert set(by_panel) == {
        (personas.panel_a.key, "overall"),
        (personas.panel_b.key, "factuality"),
    }
    a = by_panel[(personas.panel_a.key, "overall")]
    assert (a["items"], a["majority_vote_rate"], a["unanimity_rate"]) == (3, 1.0, 0.0)
    b = by_panel[(personas.panel_b.key, "factuality")]
    assert (b["items"], b["unanimity_rate"]) == (1, 1.0)


def test_supervisors_get_the_agreement_of_their_panels_only(
    stored: dict[str, Any], personas: Personas
) -> None:
    response = _client(personas.supervisor_b).get(reverse("comparison_rankings_parquet"))
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    agreement = _rows(pq.read_table(io.BytesIO(archive.read("agreement.parquet"))))
    assert {r["panel"] for r in agreement} == {personas.panel_b.key}
    book = openpyxl.load_workbook(
        io.BytesIO(_client(personas.supervisor_a).get(reverse("comparison_rankings_xlsx")).content)
    )
    panels = {row[0] for row in book["agreement"].iter_rows(min_row=2, values_only=True)}
    assert panels == {personas.panel_a.key}
    # Experts get nothing.
    expert = _client(personas.expert_a.user)
    assert expert.get(reverse("comparison_rankings_xlsx")).status_code == 403
    assert expert.get(reverse("comparison_rankings_parquet")).status_code == 403


def test_the_xlsx_download_opens_and_neutralises_a_formula_like_name(
    stored: dict[str, Any], personas: Personas
) -> None:
    response = _client(personas.admin).get(reverse("comparison_rankings_xlsx"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith(
        "application/vnd.openxmlformats-officedocument.spreadsheetml"
    )
    book = openpyxl.load_workbook(io.BytesIO(response.content))
    assert book.sheetnames == ["README", "rankings", "rank_correlation", "agreement"]
    sheet = book["rankings"]
    header = [c.value for c in sheet[1]]
    assert header[:9] == [
        "source",
        "source_name",
        "ranking_id",
        "computed_at",
        "criterion",
        "model_id",
        "model",
        "n_battles",
        "system",
    ]
    column = header.index("model") + 1
    formula_cells = [
        row[column - 1]
        for row in sheet.iter_rows(min_row=2)
        if row[column - 1].value == FORMULA_NAME
    ]
    assert formula_cells  # the name is there, as text
    for cell in formula_cells:
        assert cell.data_type == "s" and cell.quotePrefix
    n_rows = sheet.max_row - 1
    human, judge = stored["human"], stored["judge"]
    assert n_rows == sum(len(c["models"]) * 3 for r in (human, judge) for c in r.result["criteria"])
    means = [
        row[header.index("mean")]
        for row in sheet.iter_rows(min_row=2, values_only=True)
        if row[header.index("system")] == "glicko2"
    ]
    assert all(isinstance(m, float) for m in means) and np.isfinite(means).all()


def test_a_judge_ranking_without_a_human_one_is_shown_alone(
    jw: JudgeWorld, personas: Personas
) -> None:
    run = jw.run()
    source = f"judge:{run.pk}"
    Ranking.objects.create(
        source=source, result=rankings_compute(RankingParams(source=source, rounds=0))
    )
    page = _client(personas.admin).get(reverse("comparison_rankings"))
    text = page.content.decode()
    assert page.status_code == 200
    assert "No ranking of the experts for this criterion to compare with." in text
    assert "— / #1" in text  # no experts' rank beside the judge's
