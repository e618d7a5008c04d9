"""Leaderboards: the snapshot's rows from expert verdicts and a judge's scores against a plain
computation, the filters, the baselines, the visibility for every persona, publishing audited,
no output on any page."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from dataset.models import EXCLUDED_CRITICAL, TripleAggregate
from judging.models import JudgeConfig, JudgeEstimate, JudgeRun, RunKind, RunStatus
from leaderboards.models import (
    GateRule,
    Leaderboard,
    LeaderboardSnapshot,
    Visibility,
    VisibilityChange,
)
from leaderboards.services import EXPERTS, snapshot_store
from leaderboards.versions import version_current, version_cut
from material.models import Answer, LanguageModel
from participants.models import Participant
from taxonomy.models import Criterion, CriterionGroup
from tests.conftest import Personas, make_user
from work.models import Triple

pytestmark = pytest.mark.django_db

SECRET = "Секретный ответ модели"


@dataclass
class World:
    board: Leaderboard
    answers: dict[str, list[Answer]]
    general: list[Criterion]
    critical: Criterion
    triples: dict[tuple[int, int], Triple]


def _criteria() -> tuple[list[Criterion], Criterion]:
    general = [
        c
        for c in Criterion.objects.filter(group=CriterionGroup.GENERAL, rubric__isnull=False)
        .select_related("rubric")
        .order_by("pk")
        if c.rubric is not None and c.rubric.values == [0, 1, 2]
    ][:2]
    critical = Criterion.objects.filter(group=CriterionGroup.CRITICAL, rubric__isnull=False).first()
    assert len(general) == 2 and critical is not None
    return general, critical


# Verdicts (means on the 0–2 scale) of each answer on the two general criteria, and whether its
# critical criterion is violated.
VERDICTS = {
    "Alpha": [((2.0, 1.0), False), ((2.0, 2.0), True)],
    "Beta": [((1.0, 0.0), False), ((2.0, 1.0), False)],
    "Human": [((2.0, 2.0), False)],
}


@pytest.fixture
def world(personas: Personas, make_answer: Callable[..., Answer]) -> World:
    general, critical = _criteria()
    panel = personas.panel_a
    answers: dict[str, list[Answer]] = {}
    triples = {}
    for model, rows in VERDICTS.items():
        for verdicts, violated in rows:
            answer = make_answer(model=model, text=SECRET)
            answers.setdefault(model, []).append(answer)
            # The general criteria's verdicts (dropped from the dataset by rule 2 when the
            # answer violates its critical criterion), then the critical criterion's.
            reason = EXCLUDED_CRITICAL if violated else ""
            cells = [(c, mean, reason) for c, mean in zip(general, verdicts, strict=True)]
            for criterion, mean, excluded in [*cells, (critical, float(violated), "")]:
                triple = Triple.objects.create(
                    answer=answer,
                    criterion=criterion,
                    rubric=criterion.rubric,
                    group=criterion.group,
                    panel=panel,
                    required_overlap=2,
                )
                triples[(answer.pk, criterion.pk)] = triple
                TripleAggregate.objects.create(
                    triple=triple, n_estimates=2, mean=mean, excluded_reason=excluded
                )
    LanguageModel.objects.filter(name="Human").update(provider="human")
    # The rows below are computed by hand under the "any vote" rule (a violated answer scores 0);
    # the other rules have tests of their own.
    board = Leaderboard.objects.create(slug="pollux", title="POLLUX", gate_rule=GateRule.ANY)
    return World(board, answers, general, critical, triples)


def expected(model: str) -> float:
    """The gated mean of normalised verdicts, by hand: a violated answer scores 0."""
    values = [0.0 if bad else v / 2 for verdicts, bad in VERDICTS[model] for v in verdicts]
    return sum(values) / len(values)


def rows_of(snapshot: LeaderboardSnapshot, source: str = EXPERTS) -> dict[str, dict[str, Any]]:
    (found,) = [s for s in snapshot.data["sources"] if s["key"] == source]
    names = dict(LanguageModel.objects.values_list("pk", "name"))
    return {names[r["model"]]: r for r in found["models"]}


def test_the_expert_rows_are_gated_means_with_intervals(world: World) -> None:
    snapshot = snapshot_store(world.board, rounds=300)
    rows = rows_of(snapshot)
    for model in VERDICTS:
        assert rows[model]["mean"] == pytest.approx(expected(model))
        assert rows[model]["low"] <= rows[model]["mean"] <= rows[model]["high"]
    assert rows["Alpha"]["gated_answers"] == 1 and rows["Beta"]["gated_answers"] == 0
    assert snapshot.data["models"][str(world.answers["Human"][0].model_id)]["human"] is True
    # The random baseline: uniform 0–2 verdicts (mean 1/2), gated with probability 1/2 by the
    # binary critical criterion: 1/4.
    (experts,) = [s for s in snapshot.data["sources"] if s["key"] == EXPERTS]
    assert experts["random"]["mean"] == pytest.approx(0.25)


def test_a_judges_scores_are_a_source_of_their_own(world: World, personas: Personas) -> None:
    config = JudgeConfig.objects.create(name="tiny-judge", backend="echo")
    run = JudgeRun.objects.create(
        config=config, kind=RunKind.POINTWISE, backend="echo", status=RunStatus.DONE
    )
    # The judge gives every general criterion 2 and flags Beta's first answer as critical.
    beta_first = world.answers["Beta"][0].pk
    for (answer_id, criterion_id), triple in world.triples.items():
        critical = criterion_id == world.critical.pk
        score = (1.0 if answer_id == beta_first else 0.0) if critical else 2.0
        JudgeEstimate.objects.create(
            run=run, triple=triple, config=config, score=score, parse_ok=True
        )
    snapshot = snapshot_store(world.board, rounds=0)
    judge = rows_of(snapshot, f"judge:{config.pk}")
    assert judge["Alpha"]["mean"] == 1.0 and judge["Human"]["mean"] == 1.0
    assert judge["Beta"]["mean"] == pytest.approx(0.5)  # one of two answers gated


def test_the_page_filters_and_never_shows_an_output(world: World, personas: Personas) -> None:
    snapshot_store(world.board, rounds=100)
    client = Client()
    client.force_login(personas.admin)
    url = reverse("leaderboard", args=["pollux"])
    page = client.get(url).content.decode()
    assert SECRET not in page and "Alpha" in page and "random baseline" in page
    assert page.index("Human") < page.index("Alpha")  # sorted by score, the best first
    # Filtered on the first general criterion: Beta's answers are 1 and 2 → 0.75, reported on
    # POLLUX's 0–2 scale as 1.5.
    criterion = world.general[0].pk
    page = client.get(url, {"criterion": criterion}).content.decode()
    assert "1.500" in page and "random baseline" not in page


@pytest.mark.parametrize(
    ("visibility", "expected_codes"),
    [
        # anon, expert, supervisor (not an expert), admin, participant, plain user
        (Visibility.PRIVATE, ("login", 403, 200, 200, 403, 403)),
        (Visibility.INTERNAL, ("login", 403, 200, 200, 200, 200)),
        (Visibility.PUBLIC, (200, 200, 200, 200, 200, 200)),
    ],
)
def test_each_visibility_for_each_persona(
    world: World, personas: Personas, visibility: str, expected_codes: tuple[Any, ...]
) -> None:
    Leaderboard.objects.filter(pk=world.board.pk).update(visibility=visibility)
    participant = make_user("participant_1")
    Participant.objects.create(user=participant, organisation="Lab", approved=True)
    users = [
        None,
        personas.expert_a.user,
        personas.supervisor_a,
        personas.admin,
        participant,
        make_user("plain"),
    ]
    url = reverse("leaderboard", args=["pollux"])
    for user, code in zip(users, expected_codes, strict=True):
        client = Client()
        if user is not None:
            client.force_login(user)
        response = client.get(url)
        if code == "login":
            assert response.status_code == 302 and "/accounts/login/" in response["Location"]
        else:
            assert response.status_code == code, (user, visibility)
        listed = "pollux" in client.get(reverse("leaderboards")).content.decode()
        assert listed == (code == 200)


def test_publishing_is_an_admins_audited_action(world: World, personas: Personas) -> None:
    url = reverse("leaderboard_visibility", args=["pollux"])
    for user in (personas.supervisor_a, personas.expert_a.user):
        client = Client()
        client.force_login(user)
        assert client.post(url, {"visibility": "public"}).status_code == 403
    admin = Client()
    admin.force_login(personas.admin)
    assert admin.post(url, {"visibility": "loud"}).status_code == 400
    assert admin.post(url, {"visibility": "public", "reason": "paper"}).status_code == 302
    world.board.refresh_from_db()
    assert world.board.visibility == Visibility.PUBLIC
    change = VisibilityChange.objects.get()
    assert (change.old, change.new, change.reason, change.actor) == (
        "private",
        "public",
        "paper",
        personas.admin,
    )
    assert Client().get(reverse("leaderboard", args=["pollux"])).status_code == 200


def test_an_admin_creates_a_board_and_its_snapshot_is_computed(
    world: World, personas: Personas, django_capture_on_commit_callbacks: Any
) -> None:
    admin = Client()
    admin.force_login(personas.admin)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post(reverse("leaderboard_create"), {"slug": "all", "title": "All"})
    assert response.status_code == 302
    board = Leaderboard.objects.get(slug="all")
    # Celery runs eagerly in the tests: the job has computed the first snapshot.
    snapshot = LeaderboardSnapshot.objects.get(leaderboard=board)
    assert rows_of(snapshot)["Beta"]["mean"] == pytest.approx(expected("Beta"))
    assert (
        admin.post(reverse("leaderboard_create"), {"slug": "new", "title": "x"}).status_code == 400
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert admin.post(reverse("leaderboard_refresh", args=["all"])).status_code == 302
    assert LeaderboardSnapshot.objects.filter(leaderboard=board).count() == 2


def test_a_models_page_shows_its_profile_and_the_comparison_both_models(
    world: World, personas: Personas
) -> None:
    snapshot_store(world.board, rounds=50)
    Leaderboard.objects.filter(pk=world.board.pk).update(visibility=Visibility.PUBLIC)
    alpha = world.answers["Alpha"][0].model_id
    beta = world.answers["Beta"][0].model_id
    client = Client()
    page = client.get(reverse("leaderboard_model", args=["pollux", alpha])).content.decode()
    assert "<svg" in page and "Alpha" in page and SECRET not in page
    # Alpha's criteria: the first general one 1 and 0 (gated) → 0.5, the second 0.5 and 0 →
    # 0.25; reported on the 0–2 scale: 1.0 and 0.5.
    strongest = re.search(r'<ol id="strongest"><li>(.*?)</li>', page)
    weakest = re.search(r'<ol id="weakest"><li>(.*?)</li>', page)
    assert strongest and re.search(r"1[.,]000", strongest.group(1))
    assert weakest and re.search(r"0[.,]500", weakest.group(1))
    assert client.get(reverse("leaderboard_model", args=["pollux", 999999])).status_code == 404
    url = reverse("leaderboard_compare", args=["pollux"])
    page = client.get(url, {"a": alpha, "b": beta}).content.decode()
    assert "Alpha" in page and "Beta" in page and "compare-groups" in page
    assert client.get(url, {"a": str(alpha), "b": "x"}).status_code == 404
    # The page is the board's: private again, a visitor is sent to log in.
    Leaderboard.objects.filter(pk=world.board.pk).update(visibility=Visibility.PRIVATE)
    response = client.get(reverse("leaderboard_model", args=["pollux", alpha]))
    assert response.status_code == 302


def test_a_gated_answer_counts_0_even_when_its_critical_triple_left_the_dataset(
    world: World,
) -> None:
    # Alpha's violating answer: its critical triple dropped for too few estimates.
    bad = world.answers["Alpha"][1]
    TripleAggregate.objects.filter(triple=world.triples[(bad.pk, world.critical.pk)]).update(
        excluded_reason="few_estimates"
    )
    rows = rows_of(snapshot_store(world.board, rounds=0))
    assert rows["Alpha"]["mean"] == pytest.approx(expected("Alpha"))


def test_criteria_of_one_name_are_told_apart_by_their_style_or_task(catalogue: None) -> None:
    from leaderboards.services import criterion_names

    # Criteria whose name another criterion shares (a name of its own needs nothing more).
    domain = (
        Criterion.objects.filter(group=CriterionGroup.DOMAIN, style__isnull=False)
        .exclude(context_en="")
        .first()
    )
    task = Criterion.objects.filter(group=CriterionGroup.TASK).exclude(context_ru="").first()
    general = Criterion.objects.filter(group=CriterionGroup.GENERAL).first()
    assert domain is not None and task is not None and general is not None
    assert domain.style is not None
    assert criterion_names(domain)["en"] == f"{domain.name_en} — {domain.style.name_en}"
    assert criterion_names(domain)["ru"] == f"{domain.name_ru} — {domain.style.name_ru}"
    # A task criterion says its part of the task tree, in each language.
    assert criterion_names(task)["en"] == f"{task.name_en} — {task.context_en}"
    assert criterion_names(task)["ru"] == f"{task.name_ru} — {task.context_ru}"
    assert criterion_names(general)["en"] == general.name_en


def test_side_by_side_ratings_are_columns_and_any_column_sorts(
    world: World, personas: Personas
) -> None:
    """The experts' latest REPA ranking (Overall) gives each model Elo, Bradley–Terry, Glicko-2
    and Borda columns; the table sorts by them and by a task type's column."""
    from comparison.models import Ranking

    ids = {m: world.answers[m][0].model_id for m in VERDICTS}

    def rating(model: str, elo: float, borda: float) -> dict[str, Any]:
        return {
            "model": ids[model],
            "elo": {"mean": elo},
            "bradley_terry": {"mean": elo - 10},
            "glicko2": {"mean": elo + 500},
            "borda": borda,
            "n_battles": 12,
        }

    Ranking.objects.create(
        result={
            "criteria": [
                {"key": "fluency", "models": [rating("Beta", 9999, 9)]},
                {"key": "overall", "models": [rating("Beta", 1200, 6), rating("Alpha", 1100, 3)]},
            ]
        }
    )
    snapshot = snapshot_store(world.board, rounds=0)
    ratings = snapshot.data["pairwise"]["models"]
    assert ratings[str(ids["Beta"])]["elo"] == 1200  # Overall, not another criterion
    assert str(ids["Human"]) not in ratings
    world.board.visibility = Visibility.PUBLIC
    world.board.save()
    page = Client().get(reverse("leaderboard", args=[world.board.slug]), {"sort": "elo"})
    html = page.content.decode()
    assert "Glicko-2" in html and ">1700<" in html
    order = re.findall(r"<a href=\"[^\"]*models/(\d+)/", html)
    assert order[:2] == [str(ids["Beta"]), str(ids["Alpha"])]  # by Elo; Human has none: last
    assert order[2] == str(ids["Human"])
    # By a task type's column (all three models' verdicts are in the one task type here).
    group = next(iter(snapshot.data["groups"]))
    page = Client().get(reverse("leaderboard", args=[world.board.slug]), {"sort": f"group:{group}"})
    order = re.findall(r"<a href=\"[^\"]*models/(\d+)/", page.content.decode())
    assert order[0] == str(ids["Human"])  # 1.0 on every verdict
    # A forged sort falls back to the score.
    assert (
        Client().get(reverse("leaderboard", args=[world.board.slug]), {"sort": "x'"}).status_code
        == 200
    )


