"""Supervisors write the reference scores of a gold (control) answer for their panel's criteria."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus

import pytest
from django.test import Client
from django.urls import reverse

from material.models import Answer
from panels.models import SupervisorAction
from quality import control as control_services
from quality import exams as exam_services
from quality.models import ControlItem, ReferenceScore
from taxonomy.models import Criterion, CriterionGroup
from tests.conftest import Personas


def _url(personas: Personas, answer: Answer, panel: str = "a") -> str:
    target = personas.panel_a if panel == "a" else personas.panel_b
    return reverse("console_control_references", args=[target.pk, answer.pk])


def test_the_page_lists_the_panels_criteria_with_their_rubrics(
    personas: Personas, make_answer: Callable[..., Answer], client: Client
) -> None:
    answer = make_answer()
    criteria = control_services.control_reference_criteria(panel=personas.panel_a, answer=answer)
    groups = {c.group for c in criteria}
    # Science scores the domain criteria of a scientific text; the critical gates come along.
    assert CriterionGroup.CRITICAL in groups and CriterionGroup.DOMAIN in groups
    client.force_login(personas.supervisor_a)
    html = client.get(_url(personas, answer)).content.decode()
    for criterion in criteria:
        assert f'name="score_{criterion.pk}"' in html
        assert str(criterion.name) in html
    assert answer.text in html


def test_saving_references_then_making_the_answer_a_control_item(
    personas: Personas, make_answer: Callable[..., Answer], client: Client
) -> None:
    answer = make_answer()
    criteria = control_services.control_reference_criteria(panel=personas.panel_a, answer=answer)
    first, second = criteria[0], criteria[1]
    assert first.rubric and second.rubric
    client.force_login(personas.supervisor_a)
    # Adding a gold answer without references is refused.
    client.post(
        reverse("console_control", args=[personas.panel_a.pk]),
        {"action": "add", "answer": answer.pk},
    )
    assert not ControlItem.objects.exists()
    data = {
        f"score_{first.pk}": str(first.rubric.max_value),
        f"comment_{first.pk}": "  Всё верно.  ",
        f"score_{second.pk}": str(min(second.rubric.values)),
    }
    r = client.post(_url(personas, answer), data)
    assert r.status_code == HTTPStatus.FOUND
    refs = {r.criterion_id: r for r in ReferenceScore.objects.filter(answer=answer)}
    assert set(refs) == {first.pk, second.pk}  # blank criteria get no reference
    assert refs[first.pk].score == first.rubric.max_value
    assert refs[first.pk].comment == "Всё верно."
    assert refs[first.pk].author == personas.supervisor_a
    assert SupervisorAction.objects.filter(action="control_references").count() == 1
    # Editing replaces, it does not duplicate.
    data[f"score_{first.pk}"] = str(min(first.rubric.values))
    client.post(_url(personas, answer), data)
    assert ReferenceScore.objects.get(answer=answer, criterion=first).score == min(
        first.rubric.values
    )
    assert ReferenceScore.objects.filter(answer=answer).count() == 2
    client.post(
        reverse("console_control", args=[personas.panel_a.pk]),
        {"action": "add", "answer": answer.pk},
    )
    assert ControlItem.objects.filter(
        panel=personas.panel_a, answer=answer, is_active=True
    ).exists()
    assert "control item of the panel" in client.get(_url(personas, answer)).content.decode()


def test_a_score_off_the_scale_writes_nothing(
    personas: Personas, make_answer: Callable[..., Answer], client: Client
) -> None:
    answer = make_answer()
    criteria = control_services.control_reference_criteria(panel=personas.panel_a, answer=answer)
    good, bad = criteria[0], criteria[1]
    assert good.rubric and bad.rubric
    client.force_login(personas.supervisor_a)
    r = client.post(
        _url(personas, answer),
        {f"score_{good.pk}": str(good.rubric.max_value), f"score_{bad.pk}": "7"},
        follow=True,
    )
    assert "is not on the scale" in r.content.decode()
    assert not ReferenceScore.objects.filter(answer=answer).exists()
    r = client.post(_url(personas, answer), {f"score_{good.pk}": "two"}, follow=True)
    assert "Unknown score" in r.content.decode()
    assert not ReferenceScore.objects.exists()


def test_criteria_of_other_panels_are_refused_by_the_service(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    answer = make_answer()
    ours = {
        c.pk
        for c in control_services.control_reference_criteria(panel=personas.panel_a, answer=answer)
    }
    foreign = Criterion.objects.exclude(pk__in=ours).exclude(rubric=None).first()
    assert foreign is not None
    row = exam_services.ReferenceInput(answer_id=answer.pk, criterion_id=foreign.pk, score=0)
    with pytest.raises(exam_services.ExamError, match="does not score"):
        control_services.control_references_set(panel=personas.panel_a, answer=answer, rows=[row])
    assert not ReferenceScore.objects.exists()


def test_only_the_panels_supervisors_and_admins_reach_the_page(
    personas: Personas, make_answer: Callable[..., Answer], client: Client
) -> None:
    answer = make_answer()
    url = _url(personas, answer)
    client.force_login(personas.expert_a.user)
    assert client.get(url).status_code == HTTPStatus.FORBIDDEN
    client.force_login(personas.supervisor_b)
    assert client.get(url).status_code == HTTPStatus.NOT_FOUND
    client.force_login(personas.admin)
    assert client.get(url).status_code == HTTPStatus.OK
    # The control page's lookup box leads to the same page.
    client.force_login(personas.supervisor_a)
    r = client.get(
        reverse("console_control", args=[personas.panel_a.pk]),
        {"references": answer.external_id or answer.pk},
    )
    assert r.status_code == HTTPStatus.FOUND and r["Location"] == url
