"""comparison: battles from the pairwise aggregates, the rankings against computations written
here (Elo's update loop, Bradley–Terry's MM, Glicko-2's steps, Borda's m − k), the job and the
page.

The world: three models in a round robin on "overall" (every pair meets three times, wins,
losses and both kinds of tie), plus aggregates that must be left out: no consensus, a pair of
one model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse

from comparison.models import Ranking
from comparison.services import (
    ParamsError,
    RankingParams,
    battles_from_aggregates,
    rankings_compute,
    rankings_request,
)
from dataset.models import TripleAggregate
from jobs.models import Job, JobKind, JobStatus
from lib.ratings import bootstrap
from material.models import Answer, AnswerPair, Instruction, LanguageModel
from panels.models import Panel
from taxonomy.models import ComparisonCriterion, Task
from taxonomy.services import comparison_criteria
from tests.conftest import PASSWORD, Personas, make_expert
from work.models import Triple

pytestmark = pytest.mark.django_db

# (model A, model B, majority label) on "overall", in triple order: 0, 1, 2 index MODELS.
ROUND_ROBIN = [
    (0, 1, "a"),
    (1, 2, "both_good"),
    (2, 0, "b"),
    (1, 0, "a"),
    (2, 1, "a"),
    (0, 2, "both_bad"),
    (0, 1, "a"),
    (2, 1, "b"),
    (2, 0, "a"),
]
MODELS = ["Alpha", "Beta", "Gamma"]


class World:
    def __init__(self, panel: Panel) -> None:
        self.panel = panel
        comparison_criteria()
        task = Task.objects.filter(is_leaf=True).first()
        assert task is not None
        self.task = task
        self.models = [LanguageModel.objects.create(name=name, version="1") for name in MODELS]
        self.n = 0

    def aggregate(self, i: int, j: int, key: str, label: str = "", reason: str = "") -> None:
        """One pair of models i and j (A, B), its triple on criterion `key`, its aggregate."""
        self.n += 1
        instruction = Instruction.objects.create(
            external_id=f"cmp-{self.n}",
            text=f"Сравните ответы №{self.n}.",
            task=self.task,
            style=self.task.style,
            complexity="medium",
        )
        answers = [
            Answer.objects.create(
                instruction=instruction,
                model=self.models[m],
                text=f"Ответ {side} №{self.n}",
                text_hash=f"cmp-{self.n}-{side}",
            )
            for side, m in (("a", i), ("b", j))
        ]
        pair = AnswerPair.objects.create(
            instruction=instruction, answer_a=answers[0], answer_b=answers[1]
        )
        triple = Triple.objects.create(
            kind="pairwise",
            answer=answers[0],
            pair=pair,
            comparison_criterion=ComparisonCriterion.objects.get(key=key),
            panel=self.panel,
            required_overlap=3,
        )
        TripleAggregate.objects.create(
            triple=triple, n_estimates=3, label=label, excluded_reason=reason
        )

    def ids(self) -> list[int]:
        return [m.pk for m in self.models]


@pytest.fixture
def world(personas: Personas) -> World:
    w = World(personas.panel_a)
    for i, j, label in ROUND_ROBIN:
        w.aggregate(i, j, "overall", label)
    # Left out: two without a majority, one pair of one model (an import may make one).
    w.aggregate(0, 1, "overall", reason="no_consensus")
    w.aggregate(1, 2, "overall", reason="no_consensus")
    w.aggregate(2, 2, "overall", "a")
    # Another criterion: one battle and one without a majority.
    w.aggregate(1, 0, "factuality", "b")
    w.aggregate(0, 2, "factuality", reason="no_consensus")
    return w


def _outcomes(both_good: float = 0.5, both_bad: float = 0.5) -> list[float]:
    score = {"a": 1.0, "b": 0.0, "both_good": both_good, "both_bad": both_bad}
    return [score[label] for _, _, label in ROUND_ROBIN]


# ----------------------------------------------------------------- independent computations


def elo_by_hand(battles: list[tuple[int, int, float]], m: int) -> list[float]:
    """Arena's online Elo: K 4, scale 400, base 10, from 1000; both sides from before."""
    rating = [1000.0] * m
    for i, j, s in battles:
        expected_i = 1 / (1 + 10 ** ((rating[j] - rating[i]) / 400))
        expected_j = 1 / (1 + 10 ** ((rating[i] - rating[j]) / 400))
        rating[i], rating[j] = (
            rating[i] + 4 * (s - expected_i),
            rating[j] + 4 * (1 - s - expected_j),
        )
    return rating


