"""The side-by-side kind on the core: routing, placement, the page, the submission, refusals."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from material.models import Answer, AnswerPair, Instruction, LanguageModel
from panels.models import Panel
from protocol.pairwise import Label
from tests.conftest import PASSWORD, make_expert, make_user
from work.assignments import assignments_build
from work.comparisons import (
    ComparisonInput,
    comparison_refuse,
    comparison_submit,
    comparisons_build,
)
from work.models import (
    Assignment,
    AssignmentStatus,
    Estimate,
    EstimateRevision,
    EstimateStatus,
    Triple,
    TripleKind,
)
from work.services import ScoringClosed

pytestmark = pytest.mark.django_db

KEYS = (
    "request_following",
    "factuality",
    "repetition",
    "code_switching",
    "relevance",
    "harmfulness",
    "fluency",
    "contradiction",
    "sudden_interruption",
    "refusal",
    "overall",
)


def _pair(n: int, model_a: str = "Alpha-7B", model_b: str = "Beta-13B") -> AnswerPair:
    # A REPA query has no POLLUX task: the instruction's task stays empty.
    instruction = Instruction.objects.create(text=f"Объясните, почему небо голубое ({n}).")
    a = Answer.objects.create(
        instruction=instruction,
        model=LanguageModel.objects.get_or_create(name=model_a)[0],
        text=f"Левый ответ {n}: рассеяние Рэлея.",
        text_hash=f"a{n}",
    )
    b = Answer.objects.create(
        instruction=instruction,
        model=LanguageModel.objects.get_or_create(name=model_b)[0],
        text=f"Правый ответ {n}: потому что так.",
        text_hash=f"b{n}",
    )
    return AnswerPair.objects.create(instruction=instruction, answer_a=a, answer_b=b)


@pytest.fixture
def panel(catalogue: None) -> Panel:
    return Panel.objects.get(key="science")


@pytest.fixture
def experts(panel: Panel) -> list[Any]:
    return [make_expert(f"cmp{i}", panel) for i in range(4)]


def _client(expert: Any) -> Client:
    client = Client()
    assert client.login(username=expert.user.username, password=PASSWORD)
    return client


def _all(label: str) -> dict[str, str]:
    return dict.fromkeys(KEYS, label)


def test_routing_gives_each_pair_to_three_distinct_experts_with_stored_placement(
    panel: Panel, experts: list[Any]
) -> None:
    pairs = [_pair(n) for n in range(6)]
    report = comparisons_build(panel_id=panel.pk, route=True, seed=7)
    assert report["triples_created"] == 6 * len(KEYS)
    assert report["assignments_created"] == 6 * 3
    assert report["estimates_created"] == 6 * 3 * len(KEYS)
    for pair in pairs:
        held = Assignment.objects.filter(pair=pair)
        assert held.count() == 3
        assert len({a.expert_id for a in held}) == 3
        # Every assignment holds one slot of every criterion of its pair.
        for assignment in held:
            assert assignment.estimates.count() == len(KEYS)
    triples = Triple.objects.filter(kind=TripleKind.PAIRWISE)
    assert all(t.answer_id == t.pair.answer_a_id for t in triples)  # type: ignore[union-attr]
    # Balanced over the four experts: 18 assignments, 4 or 5 each.
    load = Counter(Assignment.objects.values_list("expert_id", flat=True))
    assert sorted(load.values()) in ([4, 4, 5, 5], [4, 5, 4, 5])
    # Placement is drawn per assignment, and the same seed replays it.
    swaps = list(Assignment.objects.order_by("pk").values_list("swapped", flat=True))
    assert 0 < sum(swaps) < len(swaps)
    # Idempotent: nothing more to do.
    again = comparisons_build(panel_id=panel.pk, route=True, seed=7)
    assert again["triples_created"] == again["assignments_created"] == 0


def test_same_seed_same_placement(panel: Panel, experts: list[Any]) -> None:
    for n in range(5):
        _pair(n)
    comparisons_build(panel_id=panel.pk, route=True, seed=11)
    first = list(Assignment.objects.order_by("pk").values_list("pair_id", "expert_id", "swapped"))
    Assignment.objects.all().delete()
    comparisons_build(panel_id=panel.pk, seed=11)
    second = list(Assignment.objects.order_by("pk").values_list("pair_id", "expert_id", "swapped"))
    assert first == second


def test_a_label_given_on_a_swapped_page_is_stored_in_the_pairs_orientation(
    panel: Panel, experts: list[Any]
) -> None:
    _pair(1)
    comparisons_build(panel_id=panel.pk, route=True, seed=3)
    for assignment in Assignment.objects.all():
        # The expert prefers the response shown on the left: "a" as shown.
        result = comparison_submit(
            assignment=assignment, data=ComparisonInput(labels=_all("a")), user=None
        )
        assert result.ok, result
        stored = set(assignment.estimates.values_list("label", flat=True))
        assert stored == {"b" if assignment.swapped else "a"}
        assert set(assignment.estimates.values_list("status", flat=True)) == {"submitted"}


def test_the_page_shows_the_placement_and_never_the_models(
    panel: Panel, experts: list[Any]
) -> None:
    _pair(1)
    comparisons_build(panel_id=panel.pk, route=True, seed=5)

    for assignment in Assignment.objects.select_related("expert__user"):
        page = _client(assignment.expert).get(reverse("assignment", args=[assignment.pk]))
        assert page.status_code == 200
        html = page.content.decode()
        left = html.index('id="response-a"')
        right = html.index('id="response-b"')
        a_at = html.index("Левый ответ 1")
        b_at = html.index("Правый ответ 1")
        if assignment.swapped:
            assert right < a_at and left < b_at < right
        else:
            assert left < a_at < right < b_at
        for secret in ("Alpha-7B", "Beta-13B"):
            assert secret not in html
        for key in KEYS:
            assert f'name="label_{key}"' in html
        assert 'id="content-warning"' in html


def test_submit_through_the_page_then_next_and_revisions(panel: Panel, experts: list[Any]) -> None:
    _pair(1)
    comparisons_build(panel_id=panel.pk, route=True, seed=1)
    assignment = Assignment.objects.select_related("expert__user").first()
    assert assignment is not None
    client = _client(assignment.expert)
    url = reverse("compare_submit", args=[assignment.pk])
    # Missing criteria: 422, the errors name them, nothing is written.
    partial = {f"label_{k}": "a" for k in KEYS[:5]} | {"time_total": "1000"}
    response = client.post(url, partial)
    assert response.status_code == 422
    assert "code_switching" in response.content.decode() or "err_code_switching" in (
        response.content.decode()
    )
    assert not assignment.estimates.filter(status=EstimateStatus.SUBMITTED).exists()
    # An unknown option and an unknown criterion: 422, nothing written.
    bad = {f"label_{k}": "a" for k in KEYS} | {"label_overall": "c", "time_total": "5"}
    assert client.post(url, bad).status_code == 422
    forged = {f"label_{k}": "a" for k in KEYS} | {"label_secret": "a", "time_total": "5"}
    assert client.post(url, forged).status_code == 422
    assert not assignment.estimates.filter(status=EstimateStatus.SUBMITTED).exists()
    # A good one: 302 to the next pair; submitted twice with the same key: stored once.
    good = {f"label_{k}": "both_bad" for k in KEYS} | {
        "time_total": "9000",
        "submission_key": "k1",
        "comment": "Оба ответа обрываются.",
    }
    response = client.post(url, good)
    assert response.status_code == 302
    assert reverse("queue_next") in response["location"]
    assert client.post(url, good).status_code == 302
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.SUBMITTED
    assert assignment.comment == "Оба ответа обрываются."
    assert set(assignment.estimates.values_list("label", flat=True)) == {"both_bad"}
    assert not EstimateRevision.objects.exists()
    # Changing one label later keeps the old one as a revision.
    changed = good | {"label_overall": "a", "submission_key": "k2"}
    assert client.post(url, changed).status_code == 302
    revision = EstimateRevision.objects.get()
    assert revision.label == "both_bad"
    overall = assignment.estimates.get(triple__comparison_criterion__key="overall")
    assert overall.label == ("b" if assignment.swapped else "a")


def test_another_expert_cannot_open_or_post_the_pair(panel: Panel, experts: list[Any]) -> None:
    _pair(1)
    comparisons_build(panel_id=panel.pk, route=True, seed=1)
    holders = set(Assignment.objects.values_list("expert_id", flat=True))
    outsider = next(e for e in experts if e.pk not in holders)
    assignment = Assignment.objects.first()
    assert assignment is not None
    client = _client(outsider)
    assert client.get(reverse("assignment", args=[assignment.pk])).status_code == 404
    post = {f"label_{k}": "a" for k in KEYS} | {"time_total": "1"}
    assert client.post(reverse("compare_submit", args=[assignment.pk]), post).status_code == 404
    assert client.post(reverse("compare_refuse", args=[assignment.pk])).status_code == 404
    draft = {"criterion": "overall", "label": "a"}
    assert client.post(reverse("compare_draft", args=[assignment.pk]), draft).status_code == 404
    assert not Estimate.objects.filter(status__in=["draft", "submitted"]).exists()


def test_draft_autosave_is_kept_in_the_pairs_orientation(panel: Panel, experts: list[Any]) -> None:
    _pair(1)
    comparisons_build(panel_id=panel.pk, route=True, seed=2)
    assignment = Assignment.objects.select_related("expert__user").first()
    assert assignment is not None
    client = _client(assignment.expert)
    url = reverse("compare_draft", args=[assignment.pk])
    assert client.post(url, {"criterion": "overall", "label": "a"}).status_code == 200
    assert client.post(url, {"criterion": "overall", "label": "z"}).status_code == 422
    assert client.post(url, {"criterion": "nope", "label": "a"}).status_code == 404
    estimate = assignment.estimates.get(triple__comparison_criterion__key="overall")
    assert estimate.status == EstimateStatus.DRAFT
    assert estimate.label == ("b" if assignment.swapped else "a")
    # The page shows it back on the same side.
    html = client.get(reverse("assignment", args=[assignment.pk])).content.decode()
    assert 'name="label_overall" value="a" checked' in html


def test_refuse_hands_the_pair_to_another_expert_never_back(
    panel: Panel, experts: list[Any]
) -> None:
    _pair(1)
    comparisons_build(panel_id=panel.pk, route=True, seed=4)
    refused = Assignment.objects.select_related("expert__user").first()
    assert refused is not None
    response = _client(refused.expert).post(reverse("compare_refuse", args=[refused.pk]))
    assert response.status_code == 302
    refused.refresh_from_db()
    assert refused.status == AssignmentStatus.RELEASED
    assert not refused.estimates.exists()
    report = comparisons_build(panel_id=panel.pk, seed=4)
    assert report["assignments_created"] == 1
    holders = Assignment.objects.exclude(status=AssignmentStatus.RELEASED).values_list(
        "expert_id", flat=True
    )
    assert refused.expert_id not in holders
    assert len(set(holders)) == 3
    # A submitted pair cannot be refused.
    done = Assignment.objects.exclude(status=AssignmentStatus.RELEASED).first()
    assert done is not None
    comparison_submit(assignment=done, data=ComparisonInput(labels=_all(Label.A)), user=None)
    with pytest.raises(ScoringClosed):
        comparison_refuse(assignment=done)


def test_pairs_of_a_panel_are_not_routed_again_to_another(
    panel: Panel, experts: list[Any], catalogue: None
) -> None:
    _pair(1)
    other = Panel.objects.get(key="literature")
    make_expert("lit1", other)
    comparisons_build(panel_id=panel.pk, route=True, seed=1)
    report = comparisons_build(panel_id=other.pk, route=True, seed=1)
    assert report["triples_created"] == 0
    assert not Assignment.objects.filter(panel=other).exists()


def test_overlap_out_of_range_is_refused(panel: Panel, experts: list[Any]) -> None:
    _pair(1)
    with pytest.raises(ValueError, match="overlap"):
        comparisons_build(panel_id=panel.pk, route=True, overlap=0)
    assert not Triple.objects.exists()


def test_console_route_pairs_builds_through_the_job(
    panel: Panel, experts: list[Any], django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:

    _pair(1)
    _pair(2)
    supervisor = make_user("cmp_sup")
    panel.supervisors.add(supervisor)
    client = Client()
    client.force_login(supervisor)
    url = reverse("console_route_pairs", args=[panel.pk])
    assert client.post(url, {"overlap": "abc"}).status_code in (302, 400)
    assert client.post(url, {"overlap": "11"}).status_code in (302, 400)
    assert not Triple.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"overlap": "3"})
    assert response.status_code == 302
    assert Assignment.objects.filter(pair__isnull=False).count() == 6
    # A supervisor of another panel cannot route pairs here.
    stranger = make_user("cmp_stranger")
    Panel.objects.get(key="literature").supervisors.add(stranger)
    other = Client()
    other.force_login(stranger)
    assert other.post(url, {"overlap": "3"}).status_code == 404


def test_the_console_shows_the_panels_side_by_side_agreement(
    panel: Panel, experts: list[Any]
) -> None:
    _pair(1)
    comparisons_build(panel_id=panel.pk, route=True, seed=9)
    # Three annotators: two say "a" on every criterion, the third "b" (pair orientation).
    for n, assignment in enumerate(Assignment.objects.order_by("pk")):
        shown = "a" if n < 2 else "b"
        placed = ("b" if shown == "a" else "a") if assignment.swapped else shown
        result = comparison_submit(
            assignment=assignment, data=ComparisonInput(labels=_all(placed)), user=None
        )
        assert result.ok
    supervisor = make_user("agree_sup")
    panel.supervisors.add(supervisor)
    client = Client()
    client.force_login(supervisor)
    html = client.get(reverse("console_panel", args=[panel.pk])).content.decode()
    assert 'id="pair-agreement"' in html
    row = html[html.index('data-criterion="overall"') :]
    row = row[: row.index("</tr>")]
    # One item, a 2-of-3 majority: majority-vote rate 100 %, unanimity 0 %.
    assert "100 %" in row and "0 %" in row


def test_the_page_counts_the_labelled_criteria_drafts_included(panel: Panel) -> None:
    solo = make_expert("solo", panel)
    _pair(1)
    comparisons_build(panel_id=panel.pk, route=True, seed=1)
    assignment = Assignment.objects.get(expert=solo)
    client = _client(solo)
    for key in KEYS[:4]:
        draft = {"criterion": key, "label": "both_good"}
        assert client.post(reverse("compare_draft", args=[assignment.pk]), draft).status_code == 200
    html = client.get(reverse("assignment", args=[assignment.pk])).content.decode()
    # Announced to screen readers as it changes (static/js/compare.js recounts the same way).
    assert 'id="compare-progress" aria-live="polite"' in html
    assert 'Labelled <b id="progress-done">4</b> of <span id="progress-total">11</span>' in html
    html = client.get(
        reverse("assignment", args=[assignment.pk]), HTTP_ACCEPT_LANGUAGE="ru"
    ).content.decode()
    assert 'Размечено <b id="progress-done">4</b> из <span id="progress-total">11</span>' in html


def test_save_skip_and_refuse_open_the_next_pair_never_an_answer(
    panel: Panel, make_answer: Callable[..., Answer]
) -> None:
    solo = make_expert("solo", panel)
    first, second, third = _pair(1), _pair(2), _pair(3)
    # The queue's order puts an answer of the rubric between the pairs.
    comparisons_build(panel_id=panel.pk, route=True, pair_ids=[first.pk], seed=1)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    comparisons_build(panel_id=panel.pk, route=True, pair_ids=[second.pk, third.pk], seed=1)
    one, two, three = (Assignment.objects.get(expert=solo, pair=p) for p in (first, second, third))
    rubric = Assignment.objects.filter(expert=solo, pair__isnull=True).order_by("pk").first()
    assert rubric is not None and one.pk < rubric.pk < two.pk < three.pk
    client = _client(solo)
    nxt = reverse("queue_next")

    def next_pair(after: Assignment) -> str:
        return f"{nxt}?after={after.pk}&kind=pairwise"

    def form(label: str) -> dict[str, str]:
        return {f"label_{k}": label for k in KEYS} | {"time_total": "1000"}

    page = client.get(reverse("assignment", args=[one.pk])).content.decode()
    assert f'id="skip" href="{next_pair(one)}"' in page.replace("&amp;", "&")
    saved = client.post(reverse("compare_submit", args=[one.pk]), form("a"))
    assert saved["Location"] == next_pair(one)
    assert client.get(saved["Location"])["Location"] == reverse("assignment", args=[two.pk])
    # The queue's own "next" (the rubric page's) still takes any kind of work.
    assert client.get(f"{nxt}?after={one.pk}")["Location"] == reverse(
        "assignment", args=[rubric.pk]
    )
    refused = client.post(reverse("compare_refuse", args=[two.pk]))
    assert refused["Location"] == next_pair(two)
    assert client.get(refused["Location"])["Location"] == reverse("assignment", args=[three.pk])
    # After the last pair: the queue, with a message saying so, in the page's language.
    last = client.post(reverse("compare_submit", args=[three.pk]), form("b"))
    landed = client.get(last["Location"], follow=True)
    assert landed.redirect_chain[-1][0] == reverse("queue")
    shown = [str(m) for m in landed.context["messages"]]
    assert "No more pairs to compare in your queue. Thank you!" in shown
    landed = client.get(next_pair(three), follow=True, HTTP_ACCEPT_LANGUAGE="ru")
    assert "Больше нет пар для сравнения в вашей очереди. Спасибо!" in landed.content.decode()
    rubric.refresh_from_db()
    assert rubric.status == AssignmentStatus.ASSIGNED
