"""Side-by-side (pairwise) work next to rubric scoring: the pointwise paths leave it alone.

A pair triple has no criterion or rubric and a pair assignment sits on its pair's answer A, so
every generic read of triples, estimates and assignments meets it. Here a panel holds both
kinds at once: a pair whose answer A is also scored pointwise, and a pair of a query without a
POLLUX task, with submitted labels; the pointwise builder, the critical stop, the console, the
scoring API and a judge run must neither crash on them nor take them in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from console import selectors as console_selectors
from console import services as console_services
from judging.selectors import scope_triples
from judging.services import build_items, config_save, run_create
from material.models import Answer, AnswerPair, Instruction, LanguageModel
from panels.models import Expert, Panel
from protocol.pairwise import Label
from quality import selectors as quality_selectors
from quality.exams import ExamError
from taxonomy.services import comparison_criteria
from tests.conftest import Personas, make_expert
from work.assignments import assignments_build
from work.comparisons import comparisons_build
from work.models import (
    Assignment,
    AssignmentStatus,
    Estimate,
    EstimateStatus,
    Triple,
    TripleKind,
)
from work.services import ScoreInput, assignment_submit

pytestmark = pytest.mark.django_db

GOOD = "Ответ соответствует критерию, замечаний нет."


@dataclass
class Mixed:
    panel: Panel
    experts: list[Expert]
    scored: Answer  # scored pointwise and the answer A of `shared_pair`
    shared_pair: AnswerPair
    repa_pair: AnswerPair  # a query with no POLLUX task: compared only

    def pair_assignment(self, expert: Expert, pair: AnswerPair) -> Assignment:
        return Assignment.objects.get(expert=expert, pair=pair)

    def pointwise_assignment(self, expert: Expert) -> Assignment:
        return Assignment.objects.get(expert=expert, answer=self.scored, pair__isnull=True)


def _label_all(assignment: Assignment, label: Label) -> None:
    """Submitted labels, written as the comparison submission stores them (the pair's own
    orientation; work.comparisons owns that flow and is tested on its own)."""
    now = timezone.now()
    Estimate.objects.filter(assignment=assignment).update(
        label=label.value, status=EstimateStatus.SUBMITTED, submitted_at=now
    )
    Assignment.objects.filter(pk=assignment.pk).update(
        status=AssignmentStatus.SUBMITTED, submitted_at=now, time_spent_ms=60_000
    )


@pytest.fixture
def mixed(personas: Personas, make_answer: Callable[..., Answer]) -> Mixed:
    panel = personas.panel_a
    experts = [personas.expert_a, make_expert("expert_a2", panel)]
    scored = make_answer(text="Ответ первой модели.")
    other_model, _ = LanguageModel.objects.get_or_create(name="YandexGPT", version="1")
    rival = Answer.objects.create(
        instruction=scored.instruction,
        model=other_model,
        text="Ответ второй модели.",
        text_hash="r",
    )
    query = Instruction.objects.create(external_id="repa-q1", text="Объясните, что такое ветер.")
    first = Answer.objects.create(
        instruction=query, model=scored.model, text="Ветер — движение воздуха.", text_hash="q1"
    )
    second = Answer.objects.create(
        instruction=query, model=other_model, text="Ветер бывает сильным.", text_hash="q2"
    )
    shared_pair = AnswerPair.objects.create(
        instruction=scored.instruction, answer_a=scored, answer_b=rival
    )
    repa_pair = AnswerPair.objects.create(instruction=query, answer_a=first, answer_b=second)
    comparison_criteria()
    # The pairs are placed first: the pointwise build then meets assignments of both kinds.
    report = comparisons_build(panel_id=panel.pk, route=True, seed=7)
    assert report["assignments_created"] == 4, report
    assignments_build()
    data = Mixed(panel, experts, scored, shared_pair, repa_pair)
    # Both experts label the task-less pair (unanimously: a pairwise "agreement" to leak).
    for expert in experts:
        _label_all(data.pair_assignment(expert, repa_pair), Label.A)
    return data


def test_the_pointwise_builder_gives_rubric_work_beside_a_pair_on_the_same_answer(
    mixed: Mixed,
) -> None:
    pointwise = Triple.objects.filter(panel=mixed.panel, answer=mixed.scored, kind="pointwise")
    assert pointwise.exists()
    for expert in mixed.experts:
        # A pair assignment on the answer is not its rubric work: each expert still gets that.
        work = mixed.pointwise_assignment(expert)
        assert set(work.estimates.values_list("triple__kind", flat=True)) == {"pointwise"}
        pair = mixed.pair_assignment(expert, mixed.shared_pair)
        assert set(pair.estimates.values_list("triple__kind", flat=True)) == {"pairwise"}
        assert pair.estimates.count() == len(comparison_criteria())
    for triple in pointwise.filter(group__in=["general", "critical"]):
        assert triple.estimates.count() == min(triple.required_overlap, len(mixed.experts))


def test_a_refused_pair_is_never_revived_as_rubric_work(mixed: Mixed) -> None:
    expert = mixed.experts[0]
    pair = mixed.pair_assignment(expert, mixed.shared_pair)
    work = mixed.pointwise_assignment(expert)
    Assignment.objects.filter(pk=work.pk).delete()  # the answer's rubric slots are free again
    pair.status = AssignmentStatus.RELEASED
    pair.save(update_fields=["status"])
    Estimate.objects.filter(assignment=pair).delete()
    assignments_build(answer_ids=[mixed.scored.pk])
    pair.refresh_from_db()
    assert pair.status == AssignmentStatus.RELEASED
    assert not pair.estimates.exists()
    assert mixed.pointwise_assignment(expert).pk != pair.pk


def test_a_critical_stop_on_the_answer_leaves_the_open_pair_alone(mixed: Mixed) -> None:
    expert = mixed.experts[0]
    work = mixed.pointwise_assignment(expert)
    items = [
        ScoreInput(
            triple_id=e.triple_id,
            score=1 if e.triple.criterion and e.triple.criterion.key == "narushenie_formata" else 0,
            rationale=GOOD,
        )
        for e in work.estimates.select_related("triple__criterion").filter(triple__group="critical")
    ]
    result = assignment_submit(assignment=work, items=items)
    assert result.ok and result.critical_stop, result.errors
    pair = mixed.pair_assignment(expert, mixed.shared_pair)
    assert pair.status == AssignmentStatus.ASSIGNED and not pair.critical_stop
    assert set(pair.estimates.values_list("status", flat=True)) == {EstimateStatus.PENDING}


def test_the_console_of_a_panel_with_pairs(mixed: Mixed, personas: Personas) -> None:
    client = Client()
    client.force_login(personas.supervisor_a)
    pk = mixed.panel.pk
    for name in (
        "console_panel",
        "console_experts",
        "console_plots",
        "console_estimates",
        "console_control",
        "console_exams",
    ):
        response = client.get(reverse(name, args=[pk]))
        assert response.status_code == HTTPStatus.OK, name
    assert client.get(reverse("console")).status_code == HTTPStatus.OK
    pairwise_estimates = set(
        Estimate.objects.filter(triple__kind=TripleKind.PAIRWISE).values_list("pk", flat=True)
    )
    listed = set(console_selectors.estimates_list(mixed.panel, {}).values_list("pk", flat=True))
    assert listed and not listed & pairwise_estimates
    # Identical labels are not rubric scores that agree: agreement is per criterion group.
    agreement = quality_selectors.expert_agreement(mixed.panel)
    assert all("" not in groups for groups in agreement.values()), agreement
    times = console_selectors.median_times(mixed.panel)
    assert times["answers"] == 0  # submitted pairs are not answers scored on the rubric


def test_a_pairwise_triple_is_not_reopened_as_rubric_work(mixed: Mixed, personas: Personas) -> None:
    triple = Triple.objects.filter(pair=mixed.repa_pair).first()
    assert triple is not None
    with pytest.raises(ExamError):
        console_services.triple_reopen(triple=triple, user=personas.supervisor_a, note="why")
    triple.refresh_from_db()
    assert triple.required_overlap == 3


def test_the_scoring_api_serves_rubric_work_only(mixed: Mixed) -> None:
    expert = mixed.experts[0]
    client = Client()
    client.force_login(expert.user)
    # A pair assignment asked for by id: refused with a 409 that names it (it was a 500: the
    # rubric rows of a triple without a rubric).
    for pair in (mixed.shared_pair, mixed.repa_pair):
        pk = mixed.pair_assignment(expert, pair).pk
        response = client.get(f"/api/assignments/{pk}/")
        assert response.status_code == HTTPStatus.CONFLICT
        assert str(pk) in response.json()["detail"]
        submit = client.post(
            f"/api/assignments/{pk}/submit/", {"items": []}, content_type="application/json"
        )
        assert submit.status_code == HTTPStatus.CONFLICT
        triple_id = Estimate.objects.filter(assignment_id=pk).values_list("triple_id", flat=True)[0]
        draft = client.post(
            f"/api/assignments/{pk}/draft/",
            {"triple_id": triple_id, "score": 1},
            content_type="application/json",
        )
        assert draft.status_code == HTTPStatus.CONFLICT
        assert not Estimate.objects.filter(assignment_id=pk, score__isnull=False).exists()
    listing = client.get("/api/assignments/")
    assert listing.status_code == HTTPStatus.OK
    ids = [row["id"] for row in listing.json()["results"]]
    rubric_work = Assignment.objects.filter(expert=expert, pair__isnull=True)
    assert ids == sorted(rubric_work.values_list("pk", flat=True))
    assert mixed.pointwise_assignment(expert).pk in ids
    detail = client.get(f"/api/assignments/{mixed.pointwise_assignment(expert).pk}/")
    assert detail.status_code == HTTPStatus.OK
    assert detail.json()["task"]
    assert {c["group"] for c in detail.json()["criteria"]} >= {"critical"}


def test_a_judge_run_covers_the_rubric_triples_only(mixed: Mixed) -> None:
    scope = {"panel": mixed.panel.pk}
    triples = list(
        scope_triples(scope).select_related("answer__instruction", "criterion", "rubric")
    )
    assert triples and {t.kind for t in triples} == {TripleKind.POINTWISE}
    config = config_save(name="isolation", batch_size=50, model_family="giga")
    assert len(build_items(config, triples)) == len(triples)
    run = run_create(config=config, scope=scope, enqueue=False)
    expected = Triple.objects.filter(panel=mixed.panel, kind=TripleKind.POINTWISE).count()
    assert run.total == expected
    planned = {pk for batch in run.batches.all() for pk in batch.triple_ids}
    assert not planned & set(
        Triple.objects.filter(kind=TripleKind.PAIRWISE).values_list("pk", flat=True)
    )
