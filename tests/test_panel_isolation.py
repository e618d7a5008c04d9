"""Issue #11, "Access and blindness": panels keep to themselves, gold stays silent, scoring stays
blind for every combination of roles.

The answers here are routed to two panels at once: a brief retelling of a scientific text is
scored by Science (domain criteria) and by Editing (task and general criteria), and both see the
critical gates (routed to Crowd).
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from jobs.models import Job
from material.models import Answer
from panels.models import Membership, Panel
from quality import control as control_services
from quality import exams as exam_services
from quality.models import ControlItem, ControlStanding, ReferenceScore
from taxonomy.models import CriterionGroup
from tests.conftest import Personas, make_expert, make_user, rubric_of
from work.assignments import assignments_build
from work.models import Assignment, AssignmentKind, Estimate, ReservedAnswer, Triple
from work.services import ScoreInput, assignment_submit

pytestmark = pytest.mark.django_db

GOOD = "Ответ соответствует критерию, замечаний нет."
SHARED = "Text Transformation / Summarizing / Brief retelling / Scientific text"
LITERARY = "Text Transformation / Extract / Literary text"


@pytest.fixture
def editing(personas: Personas) -> tuple[Panel, User]:
    """The second panel of a shared answer, with its own supervisor."""
    panel = Panel.objects.get(key="editing")
    supervisor = make_user("sup_editing")
    panel.supervisors.add(supervisor)
    return panel, supervisor


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _refs_url(panel: Panel, answer: Answer) -> str:
    return reverse("console_control_references", args=[panel.pk, answer.pk])


def _critical(panel: Panel, answer: Answer) -> Any:
    criteria = control_services.control_reference_criteria(panel=panel, answer=answer)
    return next(c for c in criteria if c.group == CriterionGroup.CRITICAL)


def _submit(assignment: Assignment) -> None:
    items = [
        ScoreInput(
            triple_id=e.triple_id,
            score=0 if e.triple.group == CriterionGroup.CRITICAL else rubric_of(e.triple).max_value,
            rationale=GOOD,
        )
        for e in assignment.estimates.select_related("triple__rubric")
    ]
    result = assignment_submit(assignment=assignment, items=items)
    assert result.ok, (result.errors, result.form_errors)


# --- 1. reference scores belong to a panel ------------------------------------------------------


def test_reference_scores_of_a_shared_critical_criterion_are_per_panel(
    personas: Personas, editing: tuple[Panel, User], make_answer: Callable[..., Answer]
) -> None:
    science, sup_science = personas.panel_a, personas.supervisor_a
    panel_e, sup_e = editing
    answer = make_answer(SHARED)
    gate = _critical(science, answer)
    assert gate.pk == _critical(panel_e, answer).pk  # both panels score the gate
    assert gate.rubric is not None
    low, high = min(gate.rubric.values), max(gate.rubric.values)
    r = _client(sup_e).post(
        _refs_url(panel_e, answer), {f"score_{gate.pk}": str(low), f"comment_{gate.pk}": "E-gold"}
    )
    assert r.status_code == HTTPStatus.FOUND
    # Science's supervisor neither reads Editing's gold ...
    page = _client(sup_science).get(_refs_url(science, answer)).content.decode()
    assert "E-gold" not in page
    # ... nor overwrites it by writing his own.
    _client(sup_science).post(
        _refs_url(science, answer),
        {f"score_{gate.pk}": str(high), f"comment_{gate.pk}": "S-gold"},
    )
    by_panel = {r.panel_id: r for r in ReferenceScore.objects.filter(answer=answer)}
    assert by_panel[panel_e.pk].score == low and by_panel[panel_e.pk].comment == "E-gold"
    assert by_panel[science.pk].score == high and by_panel[science.pk].comment == "S-gold"
    assert "E-gold" in _client(sup_e).get(_refs_url(panel_e, answer)).content.decode()


def test_an_answer_not_routed_to_the_panel_has_no_references_page(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    # A literary extract is Literature's work only; Science would see just the critical gates.
    literary = make_answer(LITERARY)
    assert (
        control_services.control_reference_criteria(panel=personas.panel_a, answer=literary) == []
    )
    client = _client(personas.supervisor_a)
    assert client.get(_refs_url(personas.panel_a, literary)).status_code == HTTPStatus.NOT_FOUND
    gate = _critical(personas.panel_b, literary)
    r = client.post(_refs_url(personas.panel_a, literary), {f"score_{gate.pk}": "0"})
    assert r.status_code == HTTPStatus.NOT_FOUND
    assert not ReferenceScore.objects.exists()
    # An admin goes through a panel too: not Science's answer, not Science's gold.
    assert (
        _client(personas.admin).get(_refs_url(personas.panel_a, literary)).status_code
        == HTTPStatus.NOT_FOUND
    )


# --- 2. reserving a control item --------------------------------------------------------------


def _references(panel: Panel, answer: Answer, user: User) -> None:
    rows = [
        exam_services.ReferenceInput(
            answer_id=answer.pk,
            criterion_id=c.pk,
            score=0 if c.group == CriterionGroup.CRITICAL else c.rubric.max_value,
        )
        for c in control_services.control_reference_criteria(panel=panel, answer=answer)
        if c.rubric is not None
    ]
    control_services.control_references_set(panel=panel, answer=answer, rows=rows, user=user)


def test_a_supervisor_cannot_reserve_an_answer_of_another_panel(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    literary = make_answer(LITERARY)
    _references(personas.panel_b, literary, personas.supervisor_b)
    client = _client(personas.supervisor_a)
    r = client.post(
        reverse("console_control", args=[personas.panel_a.pk]),
        {"action": "add", "answer": str(literary.pk)},
        follow=True,
    )
    assert "No such answer" in r.content.decode()
    assert not ControlItem.objects.exists()
    assert not ReservedAnswer.objects.filter(answer=literary).exists()
    # The lookup box does not lead to it either.
    r = client.get(
        reverse("console_control", args=[personas.panel_a.pk]), {"references": literary.pk}
    )
    assert r.status_code == HTTPStatus.OK
    with pytest.raises(exam_services.ExamError):
        control_services.control_item_add(panel=personas.panel_a, answer=literary)


def test_a_control_item_leaves_other_panels_work_alone_and_releases_its_own(
    personas: Personas,
    editing: tuple[Panel, User],
    make_answer: Callable[..., Answer],
) -> None:
    science, sup_science = personas.panel_a, personas.supervisor_a
    panel_e, _sup_e = editing
    editor = make_expert("editor", panel_e)
    answer = make_answer(SHARED)
    assignments_build(answer_ids=[answer.pk])
    ours = Assignment.objects.get(expert=personas.expert_a, answer=answer, panel=science)
    theirs = Assignment.objects.get(expert=editor, answer=answer, panel=panel_e)
    _references(science, answer, sup_science)
    r = _client(sup_science).post(
        reverse("console_control", args=[science.pk]), {"action": "add", "answer": answer.pk}
    )
    assert r.status_code == HTTPStatus.FOUND
    assert ControlItem.objects.filter(panel=science, answer=answer, is_active=True).exists()
    # Editing's work goes on: the answer is not reserved, its assignment is untouched.
    assert not ReservedAnswer.objects.filter(answer=answer).exists()
    theirs.refresh_from_db()
    assert theirs.status == "assigned" and theirs.estimates.exists()
    # Science's own open work on its new gold is released (drafts would be kept) ...
    ours.refresh_from_db()
    assert ours.status == "released"
    # ... and no build gives Science work on it again, while Editing still gets its slots.
    second_editor = make_expert("editor2", panel_e)
    make_expert("scientist2", science)
    assignments_build(answer_ids=[answer.pk])
    assert not Assignment.objects.filter(
        answer=answer, panel=science, kind=AssignmentKind.WORK
    ).exclude(status="released")
    assert Assignment.objects.filter(expert=second_editor, answer=answer, panel=panel_e).exists()
    # Who held it as Science's work never gets it back as a control item.
    control_services.control_settings_update(panel=science, user=sup_science, rate=1.0)
    control_services.control_items_distribute(panel_id=science.pk)
    assert not Assignment.objects.filter(
        expert=personas.expert_a, kind=AssignmentKind.CONTROL
    ).exists()


# --- 3. blindness of a supervisor who is an expert of his panel ---------------------------------


def test_a_supervising_expert_does_not_see_scores_of_answers_open_in_his_queue(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    science = personas.panel_a
    boss = make_expert("boss", science)
    science.supervisors.add(boss.user)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    peer = Assignment.objects.get(expert=personas.expert_a, answer=answer, panel=science)
    own = Assignment.objects.get(expert=boss, answer=answer, panel=science)
    _submit(peer)
    url = reverse("console_estimates", args=[science.pk])
    client = _client(boss.user)
    listing = client.get(url, {"expert": personas.expert_a.pseudonym}).content.decode()
    assert personas.expert_a.pseudonym not in listing.split('id="estimates-table"', 1)[1]
    assert "0 estimates" in listing
    # Filtering by a score must not tell either.
    assert "0 estimates" in client.get(url, {"score": "0"}).content.decode()
    # Nor do the panel's score aggregates: on a young panel they are his peers' scores.
    from console.stats import panel_stats_refresh

    panel_stats_refresh(panel_id=science.pk)
    plots_page = client.get(reverse("console_plots", args=[science.pk])).content.decode()
    assert 'id="blind-note"' in plots_page and "<figcaption" not in plots_page
    experts = client.get(reverse("console_experts", args=[science.pk])).content.decode()
    assert 'id="blind-note"' in experts
    seen = _client(personas.supervisor_a).get(reverse("console_plots", args=[science.pk]))
    assert "<figcaption" in seen.content.decode() and "blind-note" not in seen.content.decode()
    # A supervisor who is not an expert sees the scores as ever.
    other = _client(personas.supervisor_a).get(url, {"expert": personas.expert_a.pseudonym})
    n = Estimate.objects.filter(assignment=peer, status="submitted", triple__panel=science).count()
    assert f"{n} estimate" in other.content.decode()
    # Once his own scores are in, the answer is no longer blind for him.
    _submit(own)
    listing = client.get(url, {"expert": personas.expert_a.pseudonym}).content.decode()
    assert f"{n} estimate" in listing


# --- 4. silent control items ------------------------------------------------------------------


def test_an_expert_cannot_tell_a_control_item_from_work(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    science, sup = personas.panel_a, personas.supervisor_a
    gold = make_answer(text="Эталонный ответ.")
    # References on one criterion only: the copy is still scored on every criterion of work.
    criterion = next(
        c
        for c in control_services.control_reference_criteria(panel=science, answer=gold)
        if c.group == CriterionGroup.DOMAIN
    )
    assert criterion.rubric is not None
    control_services.control_references_set(
        panel=science,
        answer=gold,
        rows=[
            exam_services.ReferenceInput(
                answer_id=gold.pk, criterion_id=criterion.pk, score=criterion.rubric.max_value
            )
        ],
    )
    control_services.control_item_add(panel=science, answer=gold, user=sup)
    control_services.control_settings_update(panel=science, user=sup, rate=1.0)
    work_answer = make_answer()
    assignments_build(answer_ids=[work_answer.pk])
    assert control_services.control_items_distribute(panel_id=science.pk) == 1
    control = Assignment.objects.get(expert=personas.expert_a, kind=AssignmentKind.CONTROL)
    work = Assignment.objects.get(expert=personas.expert_a, kind=AssignmentKind.WORK)

    client = _client(personas.expert_a.user)
    listing = client.get(reverse("api-assignment-list")).json()["results"]
    rows = {row["id"]: row for row in listing}
    assert rows[control.pk]["kind"] == rows[work.pk]["kind"] == "work"
    assert rows[control.pk]["reserved_until"] and rows[work.pk]["reserved_until"]
    assert set(rows[control.pk]) == set(rows[work.pk])

    def keys(assignment: Assignment) -> list[str]:
        detail = client.get(reverse("api-assignment-detail", args=[assignment.pk])).json()
        return [c["key"] for c in detail["criteria"]]

    # The same criteria, in the same order, as real work of the same kind of answer.
    assert keys(control) == keys(work)
    # The scoring pages are the same page: nothing names the kind.
    for assignment in (control, work):
        html = client.get(reverse("assignment", args=[assignment.pk])).content.decode()
        assert "control" not in html.lower()


# --- 5. pauses are per panel --------------------------------------------------------------------


def test_a_pause_holds_in_its_panel_only(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    science, literature = personas.panel_a, personas.panel_b
    both = make_expert("both", science, literature)
    sci_work, lit_work = make_answer(), make_answer(LITERARY)
    assignments_build(answer_ids=[sci_work.pk, lit_work.pk])
    sci = Assignment.objects.get(expert=both, panel=science)
    lit = Assignment.objects.get(expert=both, panel=literature)
    ControlStanding.objects.create(expert=both, panel=literature, n_items=3, n_total=9)

    r = _client(personas.supervisor_b).post(
        reverse("console_expert_pause", args=[literature.pk, both.pk]),
        {"note": "Литература: личная заметка"},
    )
    assert r.status_code == HTTPStatus.FOUND
    assert Membership.objects.get(expert=both, panel=literature).is_paused
    assert not Membership.objects.get(expert=both, panel=science).is_paused
    # Science's console shows no pause and not Literature's private note.
    table = _client(personas.supervisor_a).get(reverse("console_experts", args=[science.pk]))
    assert "личная заметка" not in table.content.decode()
    assert both.pseudonym not in (
        _client(personas.supervisor_a)
        .get(reverse("console_experts", args=[science.pk]), {"status": "paused"})
        .content.decode()
    )
    # The paused panel's work cannot be opened; the other panel's can.
    expert_client = _client(both.user)
    assert expert_client.get(reverse("assignment", args=[lit.pk])).status_code == HTTPStatus.FOUND
    assert expert_client.get(reverse("assignment", args=[sci.pk])).status_code == HTTPStatus.OK
    detail = expert_client.get(reverse("api-assignment-detail", args=[lit.pk]))
    assert detail.status_code == HTTPStatus.CONFLICT
    assert expert_client.get(reverse("queue_next"))["Location"] == reverse(
        "assignment", args=[sci.pk]
    )
    # New work comes from Science only.
    more_sci, more_lit = make_answer(text="Ещё"), make_answer(LITERARY, text="Ещё один")
    assignments_build(answer_ids=[more_sci.pk, more_lit.pk])
    assert Assignment.objects.filter(expert=both, answer=more_sci).exists()
    assert not Assignment.objects.filter(expert=both, answer=more_lit).exists()
    # Resuming in Science (where he is not paused) leaves Literature's pause and record alone.
    _client(personas.supervisor_a).post(
        reverse("console_expert_resume", args=[science.pk, both.pk])
    )
    assert Membership.objects.get(expert=both, panel=literature).is_paused
    assert ControlStanding.objects.get(expert=both, panel=literature).n_items == 3
    # Science's supervisor cannot resume him in Literature.
    r = _client(personas.supervisor_a).post(
        reverse("console_expert_resume", args=[literature.pk, both.pk])
    )
    assert r.status_code == HTTPStatus.NOT_FOUND
    assert Membership.objects.get(expert=both, panel=literature).is_paused


def test_failing_control_items_pause_in_their_panel_only(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    from work.services import closed_reason

    science, literature = personas.panel_a, personas.panel_b
    both = make_expert("both", science, literature)
    control_services.control_settings_update(
        panel=science, user=None, rate=1.0, min_items=1, accuracy_threshold=0.9
    )
    gold = make_answer(text="Эталон")
    _references(science, gold, personas.supervisor_a)
    control_services.control_item_add(panel=science, answer=gold)
    assignments_build(answer_ids=[make_answer().pk, make_answer(LITERARY).pk])
    control_services.control_items_distribute(panel_id=science.pk)
    control = Assignment.objects.get(expert=both, kind=AssignmentKind.CONTROL)
    items = [
        ScoreInput(
            triple_id=e.triple_id,
            score=max(rubric_of(e.triple).values)
            if e.triple.group == CriterionGroup.CRITICAL
            else 0,
            rationale=GOOD,
        )
        for e in control.estimates.select_related("triple__rubric")
    ]
    from django.db import transaction

    with transaction.atomic():
        assert assignment_submit(assignment=control, items=items).ok
    control_services.control_on_assignment_submitted(control.pk)
    assert Membership.objects.get(expert=both, panel=science).is_paused
    assert not Membership.objects.get(expert=both, panel=literature).is_paused
    lit = Assignment.objects.get(expert=both, panel=literature, kind=AssignmentKind.WORK)
    assert closed_reason(lit) == ""


# --- 6. builds, reopens and reassigns are panel jobs ----------------------------------------------


def test_a_console_build_is_scoped_to_its_panel(
    personas: Personas,
    editing: tuple[Panel, User],
    make_answer: Callable[..., Answer],
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    science = personas.panel_a
    panel_e, _sup = editing
    make_expert("editor", panel_e)
    answers = [make_answer(SHARED), make_answer(SHARED, text="Второй")]
    with django_capture_on_commit_callbacks(execute=True):
        r = _client(personas.supervisor_a).post(reverse("console_build", args=[science.pk]))
    job = Job.objects.get()
    assert r["Location"] == reverse("console_job", args=[job.pk])
    # No list of every answer in the job's parameters.
    assert "answer_ids" not in job.params and job.params["panel_id"] == science.pk
    job.refresh_from_db()
    assert job.status == "done", job.message
    assert Assignment.objects.filter(panel=science, answer__in=answers).exists()
    assert not Assignment.objects.exclude(panel=science).exists()
    assert not Triple.objects.filter(answer__in=answers, panel=panel_e).exists()


def test_reopen_and_reassign_queue_jobs_instead_of_building_in_the_request(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    science = personas.panel_a
    make_expert("sci2", science)
    make_expert("sci3", science)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    client = _client(personas.supervisor_a)
    before = Assignment.objects.count()
    # on_commit callbacks are not run: whatever is built, is built by the job, later.
    r = client.post(reverse("console_expert_reassign", args=[science.pk, personas.expert_a.pk]))
    job = Job.objects.get(params__action="reassign")
    assert r["Location"] == reverse("console_job", args=[job.pk])
    assert job.status == "queued" and job.params["answer_ids"] == [answer.pk]
    assert Assignment.objects.count() == before
    triple = Triple.objects.filter(answer=answer, panel=science).exclude(group="critical").first()
    assert triple is not None
    r = client.post(
        reverse("console_reopen", args=[science.pk]), {"triple": triple.pk, "note": "Спорно"}
    )
    job = Job.objects.get(params__action="reopen")
    assert r["Location"] == reverse("console_job", args=[job.pk])
    assert job.params == {"panel_id": science.pk, "action": "reopen", "answer_ids": [answer.pk]}
    assert Assignment.objects.count() == before