def test_an_anonymous_reader_gets_the_cached_page_with_his_own_csrf_token(
    world: World, personas: Personas
) -> None:
    """The whole page is cached for anonymous readers; each gets a working token of his own,
    and a board made private stops being served from the cache at once."""
    from django.core.cache import cache

    from leaderboards.views import _BODIES, CSRF_PLACEHOLDER

    cache.clear()
    _BODIES.clear()
    snapshot_store(world.board, rounds=50)
    world.board.visibility = Visibility.PUBLIC
    world.board.save()
    url = reverse("leaderboard", args=[world.board.slug])
    tokens = []
    for _ in range(2):
        client = Client(enforce_csrf_checks=True)
        page = client.get(url)
        html = page.content.decode()
        assert page.status_code == 200 and CSRF_PLACEHOLDER not in html
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
        assert token is not None
        tokens.append(token.group(1))
        # The token works with the cookie the response set: the language form posts.
        switched = client.post(
            reverse("set_language"),
            {"language": "en", "next": url, "csrfmiddlewaretoken": token.group(1)},
        )
        assert switched.status_code == 302
    assert tokens[0] != tokens[1]
    assert any(k.startswith("leaderboard-page:") for k in _BODIES)
    # Made private: refused although the page is cached.
    world.board.visibility = Visibility.PRIVATE
    world.board.save()
    assert Client().get(url).status_code == 302  # to the login page
    # A logged-in reader is never served the anonymous page.
    admin = Client()
    admin.force_login(personas.admin)
    assert "leaderboard-admin" in admin.get(url).content.decode()


