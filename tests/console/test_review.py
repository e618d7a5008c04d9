"""The answer review page (issue #18): scores side by side under expert codes, blindness, and
sending an estimate back to its expert or accepting it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.test import Client
from django.urls import reverse

from dataset import columns
from dataset.adjudication import adjudicate
from dataset.aggregation import aggregation_run
from dataset.export import ExportOptions, dataset_export
from dataset.models import Adjudication, TripleAggregate
from material.models import Answer
from panels.models import Expert, SupervisorAction
from tests.conftest import PASSWORD, Personas, make_expert, make_user, rubric_of
from work import review
from work.assignments import assignments_build
from work.models import Assignment, AssignmentStatus, Estimate, ReviewStatus, Triple
from work.services import ScoreInput, assignment_submit

pytestmark = pytest.mark.django_db

RATIONALE_A = "Обоснование первого эксперта: всё по существу."
RATIONALE_PEER = "Обоснование второго эксперта: есть фактические ошибки."
COMMENT = "Проверьте ещё раз фактическую точность, пожалуйста."


def _login(username: str) -> Client:
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    return client


def _items(assignment: Assignment, rationale: str, low: bool) -> list[ScoreInput]:
    """Every criterion of the assignment: critical gates 0 (no violation); the others at the top
    of the scale, or (low) at its bottom, so two experts disagree on every rubric criterion."""
    out = []
    for e in assignment.estimates.select_related("triple__rubric"):
        values = rubric_of(e.triple).values
        low_or_high = min(values) if low else max(values)
        score = 0 if e.triple.group == "critical" else low_or_high
        out.append(ScoreInput(triple_id=e.triple_id, score=score, rationale=rationale))
    return out


def _submit(assignment: Assignment, rationale: str, low: bool = False) -> None:
    result = assignment_submit(assignment=assignment, items=_items(assignment, rationale, low))
    assert result.ok, (result.errors, result.form_errors)


@dataclass
class Scored:
    answer: Answer
    mine: Assignment  # expert_a's
    peer: Expert
    peer_assignment: Assignment


@pytest.fixture
def scored(personas: Personas, make_answer: Callable[..., Answer]) -> Scored:
    """A science answer (panel A) scored by expert_a and a peer who disagree on every rubric
    criterion."""
    peer = make_expert("peer_a", personas.panel_a)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    mine = Assignment.objects.get(expert=personas.expert_a, answer=answer)
    theirs = Assignment.objects.get(expert=peer, answer=answer)
    _submit(mine, RATIONALE_A)
    _submit(theirs, RATIONALE_PEER, low=True)
    return Scored(answer=answer, mine=mine, peer=peer, peer_assignment=theirs)


def _url(personas: Personas, answer: Answer, panel: Any = None) -> str:
    panel = panel or personas.panel_a
    return reverse("console_answer_review", args=[panel.pk, answer.pk])


def _code_before(html: str, text: str) -> str:
    """The expert code of the cell that shows `text`."""
    start = html.rfind('data-code="', 0, html.index(text)) + len('data-code="')
    return html[start : html.index('"', start)]


def _rubric_estimate(assignment: Assignment) -> Estimate:
    return assignment.estimates.exclude(triple__group="critical").order_by("triple_id").first()  # type: ignore[return-value]


def test_the_page_shows_every_expert_by_code_side_by_side_with_disagreements(
    personas: Personas, scored: Scored
) -> None:
    page = _login("sup_a").get(_url(personas, scored.answer))
    assert page.status_code == HTTPStatus.OK
    html = page.content.decode()
    assert RATIONALE_A in html and RATIONALE_PEER in html
    assert 'data-code="E1"' in html and 'data-code="E2"' in html
    assert 'data-code="E3"' not in html
    # Never a name or a pseudonym: codes only.
    for expert in (personas.expert_a, scored.peer):
        assert expert.pseudonym not in html
        assert expert.user.username not in html
    # Every criterion both experts scored differently is marked; the critical gates (all 0)
    # are not.
    scores: dict[int, set[Any]] = {}
    for triple_id, score in Estimate.objects.filter(
        triple__answer=scored.answer, status="submitted"
    ).values_list("triple_id", "score"):
        scores.setdefault(triple_id, set()).add(score)
    disputed = {t for t, values in scores.items() if len(values) > 1}
    assert disputed
    for triple_id in scores:
        mark = "disputed" if triple_id in disputed else ""
        assert f'id="triple-{triple_id}" class="{mark}"' in html
    gates = Triple.objects.filter(answer=scored.answer, group="critical")
    assert gates and not disputed & {t.pk for t in gates}
    # The codes stay the same from one visit to the next.
    again = _login("sup_a").get(_url(personas, scored.answer)).content.decode()
    assert _code_before(html, RATIONALE_A) == _code_before(again, RATIONALE_A)
    assert _code_before(html, RATIONALE_A) != _code_before(html, RATIONALE_PEER)


def test_the_page_shows_the_aggregate_and_the_judge(
    personas: Personas, scored: Scored, monkeypatch: pytest.MonkeyPatch
) -> None:
    triple = _rubric_estimate(scored.mine).triple
    TripleAggregate.objects.create(
        triple=triple,
        n_estimates=2,
        mean=1.5,
        mode=None,
        confidence=0.5,
        excluded_reason="low_conf",
    )

    def aligned(ids: Any, names: Any) -> dict[str, list[Any]]:
        hit = [tid == triple.pk for tid in ids]
        return {
            "judge__gpt__score": [3.0 if h else None for h in hit],
            "judge__gpt__parse_ok": [True if h else None for h in hit],
            "judge__gpt__feedback": ["Судья считает ответ точным." if h else None for h in hit],
            "judge__gpt__run": [7 if h else None for h in hit],
        }

    judge = columns.ColumnProvider(
        names=lambda: ["gpt"], column_names=lambda n: [], aligned=aligned
    )
    monkeypatch.setattr(columns, "provider", lambda key: judge if key == "judge" else None)
    html = _login("sup_a").get(_url(personas, scored.answer)).content.decode()
    row = html[html.index(f'id="triple-{triple.pk}"') :]
    row = row[: row.index("</tr>")]
    assert "1.50" in row and "0.50" in row and "low_conf" in row
    assert "gpt" in row and "3.0" in row and "Судья считает ответ точным." in row


def test_who_may_open_the_page(personas: Personas, scored: Scored) -> None:
    url = _url(personas, scored.answer)
    assert _login("sup_b").get(url).status_code == HTTPStatus.NOT_FOUND
    assert _login("expert_a").get(url).status_code == HTTPStatus.FORBIDDEN
    assert _login("admin").get(url).status_code == HTTPStatus.OK
    # Panel B does not score this answer: through B's console it does not exist, even for B's
    # supervisor, and a missing answer is the same 404.
    url_b = _url(personas, scored.answer, personas.panel_b)
    assert _login("sup_b").get(url_b).status_code == HTTPStatus.NOT_FOUND
    missing = reverse("console_answer_review", args=[personas.panel_a.pk, 10**9])
    assert _login("sup_a").get(missing).status_code == HTTPStatus.NOT_FOUND


def test_a_supervisor_with_open_work_on_the_answer_sees_no_scores(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    """A supervisor of A who is also an expert of A scores blind: while his own assignment of
    the answer is open, the page shows none of the others' scores, and he cannot review them."""
    boss = make_user("boss")
    personas.panel_a.supervisors.add(boss)
    boss_expert = Expert.objects.create(user=boss, profession="linguist")
    boss_expert.memberships.create(panel=personas.panel_a, qualified=True)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    theirs = Assignment.objects.get(expert=personas.expert_a, answer=answer)
    _submit(theirs, RATIONALE_A)
    own = Assignment.objects.get(expert=boss_expert, answer=answer)
    assert own.status == AssignmentStatus.ASSIGNED

    client = _login("boss")
    html = client.get(_url(personas, answer)).content.decode()
    assert 'id="review-blind"' in html
    assert RATIONALE_A not in html and 'data-code="' not in html
    estimate = _rubric_estimate(theirs)
    refused = client.post(
        reverse("console_estimate_accept", args=[personas.panel_a.pk, estimate.pk])
    )
    assert refused.status_code == HTTPStatus.CONFLICT
    assert RATIONALE_A not in refused.content.decode()
    estimate.refresh_from_db()
    assert estimate.review_status == ReviewStatus.NONE

    # Once his own work is in, he sees them all.
    _submit(own, RATIONALE_PEER)
    html = client.get(_url(personas, answer)).content.decode()
    assert RATIONALE_A in html and 'id="review-blind"' not in html


