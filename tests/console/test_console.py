"""The supervisor console: control items and the automatic pause, agreement, lists, actions and
who may see what."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from console import plots
from jobs.models import Job
from material.models import Answer
from panels.models import Expert, Membership, SupervisorAction, SupervisorNotice
from panels.services import expert_resume
from quality import selectors as quality_selectors
from quality.control import control_item_add, control_items_distribute, control_settings_update
from quality.models import ControlDelivery, ControlStanding, ReferenceScore
from tests.conftest import (
    PASSWORD,
    Personas,
    criterion_id_of,
    criterion_of,
    make_expert,
    rubric_of,
)
from work.assignments import assignments_build
from work.models import Assignment, AssignmentKind, Estimate, Triple
from work.services import ScoreInput, ScoringClosed, assignment_submit

pytestmark = pytest.mark.django_db

GOOD = "Ответ соответствует критерию, замечаний нет."


def _login(username: str) -> Client:
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    return client


def _submit(assignment: Assignment, value: Callable[[Estimate], int]) -> None:
    items = [
        ScoreInput(triple_id=e.triple_id, score=value(e), rationale=GOOD)
        for e in assignment.estimates.select_related("triple__rubric")
    ]
    result = assignment_submit(assignment=assignment, items=items)
    assert result.ok, result.errors


def _gold(answer: Answer, personas: Personas, *, best: bool = False) -> None:
    """Reference scores for every panel-A triple criterion of the answer: all top scores, or
    with `best` the best end of each scale (0 on the critical gates)."""
    assignments_build(answer_ids=[answer.pk])
    triples = Triple.objects.filter(answer=answer, panel=personas.panel_a).select_related("rubric")
    ReferenceScore.objects.bulk_create(
        [
            ReferenceScore(
                answer=answer,
                criterion_id=criterion_id_of(t),
                panel=personas.panel_a,
                score=rubric_of(t).best_value if best else rubric_of(t).max_value,
                comment="ok",
            )
            for t in triples
        ]
    )
    # The gold answer was built as work above; real runs start from material never built.
    Assignment.objects.filter(answer=answer).delete()


def test_control_items_are_mixed_in_and_a_failing_expert_is_paused_and_resumed(
    personas: Personas,
    make_answer: Callable[..., Answer],
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    panel = personas.panel_a
    golds = [make_answer(text=f"Эталонный ответ {i}") for i in range(2)]
    for gold in golds:
        _gold(gold, personas)
        control_item_add(panel=panel, answer=gold, user=personas.supervisor_a)
    control_settings_update(
        panel=panel, user=personas.supervisor_a, rate=1.0, min_items=2, accuracy_threshold=0.7
    )
    work = [make_answer(text=f"Рабочий ответ {i}") for i in range(2)]
    assignments_build(answer_ids=[a.pk for a in work])
    expert = personas.expert_a
    assert Assignment.objects.filter(expert=expert, kind="work").count() == 2

    assert control_items_distribute(panel_id=panel.pk) == 2
    assert control_items_distribute(panel_id=panel.pk) == 0  # idempotent
    controls = list(Assignment.objects.filter(expert=expert, kind=AssignmentKind.CONTROL))
    assert len(controls) == 2
    # Silent: the copies are other Answer rows with the gold text; the queue shows no kind.
    assert {c.answer_id for c in controls}.isdisjoint({g.pk for g in golds})
    queue = _login("expert_a").get(reverse("queue")).content.decode()
    assert "control" not in queue.lower()

    # Every score one below the reference: accuracy 0 on both control items.
    with django_capture_on_commit_callbacks(execute=True):
        _submit(controls[0], lambda e: rubric_of(e.triple).max_value - 1)
    membership = Membership.objects.get(expert=expert, panel=panel)
    assert not membership.is_paused  # one item is below the minimum count
    with django_capture_on_commit_callbacks(execute=True):
        _submit(controls[1], lambda e: rubric_of(e.triple).max_value - 1)
    membership.refresh_from_db()
    assert membership.is_paused and "control" in membership.paused_reason
    standing = ControlStanding.objects.get(expert=expert, panel=panel)
    assert standing.n_items == 2 and standing.accuracy == 0
    assert SupervisorNotice.objects.filter(panel=panel, expert=expert).count() == 1
    assert SupervisorAction.objects.filter(action="auto_pause", actor=None).exists()
    assert ControlDelivery.objects.filter(expert=expert, graded_at__isnull=False).count() == 2

    # Paused: the builder gives no new work.
    more = make_answer(text="Ещё один ответ")
    assignments_build(answer_ids=[more.pk])
    assert not Assignment.objects.filter(expert=expert, answer=more).exists()
    # The supervisor sees the accuracy and the notice, and resumes.
    client = _login("sup_a")
    page = client.get(reverse("console_panel", args=[panel.pk])).content.decode()
    assert "paused automatically" in page
    table = client.get(reverse("console_experts", args=[panel.pk])).content.decode()
    assert "0%" in table and expert.pseudonym in table
    response = client.post(reverse("console_expert_resume", args=[panel.pk, expert.pk]))
    assert response.status_code == HTTPStatus.FOUND
    membership.refresh_from_db()
    assert not membership.is_paused
    assert ControlStanding.objects.get(expert=expert, panel=panel).n_items == 0


def test_agreement_with_the_mode_of_the_others_per_group(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    panel = personas.panel_a
    make_expert("sci2", panel)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    x, y = (
        Expert.objects.get(user__username="expert_a"),
        Expert.objects.get(user__username="sci2"),
    )
    triples = list(
        Triple.objects.filter(answer=answer, panel=panel, required_overlap=2).order_by("pk")[:2]
    )
    assert len(triples) == 2
    group = triples[0].group
    Triple.objects.filter(pk=triples[1].pk).update(group=group)
    # t1: X 2, Y 1 (disagree, distance 1); t2: both 2 (agree).
    values = {(triples[0].pk, x.pk): 2, (triples[0].pk, y.pk): 1,
              (triples[1].pk, x.pk): 2, (triples[1].pk, y.pk): 2}  # fmt: skip
    for (triple_id, expert_id), score in values.items():
        Estimate.objects.filter(triple_id=triple_id, expert_id=expert_id).update(
            status="submitted", score=score, rationale=GOOD
        )
    result = quality_selectors.expert_agreement(panel)
    ax = result[x.pk][group]
    assert (ax.n, ax.agree) == (2, 1)
    assert ax.rate == pytest.approx(0.5) and ax.distance == pytest.approx(0.5)
    assert result[y.pk]["all"].rate == pytest.approx(0.5)

    # The console's raw SQL (table names from the models' _meta) runs on these votes.
    from console.stats import panel_stats_compute
    from dataset.aggregation import aggregation_run

    aggregation_run()
    stats = panel_stats_compute(panel)
    distribution = {d["key"]: d["counts"] for d in stats["distribution"]}
    assert distribution[criterion_of(triples[0]).key] == {"1": 1, "2": 1}
    assert sum(r[2] for r in stats["groups"]) >= 2  # both triples have their two votes
    assert sum(stats["confidence"]) >= 1
    assert stats["agreement"][str(x.pk)][group][:2] == [2, 1]


def test_lock_reassign_reopen_and_build_from_the_console(
    personas: Personas,
    make_answer: Callable[..., Answer],
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    panel = personas.panel_a
    make_expert("sci2", panel)
    make_expert("sci3", panel)
    first, second = make_answer(), make_answer(text="Второй ответ модели.")
    assignments_build(answer_ids=[first.pk, second.pk])
    expert = personas.expert_a
    done = Assignment.objects.filter(expert=expert, answer=first, panel=panel).first()
    assert done is not None
    _submit(done, lambda e: 0 if e.triple.group == "critical" else rubric_of(e.triple).max_value)
    client = _login("sup_a")

    assert client.post(reverse("console_lock", args=[panel.pk]), {}).status_code == 302
    done.refresh_from_db()
    assert done.locked
    with pytest.raises(ScoringClosed):
        _submit(done, lambda e: 0)

    open_before = Assignment.objects.filter(
        expert=expert, panel=panel, status__in=["assigned", "in_progress"]
    ).count()
    assert open_before >= 1
    # Reassign and reopen run their build as a job of the panel, not inside the request.
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("console_expert_reassign", args=[panel.pk, expert.pk]))
    reassign_job = Job.objects.get(kind="assignments", params__action="reassign")
    assert response["Location"] == reverse("console_job", args=[reassign_job.pk])
    assert reassign_job.params["panel_id"] == panel.pk
    reassign_job.refresh_from_db()
    assert reassign_job.status == "done", reassign_job.message
    assert not Assignment.objects.filter(
        expert=expert, panel=panel, status__in=["assigned", "in_progress"]
    ).exists()
    assert SupervisorAction.objects.get(action="reassign").data == {"released": open_before}

    triple = Triple.objects.filter(answer=first, panel=panel).exclude(group="critical").first()
    assert triple is not None
    before = triple.required_overlap
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("console_reopen", args=[panel.pk]),
            {"triple": triple.pk, "note": "Оценки противоречат друг другу"},
        )
    reopen_job = Job.objects.get(kind="assignments", params__action="reopen")
    assert response["Location"] == reverse("console_job", args=[reopen_job.pk])
    assert reopen_job.params == {"panel_id": panel.pk, "action": "reopen", "answer_ids": [first.pk]}
    triple.refresh_from_db()
    assert triple.required_overlap == before + 1
    assert triple.reopened_note == "Оценки противоречат друг другу"

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("console_build", args=[panel.pk]))
    job = Job.objects.get(kind="assignments", params__action="build")
    assert response["Location"] == reverse("console_job", args=[job.pk])
    job.refresh_from_db()
    assert job.status == "done", job.message
    status = client.get(reverse("console_job", args=[job.pk]), HTTP_HX_REQUEST="true")
    assert status.status_code == 200 and 'data-status="done"' in status.content.decode()


def test_console_pages_render_with_lists_filters_and_plots(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    panel = personas.panel_a
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    assignment = Assignment.objects.filter(expert=personas.expert_a, panel=panel).first()
    assert assignment is not None
    _submit(
        assignment, lambda e: 0 if e.triple.group == "critical" else rubric_of(e.triple).max_value
    )
    client = _login("sup_a")
    assert client.get(reverse("console")).status_code == 200
    page = client.get(reverse("console_panel", args=[panel.pk]))
    assert page.status_code == 200
    table = client.get(reverse("console_experts", args=[panel.pk]), HTTP_HX_REQUEST="true")
    html = table.content.decode()
    # Supervisors see their experts' pseudonyms and usernames; a partial, not the whole page.
    assert "expert_a" in html and personas.expert_a.pseudonym in html and "<html" not in html
    paused = client.get(reverse("console_experts", args=[panel.pk]), {"status": "paused"})
    assert personas.expert_a.pseudonym not in paused.content.decode()
    listing = client.get(
        reverse("console_estimates", args=[panel.pk]),
        {"status": "submitted", "expert": personas.expert_a.pseudonym},
    )
    n_submitted = Estimate.objects.filter(
        assignment=assignment, status="submitted", triple__panel=panel
    ).count()
    assert f"{n_submitted} estimate" in listing.content.decode()
    assert GOOD not in listing.content.decode()  # no rationale text in lists
    plots_page = client.get(reverse("console_plots", args=[panel.pk])).content.decode()
    assert plots_page.count("<svg") >= 3


def test_svg_plots_escape_labels_and_show_counts() -> None:
    svg = plots.score_distribution_chart({"2": 5, "0": 1, "NA": 2}, title="<b>x</b>")
    assert "&lt;b&gt;" in svg and "<b>" not in svg
    assert svg.index(">0<") < svg.index(">2<") < svg.index(">NA<")


def test_an_expert_cannot_open_the_console(personas: Personas) -> None:
    client = _login("expert_a")
    assert client.get(reverse("console")).status_code == 403
    assert client.get(reverse("console_panel", args=[personas.panel_a.pk])).status_code == 403
    assert client.get(reverse("console_exams", args=[personas.panel_a.pk])).status_code == 403
    assert Client().get(reverse("console")).status_code == 302  # anonymous: to the login page


def test_a_supervisor_of_panel_a_cannot_see_or_act_on_panel_b(personas: Personas) -> None:
    client = _login("sup_a")
    b = personas.panel_b
    expert_b = personas.expert_b
    for name in ("console_panel", "console_experts", "console_plots", "console_estimates",
                 "console_exams", "console_control"):  # fmt: skip
        assert client.get(reverse(name, args=[b.pk])).status_code == 404, name
    assert client.post(reverse("console_expert_pause", args=[b.pk, expert_b.pk])).status_code == 404
    # Nor through their own panel's URL with B's expert.
    url = reverse("console_expert_pause", args=[personas.panel_a.pk, expert_b.pk])
    assert client.post(url).status_code == 404
    assert not Membership.objects.filter(expert=expert_b, is_paused=True).exists()
    assert client.post(reverse("console_build", args=[b.pk])).status_code == 404
    assert not Job.objects.exists()
    listing = client.get(reverse("console")).content.decode()
    assert b.name_en not in listing and b.name_ru not in listing


def test_an_admin_sees_every_panel(personas: Personas) -> None:
    client = _login("admin")
    assert client.get(reverse("console_panel", args=[personas.panel_b.pk])).status_code == 200


def test_resume_is_audited(personas: Personas) -> None:
    expert = personas.expert_a
    Membership.objects.filter(expert=expert).update(is_paused=True)
    expert_resume(expert=expert, user=personas.supervisor_a, panel=personas.panel_a, note="ок")
    log = SupervisorAction.objects.get(action="resume")
    assert log.actor == personas.supervisor_a and log.expert == expert