def test_the_boards_plain_query_reads_what_the_orm_reads(world: World) -> None:
    """selectors.board_with_snapshot (one plain query, for the busiest page) against the ORM."""
    from django.db.models import OuterRef, Subquery

    from leaderboards.selectors import board_with_snapshot

    assert board_with_snapshot("missing") is None
    plain = board_with_snapshot(world.board.slug)
    assert plain is not None and plain.snapshot_id is None  # type: ignore[attr-defined]
    Leaderboard.objects.filter(pk=world.board.pk).update(fixed_settings={"temperature": 0})
    snapshot_store(world.board, rounds=0)
    newest = snapshot_store(world.board, rounds=0)
    latest = LeaderboardSnapshot.objects.filter(leaderboard=OuterRef("pk")).order_by(
        "-created_at", "-pk"
    )
    orm = Leaderboard.objects.annotate(
        snapshot_id=Subquery(latest.values("pk")[:1]),
        snapshot_at=Subquery(latest.values("created_at")[:1]),
    ).get(pk=world.board.pk)
    plain = board_with_snapshot(world.board.slug)
    assert plain is not None
    for field in ("pk", "slug", "title", "visibility", "created_at", "fixed_settings"):
        assert getattr(plain, field) == getattr(orm, field), field
    assert plain.snapshot_id == orm.snapshot_id == newest.pk  # type: ignore[attr-defined]
    assert plain.snapshot_at == orm.snapshot_at  # type: ignore[attr-defined]
    assert plain.fixed_settings == {"temperature": 0}