def test_a_returned_estimate_goes_back_to_its_expert_with_the_comment(
    personas: Personas, scored: Scored
) -> None:
    estimate = _rubric_estimate(scored.mine)
    sup = _login("sup_a")
    done = sup.post(
        reverse("console_estimate_return", args=[personas.panel_a.pk, estimate.pk]),
        {"comment": COMMENT},
    )
    assert done.status_code == HTTPStatus.FOUND
    estimate.refresh_from_db()
    assert estimate.review_status == ReviewStatus.RETURNED
    assert estimate.review_comment == COMMENT
    assert estimate.reviewed_by == personas.supervisor_a
    scored.mine.refresh_from_db()
    assert scored.mine.status == AssignmentStatus.IN_PROGRESS
    log = SupervisorAction.objects.get(action=SupervisorAction.Kind.ESTIMATE_RETURN)
    assert log.expert == personas.expert_a and log.note == COMMENT
    assert log.panel == personas.panel_a
    # The review page says so.
    assert "returned to the expert" in sup.get(_url(personas, scored.answer)).content.decode()

    # The expert finds it first in his queue and sees the comment on the scoring page.
    expert = _login("expert_a")
    nxt = expert.get(reverse("queue_next"))
    assert nxt.status_code == HTTPStatus.FOUND
    assert nxt["Location"] == reverse("assignment", args=[scored.mine.pk])
    queue = expert.get(reverse("queue") + "?status=in_progress").content.decode()
    assert reverse("assignment", args=[scored.mine.pk]) in queue
    page = expert.get(reverse("assignment", args=[scored.mine.pk])).content.decode()
    assert COMMENT in page
    # Nobody else sees the comment on his own page.
    peer_page = _login("peer_a").get(reverse("assignment", args=[scored.peer_assignment.pk]))
    assert COMMENT not in peer_page.content.decode()

    # The resubmission, with a changed score, keeps the old one as a revision and clears the
    # return (the comment stays on record).
    old_score = estimate.score
    items = _items(scored.mine, RATIONALE_A, low=False)
    for item in items:
        if item.triple_id == estimate.triple_id:
            item.score = min(rubric_of(estimate.triple).values)
    result = assignment_submit(assignment=scored.mine, items=items, user=personas.expert_a.user)
    assert result.ok and not result.already_submitted
    estimate.refresh_from_db()
    assert estimate.review_status == ReviewStatus.NONE
    assert estimate.review_comment == COMMENT
    assert estimate.revision == 1
    revision = estimate.revisions.get()
    assert revision.score == old_score and revision.revision == 0
    scored.mine.refresh_from_db()
    assert scored.mine.status == AssignmentStatus.SUBMITTED
    assert COMMENT not in expert.get(reverse("assignment", args=[scored.mine.pk])).content.decode()