def bt_by_hand(battles: list[tuple[int, int, float]], m: int, iterations: int = 50) -> list[float]:
    """Hunter's MM (a tie half a win each), all at once from p = 1; 400·log10 p centred at 1000."""
    wins = [0.0] * m
    games = [[0.0] * m for _ in range(m)]
    for i, j, s in battles:
        wins[i] += s
        wins[j] += 1 - s
        games[i][j] += 1
        games[j][i] += 1
    p = [1.0] * m
    for _ in range(iterations):
        p = [
            wins[i] / sum(games[i][j] / (p[i] + p[j]) for j in range(m) if j != i) for i in range(m)
        ]
    logs = [math.log10(x) for x in p]
    centre = sum(logs) / m
    return [400 * (x - centre) + 1000 for x in logs]


Q = 173.7178


def glicko_game(
    r: float, rd: float, sigma: float, r_j: float, rd_j: float, s: float, tau: float = 0.5
) -> tuple[float, float, float]:
    """Glickman's steps 2-8 for one player and one game (his Illinois iteration, ε 1e-6)."""
    mu, phi, mu_j, phi_j = (r - 1500) / Q, rd / Q, (r_j - 1500) / Q, rd_j / Q
    g = 1 / math.sqrt(1 + 3 * phi_j**2 / math.pi**2)
    e = 1 / (1 + math.exp(-g * (mu - mu_j)))
    v = 1 / (g**2 * e * (1 - e))
    delta = v * g * (s - e)
    a = math.log(sigma**2)

    def f(x: float) -> float:
        ex = math.exp(x)
        return ex * (delta**2 - phi**2 - v - ex) / (2 * (phi**2 + v + ex) ** 2) - (x - a) / tau**2

    big_a = a
    if delta**2 > phi**2 + v:
        big_b = math.log(delta**2 - phi**2 - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    while abs(big_b - big_a) > 1e-6:
        c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a /= 2
        big_b, f_b = c, f_c
    sigma_new = math.exp(big_a / 2)
    phi_star = math.sqrt(phi**2 + sigma_new**2)
    phi_new = 1 / math.sqrt(1 / phi_star**2 + 1 / v)
    mu_new = mu + phi_new**2 * g * (s - e)
    return Q * mu_new + 1500, Q * phi_new, sigma_new


def glicko_by_hand(battles: list[tuple[int, int, float]], m: int) -> list[float]:
    """Every battle a rating period of its two models, both from their values before."""
    state = [(1500.0, 350.0, 0.06)] * m
    for i, j, s in battles:
        (ri, rdi, si), (rj, rdj, sj) = state[i], state[j]
        state[i] = glicko_game(ri, rdi, si, rj, rdj, s)
        state[j] = glicko_game(rj, rdj, sj, ri, rdi, 1 - s)
    return [x[0] for x in state]


def borda_by_hand(scores: list[list[float]]) -> list[int]:
    """Each system ranks the m models; the k-th (1-based) gets m − k points."""
    m = len(scores[0])
    points = [0] * m
    for values in scores:
        order = sorted(range(m), key=lambda i: -values[i])
        for k, i in enumerate(order, start=1):
            points[i] += m - k
    return points


# ----------------------------------------------------------------- battles


def test_battles_leave_out_no_consensus_and_one_model_pairs_and_count_them(world: World) -> None:
    battles = battles_from_aggregates()
    overall, factuality = battles["overall"], battles["factuality"]
    ids = world.ids()
    assert overall.model_a == [ids[i] for i, _, _ in ROUND_ROBIN]
    assert overall.model_b == [ids[j] for _, j, _ in ROUND_ROBIN]
    assert overall.outcome == _outcomes()
    assert dict(overall.excluded) == {"no_consensus": 2, "same_model": 1}
    assert (factuality.model_a, factuality.outcome) == ([ids[1]], [0.0])
    assert dict(factuality.excluded) == {"no_consensus": 1}
    # Criteria in the set's order; one key asked for gives that key only.
    assert list(battles)[-1] == "overall" and list(battles).index("factuality") < len(battles) - 1
    assert list(battles_from_aggregates(["factuality"])) == ["factuality"]


def test_ties_follow_the_configured_mapping(world: World) -> None:
    battles = battles_from_aggregates(["overall"], both_good=1.0, both_bad=0.0)
    assert battles["overall"].outcome == _outcomes(both_good=1.0, both_bad=0.0)
    result = rankings_compute(
        RankingParams(criterion="overall", rounds=0, both_good=1.0, both_bad=0.0)
    )
    elo = {row["model"]: row["elo"]["fit"] for row in result["criteria"][0]["models"]}
    hand = elo_by_hand(
        [(i, j, s) for (i, j, _), s in zip(ROUND_ROBIN, _outcomes(1.0, 0.0), strict=True)], 3
    )
    assert [elo[pk] for pk in world.ids()] == pytest.approx(hand, abs=1e-9)
    with pytest.raises(ValueError, match="both_bad"):
        battles_from_aggregates(both_bad=1.5)


# ----------------------------------------------------------------- ratings


def test_plain_fit_equals_the_computations_written_here(world: World) -> None:
    result = rankings_compute(RankingParams(rounds=0))
    by_key = {c["key"]: c for c in result["criteria"]}
    overall = by_key["overall"]
    assert overall["n_battles"] == 9
    assert overall["excluded"] == {"no_consensus": 2, "same_model": 1}
    assert result["excluded"] == {"no_consensus": 3, "same_model": 1}
    assert result["n_battles"] == 10 and result["n_models"] == 3
    rows = {row["model"]: row for row in overall["models"]}
    ids = world.ids()
    battles = [(i, j, s) for (i, j, _), s in zip(ROUND_ROBIN, _outcomes(), strict=True)]
    hand = {
        "elo": elo_by_hand(battles, 3),
        "bradley_terry": bt_by_hand(battles, 3),
        "glicko2": glicko_by_hand(battles, 3),
    }
    for system, values in hand.items():
        got = [rows[pk][system]["fit"] for pk in ids]
        assert got == pytest.approx(values, abs=1e-6), system
        # Without a bootstrap the mean is the fit and there is no interval.
        assert [rows[pk][system]["mean"] for pk in ids] == got
        assert all(rows[pk][system]["low"] is None for pk in ids)
        ranks = [rows[pk][system]["rank"] for pk in ids]
        assert ranks == [sorted(values, reverse=True).index(v) + 1 for v in values], system
    assert [rows[pk]["borda"] for pk in ids] == borda_by_hand(list(hand.values()))
    assert [rows[pk]["n_battles"] for pk in ids] == [6, 6, 6]
    assert [rows[pk]["name"] for pk in ids] == ["Alpha 1", "Beta 1", "Gamma 1"]
    # Best Borda first.
    points = [row["borda"] for row in overall["models"]]
    assert points == sorted(points, reverse=True)
    # Factuality: one battle, Alpha (B) beat Beta (A); Gamma did not play it and is not ranked.
    fact = by_key["factuality"]
    assert [row["model"] for row in fact["models"]] == [ids[0], ids[1]]
    assert fact["models"][1]["bradley_terry"]["fit"] is None  # no win or tie: -inf, stored null


def test_bootstrap_is_lib_ratings_seeded_per_criterion(world: World) -> None:
    params = RankingParams(criterion="overall", rounds=40, seed=7)
    result = rankings_compute(params)
    again = rankings_compute(params)
    assert result == again  # seeded: the same rounds
    rows = {row["model"]: row for row in result["criteria"][0]["models"]}
    ids = world.ids()
    reference = bootstrap(
        [i for i, _, _ in ROUND_ROBIN],
        [j for _, j, _ in ROUND_ROBIN],
        _outcomes(),
        3,
        rounds=40,
        seed=np.random.default_rng(7),
    )
    for system in ("elo", "bradley_terry", "glicko2"):
        interval = getattr(reference, system)
        for k, pk in enumerate(ids):
            got = rows[pk][system]
            finite = [
                None if not math.isfinite(x) else float(x)
                for x in (interval.mean[k], interval.low[k], interval.high[k])
            ]
            assert [got["mean"], got["low"], got["high"]] == pytest.approx(finite), system
            if got["low"] is not None and got["high"] is not None:
                assert got["low"] <= got["mean"] <= got["high"]


def test_parameters_are_checked_by_name(world: World) -> None:
    for data, name in [
        ({"rounds": "-1"}, "rounds"),
        ({"rounds": "abc"}, "rounds"),
        ({"seed": "1.5"}, "seed"),
        ({"elo_k": "0"}, "elo_k"),
        ({"both_good": "2"}, "both_good"),
        ({"glicko_tau": "nan"}, "glicko_tau"),
        ({"source": "robot:3"}, "source"),
        ({"source": "judge:x"}, "source"),
        ({"iterations": "5"}, "iterations"),
    ]:
        with pytest.raises(ParamsError) as caught:
            RankingParams.from_dict(data)
        assert caught.value.field == name
    with pytest.raises(ParamsError) as caught:
        RankingParams(criterion="no-such-key").criterion_keys()
    assert caught.value.field == "criterion"
    assert RankingParams.from_dict({"rounds": "", "seed": "3"}) == RankingParams(seed=3)


# ----------------------------------------------------------------- the job and the page


def test_the_job_stores_a_ranking(
    world: World, personas: Personas, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        job, queued = rankings_request(data={"rounds": "20", "seed": "1"}, user=personas.admin)
    assert queued
    job.refresh_from_db()
    assert job.kind == JobKind.RANKINGS and job.status == JobStatus.DONE, job.message
    ranking = Ranking.objects.get(job=job)
    assert job.result["ranking"] == ranking.pk
    assert (job.progress_done, job.progress_total) == (3, 3)
    assert ranking.params["rounds"] == 20 and ranking.params["elo_k"] == 4.0
    assert ranking.criterion == "all" and ranking.source == "human"
    assert ranking.result == rankings_compute(RankingParams(rounds=20, seed=1))


def test_one_computation_at_a_time(world: World, personas: Personas) -> None:
    # Tests run Celery eagerly on commit; without the commit the job stays queued.
    first, queued = rankings_request(data={}, user=personas.admin)
    second, again = rankings_request(data={}, user=personas.admin)
    assert queued and not again and second == first
    assert Job.objects.filter(kind=JobKind.RANKINGS).count() == 1


def _client(user: Any) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def test_page_shows_models_and_intervals_to_supervisors_and_nothing_to_experts(
    world: World, personas: Personas
) -> None:
    Ranking.objects.create(
        params=RankingParams(rounds=20).as_dict(),
        result=rankings_compute(RankingParams(rounds=20)),
    )
    url = reverse("comparison_rankings")
    page = _client(personas.supervisor_a).get(url)
    assert page.status_code == 200
    text = page.content.decode()
    assert "Alpha 1" in text and "<svg" in text and text.count('class="intervals"') == 6
    assert "comparison/rankings/recompute" not in text  # no recompute button for supervisors
    assert 'href="/comparison/rankings/"' in text  # the navigation link
    assert '<script src="http' not in text
    admin = _client(personas.admin).get(url).content.decode()
    assert "comparison/rankings/recompute" in admin
    expert = _client(personas.expert_a.user)
    assert expert.get(url).status_code == 403
    assert 'href="/comparison/rankings/"' not in expert.get(reverse("queue")).content.decode()
    # A supervisor who is also an expert is an expert: no models for him either.
    sup_expert = make_expert("sup_and_expert", personas.panel_a).user
    personas.panel_b.supervisors.add(sup_expert)
    assert _client(sup_expert).get(url).status_code == 403


def test_recompute_is_for_admins_and_names_a_bad_field(world: World, personas: Personas) -> None:
    url = reverse("comparison_rankings_recompute")
    assert _client(personas.supervisor_a).post(url).status_code == 403
    admin = _client(personas.admin)
    bad = admin.post(url, {"rounds": "-5"})
    assert bad.status_code == 400 and "rounds" in bad.content.decode()
    assert not Job.objects.filter(kind=JobKind.RANKINGS).exists()
    unknown = admin.post(url, {"criterion": "nope"})
    assert unknown.status_code == 400 and "criterion" in unknown.content.decode()
    ok = admin.post(url, {"criterion": "overall", "rounds": "10"})
    assert ok.status_code == 302
    job = Job.objects.get(kind=JobKind.RANKINGS)
    assert job.params["criterion"] == "overall" and job.params["rounds"] == 10
    # The page shows the job's progress.
    assert "progress" in admin.get(reverse("comparison_rankings")).content.decode()