def _five_votes(world: World) -> None:
    """Alpha's violating answer gets 1 violation vote of 5 (mean 0.2 on the binary scale), Beta's
    first answer 3 of 5 (0.6)."""
    for model, index, mean in (("Alpha", 1, 0.2), ("Beta", 0, 0.6)):
        answer = world.answers[model][index]
        TripleAggregate.objects.filter(triple=world.triples[(answer.pk, world.critical.pk)]).update(
            mean=mean, n_estimates=5
        )


@pytest.mark.parametrize(
    ("rule", "alpha", "beta", "gated", "random"),
    [
        # Normalised verdicts: Alpha (1, 0.5) and (1, 1) [1 vote of 5]; Beta (0.5, 0) [3 of 5]
        # and (1, 0.5); Human (1, 1).
        # Any vote: both voted answers score 0.
        (GateRule.ANY, (1 + 0.5 + 0 + 0) / 4, (0 + 0 + 1 + 0.5) / 4, (1, 1), 0.25),
        # Majority: only Beta's 3 of 5.
        (GateRule.MAJORITY, (1 + 0.5 + 1 + 1) / 4, (0 + 0 + 1 + 0.5) / 4, (0, 1), 0.25),
        # POLLUX: both voted answers leave the means; the random verdicts are not gated to 0.
        (GateRule.POLLUX, (1 + 0.5) / 2, (1 + 0.5) / 2, (1, 1), 0.5),
    ],
)
def test_the_boards_gate_rule_decides_the_expert_rows(
    world: World,
    rule: str,
    alpha: float,
    beta: float,
    gated: tuple[int, int],
    random: float,
) -> None:
    _five_votes(world)
    Leaderboard.objects.filter(pk=world.board.pk).update(gate_rule=rule)
    world.board.refresh_from_db()
    snapshot = snapshot_store(world.board, rounds=50)
    rows = rows_of(snapshot)
    assert snapshot.data["gate_rule"] == rule and snapshot.data["scale"] == [0, 2]
    assert rows["Alpha"]["mean"] == pytest.approx(alpha)
    assert rows["Beta"]["mean"] == pytest.approx(beta)
    assert rows["Human"]["mean"] == pytest.approx(1.0)
    assert (rows["Alpha"]["gated_answers"], rows["Beta"]["gated_answers"]) == gated
    (experts,) = [s for s in snapshot.data["sources"] if s["key"] == EXPERTS]
    assert experts["random"]["mean"] == pytest.approx(random)
    # The filters' cells follow the same rule: all criteria, all types → the same means.
    models = {str(r["model"]): name for name, r in rows.items()}
    sums: dict[str, list[float]] = {}
    for model, *_keys, total, count in experts["cells"]:
        sums.setdefault(models[str(model)], [0.0, 0])
        sums[models[str(model)]][0] += total
        sums[models[str(model)]][1] += count
    assert sums["Alpha"][0] / sums["Alpha"][1] == pytest.approx(alpha)