def test_an_unchanged_resubmission_also_answers_the_return(
    personas: Personas, scored: Scored
) -> None:
    estimate = _rubric_estimate(scored.mine)
    _login("sup_a").post(
        reverse("console_estimate_return", args=[personas.panel_a.pk, estimate.pk]),
        {"comment": COMMENT},
    )
    _submit(scored.mine, RATIONALE_A)
    estimate.refresh_from_db()
    assert estimate.review_status == ReviewStatus.NONE and estimate.revision == 0


def test_accept_marks_the_estimate_reviewed(personas: Personas, scored: Scored) -> None:
    estimate = _rubric_estimate(scored.peer_assignment)
    done = _login("sup_a").post(
        reverse("console_estimate_accept", args=[personas.panel_a.pk, estimate.pk])
    )
    assert done.status_code == HTTPStatus.FOUND
    estimate.refresh_from_db()
    assert estimate.review_status == ReviewStatus.ACCEPTED
    assert estimate.reviewed_by == personas.supervisor_a and estimate.reviewed_at is not None
    assert SupervisorAction.objects.filter(
        action=SupervisorAction.Kind.ESTIMATE_ACCEPT, expert=scored.peer
    ).exists()
    scored.peer_assignment.refresh_from_db()
    assert scored.peer_assignment.status == AssignmentStatus.SUBMITTED