def test_a_pollux_board_reports_the_papers_0_to_2_means(world: World, personas: Personas) -> None:
    # POLLUX drops Alpha's voted answer and reports the mean of the raw 0–2 verdicts left:
    # Alpha's first answer, 2 and 1 → 1.5.
    Leaderboard.objects.filter(pk=world.board.pk).update(
        gate_rule=GateRule.POLLUX, visibility=Visibility.PUBLIC
    )
    world.board.refresh_from_db()
    snapshot_store(world.board, rounds=0)
    page = Client().get(reverse("leaderboard", args=["pollux"])).content.decode()
    row = re.search(r">Alpha[^<]*</a></td>\s*<td>(.*?)</td>", page)
    assert row and row.group(1) == "1.500"
    assert "Score (0–2)" in page and "POLLUX: an answer with a violation vote" in page


def test_an_admin_recomputes_under_another_gate_rule(
    world: World, personas: Personas, django_capture_on_commit_callbacks: Any
) -> None:
    _five_votes(world)
    url = reverse("leaderboard_refresh", args=["pollux"])
    admin = Client()
    admin.force_login(personas.admin)
    response = admin.post(url, {"gate_rule": "sometimes"})
    assert response.status_code == 400 and "gate_rule" in response.content.decode()
    world.board.refresh_from_db()
    assert world.board.gate_rule == GateRule.ANY
    assert not LeaderboardSnapshot.objects.filter(leaderboard=world.board).exists()
    with django_capture_on_commit_callbacks(execute=True):
        assert admin.post(url, {"gate_rule": GateRule.MAJORITY}).status_code == 302
    world.board.refresh_from_db()
    assert world.board.gate_rule == GateRule.MAJORITY
    snapshot = LeaderboardSnapshot.objects.get(leaderboard=world.board)
    assert snapshot.data["gate_rule"] == GateRule.MAJORITY
    assert rows_of(snapshot)["Alpha"]["mean"] == pytest.approx((1 + 0.5 + 1 + 1) / 4)
    supervisor = Client()
    supervisor.force_login(personas.supervisor_a)
    assert supervisor.post(url, {"gate_rule": GateRule.POLLUX}).status_code == 403
    world.board.refresh_from_db()
    assert world.board.gate_rule == GateRule.MAJORITY


def test_a_new_board_takes_the_pollux_rule_unless_told(personas: Personas) -> None:
    admin = Client()
    admin.force_login(personas.admin)
    create = reverse("leaderboard_create")
    assert admin.post(create, {"slug": "plain", "title": "Plain"}).status_code == 302
    assert (
        admin.post(create, {"slug": "strict", "title": "S", "gate_rule": "any"}).status_code == 302
    )
    bad = admin.post(create, {"slug": "odd", "title": "Odd", "gate_rule": "often"})
    assert bad.status_code == 400 and not Leaderboard.objects.filter(slug="odd").exists()
    rules = dict(Leaderboard.objects.values_list("slug", "gate_rule"))
    assert rules == {"plain": GateRule.POLLUX, "strict": GateRule.ANY}


def test_only_models_take_places_the_baselines_none(world: World, personas: Personas) -> None:
    # Human (the human baseline) scores best and the random baseline worst: neither takes a
    # place, and the models' places run on without a gap.
    snapshot_store(world.board, rounds=0)
    client = Client()
    client.force_login(personas.admin)
    page = client.get(reverse("leaderboard", args=["pollux"])).content.decode()
    body = page[page.index("<tbody") :]
    places = re.findall(r'<tr class="([^"]*)">\s*<td>([^<]*)</td>\s*<td>(.*?)</td>', body, re.S)
    shown = [
        (place.strip(), "human baseline" in name or "random" in name) for _c, place, name in places
    ]
    assert shown == [("", True), ("1", False), ("2", False), ("", True)], places