def test_a_locked_batch_cannot_be_returned_and_bad_input_is_a_400(
    personas: Personas, scored: Scored
) -> None:
    estimate = _rubric_estimate(scored.mine)
    url = reverse("console_estimate_return", args=[personas.panel_a.pk, estimate.pk])
    sup = _login("sup_a")
    empty = sup.post(url, {"comment": "   "})
    assert empty.status_code == HTTPStatus.BAD_REQUEST
    long = sup.post(url, {"comment": "ы" * 2001})
    assert long.status_code == HTTPStatus.BAD_REQUEST
    Assignment.objects.filter(pk=scored.mine.pk).update(locked=True)
    refused = sup.post(url, {"comment": COMMENT})
    assert refused.status_code == HTTPStatus.CONFLICT
    assert "locked" in refused.content.decode()
    estimate.refresh_from_db()
    assert estimate.review_status == ReviewStatus.NONE
    scored.mine.refresh_from_db()
    assert scored.mine.status == AssignmentStatus.SUBMITTED
    assert not SupervisorAction.objects.filter(action__startswith="estimate_").exists()


def test_another_panels_estimate_does_not_exist_for_the_reviewer(
    personas: Personas, scored: Scored
) -> None:
    estimate = _rubric_estimate(scored.mine)
    for name in ("console_estimate_return", "console_estimate_accept"):
        url = reverse(name, args=[personas.panel_b.pk, estimate.pk])
        assert _login("sup_b").post(url, {"comment": COMMENT}).status_code == 404
        url_a = reverse(name, args=[personas.panel_a.pk, estimate.pk])
        assert _login("sup_b").post(url_a, {"comment": COMMENT}).status_code == 404
        assert _login("expert_a").post(url_a, {"comment": COMMENT}).status_code == 403
    estimate.refresh_from_db()
    assert estimate.review_status == ReviewStatus.NONE


def test_the_estimates_list_links_to_the_review_page(personas: Personas, scored: Scored) -> None:
    html = _login("sup_a").get(reverse("console_estimates", args=[personas.panel_a.pk]))
    assert _url(personas, scored.answer) in html.content.decode()


def test_the_review_state_is_exported(personas: Personas, scored: Scored, tmp_path: Path) -> None:
    accepted = _rubric_estimate(scored.peer_assignment)
    review.estimate_accept(estimate=accepted, user=personas.supervisor_a)
    dataset_export(tmp_path / "ds", ExportOptions(fmt="parquet"))
    table = pq.read_table(tmp_path / "ds" / "estimates.parquet").to_pandas()
    states = dict(zip(table["estimate_id"], table["review_status"].astype(str), strict=True))
    assert states[accepted.pk] == "accepted"
    others = {k: v for k, v in states.items() if k != accepted.pk}
    assert others and set(others.values()) == {""}


def _scores_of(triple: Triple) -> list[tuple[int, int | None, int]]:
    return list(triple.estimates.order_by("id").values_list("id", "score", "revision"))


def _disputed_triple(scored: Scored) -> Triple:
    estimate = _rubric_estimate(scored.mine)
    return Triple.objects.select_related("rubric").get(pk=estimate.triple_id)