def test_a_versions_rows_never_take_a_later_instruction(
    world: World, personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    """Scores of two versions never meet: v1's rows stay those of its items after a new
    instruction is answered and aggregated; v2, cut after it, counts it."""
    v1_rows = rows_of(snapshot_store(world.board, rounds=0))
    later = make_answer(model="Alpha", text=SECRET)
    for criterion in world.general:
        triple = Triple.objects.create(
            answer=later,
            criterion=criterion,
            rubric=criterion.rubric,
            group=criterion.group,
            panel=personas.panel_a,
            required_overlap=2,
        )
        TripleAggregate.objects.create(triple=triple, n_estimates=2, mean=0.0, excluded_reason="")
    assert rows_of(snapshot_store(world.board, rounds=0)) == v1_rows
    v2 = version_cut(world.board, actor=None)
    v2_rows = rows_of(snapshot_store(world.board, version=v2, rounds=0))
    assert v2_rows["Alpha"]["answers"] == v1_rows["Alpha"]["answers"] + 1
    assert v2_rows["Alpha"]["mean"] < v1_rows["Alpha"]["mean"]
    assert v2_rows["Beta"] == v1_rows["Beta"]


def test_a_changed_gate_rule_waits_for_the_next_version(
    world: World, personas: Personas, django_capture_on_commit_callbacks: Any
) -> None:
    _five_votes(world)
    v1 = version_current(world.board)
    admin = Client()
    admin.force_login(personas.admin)
    url = reverse("leaderboard_refresh", args=["pollux"])
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post(url, {"gate_rule": GateRule.MAJORITY}, follow=True)
    assert "applies from the next version" in response.content.decode()
    world.board.refresh_from_db()
    v1.refresh_from_db()
    assert world.board.gate_rule == GateRule.MAJORITY and v1.gate_rule == GateRule.ANY
    assert LeaderboardSnapshot.objects.get(version=v1).data["gate_rule"] == GateRule.ANY
    v2 = version_cut(world.board, actor=personas.admin)
    assert v2.gate_rule == GateRule.MAJORITY
    assert v2.changelog["rules"] == [
        {"setting": "gate_rule", "old": GateRule.ANY, "new": GateRule.MAJORITY}
    ]
    assert admin.post(url, {"version": "2"}).status_code == 302
    assert admin.post(url, {"version": "two"}).status_code == 400
    assert admin.post(url, {"version": "7"}).status_code == 404