def test_a_supervisor_adjudicates_a_disputed_triple(
    personas: Personas, scored: Scored, tmp_path: Path
) -> None:
    triple = _disputed_triple(scored)
    url = reverse("console_triple_adjudicate", args=[personas.panel_a.pk, triple.pk])
    sup = _login("sup_a")
    page = sup.get(_url(personas, scored.answer)).content.decode()
    assert url in page  # the form is offered on the disputed row
    score = rubric_of(triple).values[1]
    before = _scores_of(triple)
    done = sup.post(url, {"score": str(score), "reason": "Второй эксперт прав: есть ошибки."})
    assert done.status_code == HTTPStatus.FOUND
    verdict = Adjudication.objects.get(triple=triple)
    assert verdict.score == score and not verdict.is_na
    assert verdict.author == personas.supervisor_a
    log = SupervisorAction.objects.get(action=SupervisorAction.Kind.ADJUDICATE)
    assert log.panel == personas.panel_a and log.data["triple"] == triple.pk
    html = sup.get(_url(personas, scored.answer)).content.decode()
    assert "Второй эксперт прав: есть ошибки." in html
    # The experts' estimates are untouched; the dataset shows the verdict in its own columns.
    assert _scores_of(triple) == before
    dataset_export(tmp_path / "ds", ExportOptions(fmt="parquet"))
    table = pq.read_table(tmp_path / "ds" / "triples.parquet").to_pandas().set_index("triple_id")
    assert table.loc[triple.pk, "adjudicated_score"] == score
    assert table.loc[triple.pk, "adjudication_reason"] == "Второй эксперт прав: есть ошибки."
    others = table.drop(index=triple.pk)
    assert len(others) and others["adjudicated_score"].isna().all()


def test_a_bad_verdict_is_a_400_naming_the_field_and_nothing_is_written(
    personas: Personas, scored: Scored
) -> None:
    triple = _disputed_triple(scored)
    url = reverse("console_triple_adjudicate", args=[personas.panel_a.pk, triple.pk])
    sup = _login("sup_a")
    off_scale = max(rubric_of(triple).values) + 10
    for data, field in (
        ({"score": str(off_scale), "reason": "Причина."}, "score"),
        ({"score": "²", "reason": "Причина."}, "score"),
        ({"score": str(max(rubric_of(triple).values)), "reason": "  "}, "reason"),
    ):
        refused = sup.post(url, data)
        assert refused.status_code == HTTPStatus.BAD_REQUEST, data
        assert f", {field}:" in refused.content.decode()
    assert not Adjudication.objects.exists()
    # Another panel's supervisor and an expert cannot.
    assert _login("sup_b").post(url, {"score": "1", "reason": "x y"}).status_code == 404
    assert _login("expert_a").post(url, {"score": "1", "reason": "x y"}).status_code == 403
    assert not Adjudication.objects.exists()


def _verdicts() -> dict[int, tuple[Any, ...]]:
    return {
        row[0]: row[1:]
        for row in TripleAggregate.objects.values_list(
            "triple_id", "mode", "mean", "confidence", "excluded_reason"
        )
    }


def test_the_aggregation_takes_the_verdict_only_when_the_setting_says_so(
    personas: Personas, scored: Scored, settings: Any
) -> None:
    triple = _disputed_triple(scored)
    values = rubric_of(triple).values
    aggregation_run()
    before = _verdicts()
    adjudicate(
        triple=triple, score=values[0], is_na=False, reason="Прав второй эксперт.", user=None
    )
    # Off (the default): the experts' verdicts, exactly as before the adjudication.
    aggregation_run()
    assert _verdicts() == before
    settings.POLLUX = {**settings.POLLUX, "ADJUDICATION_OVERRIDES": True}
    aggregation_run()
    after = _verdicts()
    # On: the supervisor's score; the confidence is the share of the two kept expert scores
    # that gave it (one of two); every other triple keeps the experts' verdict.
    assert after.pop(triple.pk) == (values[0], float(values[0]), 0.5, "")
    before.pop(triple.pk)
    assert after == before
