"""Guidelines: versions, safe markdown, who reads and writes them, and where experts find them."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import reverse

from guidelines.models import Guideline, GuidelineExample, GuidelineVersion
from guidelines.services import ExampleInput, guideline_save
from material.models import Answer, AnswerPair, Instruction, LanguageModel
from panels.models import Panel
from quality.exams import exam_create
from taxonomy.models import Criterion
from tests.conftest import PASSWORD, Personas, make_expert
from work.assignments import assignments_build
from work.comparisons import comparisons_build
from work.models import Assignment, Estimate

pytestmark = pytest.mark.django_db


def _client(username: str) -> Client:
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    return client


def _criterion() -> Criterion:
    criterion = Criterion.objects.filter(group="general").order_by("key").first()
    assert criterion is not None
    return criterion


def _edit_body(body: str, **extra: str) -> dict[str, str]:
    return {
        "body": body,
        "hard_cases": "",
        "change_note": "",
        "ex-TOTAL_FORMS": "1",
        "ex-INITIAL_FORMS": "0",
        "ex-0-kind": "",
        "ex-0-text": "",
        "ex-0-explanation": "",
        "ex-0-score": "",
    } | extra


def test_each_save_is_a_new_version_and_old_versions_stay_as_they_were(
    personas: Personas,
) -> None:
    panel, author = personas.panel_a, personas.supervisor_a
    first, made = guideline_save(
        panel=panel,
        criterion=None,
        body="Оценивайте по существу.",
        hard_cases="Если ответ обрывается — оценивайте написанное.",
        examples=[
            ExampleInput(kind="good", text="Полный ответ.", explanation="Всё по делу.", score=3),
            ExampleInput(kind="bad", text="Ответ не о том.", score=0),
        ],
        change_note="первая редакция",
        user=author,
    )
    assert made and first.number == 1
    second, made = guideline_save(
        panel=panel,
        criterion=None,
        body="Оценивайте по существу, а не по форме.",
        examples=[ExampleInput(kind="hard", text="Ответ на грани.", explanation="Смотрите 2.")],
        user=personas.admin,
    )
    assert made and second.number == 2
    guideline = Guideline.objects.get(panel=panel, criterion=None)
    assert guideline.current_id == second.pk
    assert guideline.versions.count() == 2

    old = GuidelineVersion.objects.get(pk=first.pk)
    assert (old.body, old.hard_cases, old.change_note, old.author_id) == (
        "Оценивайте по существу.",
        "Если ответ обрывается — оценивайте написанное.",
        "первая редакция",
        author.pk,
    )
    assert list(old.examples.values_list("kind", "text", "score")) == [
        ("good", "Полный ответ.", 3),
        ("bad", "Ответ не о том.", 0),
    ]
    assert list(second.examples.values_list("kind", flat=True)) == ["hard"]
    assert GuidelineExample.objects.count() == 3

    # The same text again makes no version: the history lists real changes only.
    same, made = guideline_save(
        panel=panel,
        criterion=None,
        body="Оценивайте по существу, а не по форме.",
        examples=[ExampleInput(kind="hard", text="Ответ на грани.", explanation="Смотрите 2.")],
        user=author,
    )
    assert not made and same.pk == second.pk
    # A version is history: saving it again is refused, not an edit.
    with pytest.raises(ValueError, match="immutable"):
        old.save()


def test_a_criterion_guideline_is_its_own_per_panel(personas: Personas) -> None:
    criterion = _criterion()
    guideline_save(panel=personas.panel_a, criterion=None, body="Общее.")
    version, _ = guideline_save(panel=personas.panel_a, criterion=criterion, body="Критерий.")
    other, _ = guideline_save(panel=personas.panel_b, criterion=criterion, body="Другая панель.")
    assert version.number == 1 and other.number == 1
    assert Guideline.objects.filter(criterion=criterion).count() == 2
    assert Guideline.objects.filter(panel=personas.panel_a).count() == 2


def test_markdown_is_rendered_and_sanitised(personas: Personas) -> None:
    guideline_save(
        panel=personas.panel_a,
        criterion=None,
        body="**Важно**\n\n<script>alert('x')</script>\n\n[ссылка](javascript:alert(1))",
        examples=[
            ExampleInput(kind="bad", text='<img src=x onerror="alert(2)">', explanation="*плохо*")
        ],
    )
    page = _client("expert_a").get(reverse("guidelines_panel", args=[personas.panel_a.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "<strong>Важно</strong>" in html and "<em>плохо</em>" in html
    assert "<script>alert" not in html
    assert "&lt;script&gt;" in html  # shown as text, never run
    assert 'href="javascript' not in html  # the link is refused: its text stays text
    assert "<img" not in html


def test_experts_read_their_panels_guidelines_only(personas: Personas) -> None:
    for panel in (personas.panel_a, personas.panel_b):
        guideline_save(panel=panel, criterion=None, body=f"Руководство {panel.key}.")
    expert = _client("expert_a")
    own = expert.get(reverse("guidelines_panel", args=[personas.panel_a.pk]))
    assert own.status_code == 200 and "Руководство science." in own.content.decode()
    assert expert.get(reverse("guidelines_panel", args=[personas.panel_b.pk])).status_code == 404
    # An exam candidate is an unqualified member: he reads them too.
    make_expert("candidate", personas.panel_b, qualified=False)
    candidate = _client("candidate")
    assert candidate.get(reverse("guidelines_panel", args=[personas.panel_b.pk])).status_code == 200


def test_only_the_panels_supervisors_and_admins_write(personas: Personas) -> None:
    panel_a = personas.panel_a
    edit_a = reverse("guidelines_edit", args=[panel_a.pk])
    body = _edit_body("Новая редакция.")

    assert _client("expert_a").get(edit_a).status_code == 403
    assert _client("expert_a").post(edit_a, body).status_code == 403
    assert _client("sup_b").get(edit_a).status_code == 404
    assert _client("sup_b").post(edit_a, body).status_code == 404
    assert not GuidelineVersion.objects.exists()

    response = _client("sup_a").post(edit_a, body)
    assert response.status_code == 302
    version = GuidelineVersion.objects.get()
    assert (version.guideline.panel_id, version.author, version.number) == (
        panel_a.pk,
        personas.supervisor_a,
        1,
    )
    # Admins write every panel's.
    edit_b = reverse("guidelines_edit", args=[personas.panel_b.pk])
    criterion = _criterion()
    response = _client("admin").post(
        f"{edit_b}?criterion={quote(criterion.key)}",
        _edit_body(
            "Для критерия.", **{"ex-0-kind": "good", "ex-0-text": "Пример.", "ex-0-score": "2"}
        ),
    )
    assert response.status_code == 302
    made = GuidelineVersion.objects.get(guideline__panel=personas.panel_b)
    assert made.guideline.criterion == criterion
    assert list(made.examples.values_list("kind", "text", "score")) == [("good", "Пример.", 2)]


def test_an_example_without_a_kind_is_refused_and_nothing_is_saved(personas: Personas) -> None:
    edit = reverse("guidelines_edit", args=[personas.panel_a.pk])
    response = _client("sup_a").post(edit, _edit_body("Текст.", **{"ex-0-text": "Пример."}))
    assert response.status_code == 400
    assert not GuidelineVersion.objects.exists()


def test_authors_and_change_notes_are_for_supervisors_only(personas: Personas) -> None:
    guideline_save(
        panel=personas.panel_a,
        criterion=None,
        body="Правило.",
        change_note="заметка-для-своих",
        user=personas.supervisor_a,
    )
    url = reverse("guidelines_panel", args=[personas.panel_a.pk])
    expert_html = _client("expert_a").get(url).content.decode()
    assert "Правило." in expert_html
    # The expert sees the version's number and date, never who wrote it or why.
    assert "sup_a" not in expert_html and "заметка-для-своих" not in expert_html
    sup_html = _client("sup_a").get(url).content.decode()
    assert "sup_a" in sup_html and "заметка-для-своих" in sup_html


def test_the_supervisor_lists_criteria_and_browses_the_history(personas: Personas) -> None:
    panel = personas.panel_a
    criterion = _criterion()
    first, _ = guideline_save(panel=panel, criterion=criterion, body="Редакция один.")
    second, _ = guideline_save(panel=panel, criterion=criterion, body="Редакция два.")
    sup = _client("sup_a")
    manage = sup.get(reverse("guidelines_manage", args=[panel.pk])).content.decode()
    assert f'data-criterion="{criterion.key}"' in manage
    history = sup.get(reverse("guidelines_history", args=[panel.pk, first.guideline_id]))
    assert history.status_code == 200
    assert 'data-version="1"' in history.content.decode()
    assert 'data-version="2"' in history.content.decode()
    old = sup.get(reverse("guidelines_version", args=[panel.pk, first.pk])).content.decode()
    assert "Редакция один." in old and "Редакция два." not in old
    # Another panel's version does not exist for this panel's pages.
    response = _client("sup_b").get(reverse("guidelines_version", args=[panel.pk, second.pk]))
    assert response.status_code == 404
    response = _client("sup_b").get(
        reverse("guidelines_version", args=[personas.panel_b.pk, second.pk])
    )
    assert response.status_code == 404


def test_the_scoring_page_links_the_panel_and_each_criterion(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    panel: Panel = personas.panel_a
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    assignment = Assignment.objects.get(expert=personas.expert_a, answer=answer, panel=panel)
    html = _client("expert_a").get(reverse("assignment", args=[assignment.pk])).content.decode()
    base = reverse("guidelines_panel", args=[panel.pk])
    assert f'href="{base}"' in html
    keys = Estimate.objects.filter(assignment=assignment).values_list(
        "triple__criterion__key", flat=True
    )
    assert keys
    for key in keys:
        assert f'href="{base}?criterion={quote(key)}"' in html

    # The criterion's link opens that criterion's guideline beside the panel-wide one.
    key = keys[0]
    criterion = Criterion.objects.get(key=key)
    guideline_save(panel=panel, criterion=None, body="Для всей панели.")
    guideline_save(panel=panel, criterion=criterion, body="Именно для этого критерия.")
    guideline_save(panel=panel, criterion=_other(criterion), body="Про другой критерий.")
    page = _client("expert_a").get(f"{base}?criterion={quote(key)}").content.decode()
    assert "Для всей панели." in page and "Именно для этого критерия." in page
    assert "Про другой критерий." not in page


def _other(criterion: Criterion) -> Criterion:
    other = Criterion.objects.exclude(pk=criterion.pk).order_by("key").first()
    assert other is not None
    return other


def test_the_exam_list_links_the_panels_guidelines(personas: Personas) -> None:
    panel = personas.panel_a
    exam_create(panel=panel, title="Экзамен", user=personas.supervisor_a, is_active=True)
    make_expert("candidate", panel, qualified=False)
    html = _client("candidate").get(reverse("my_exams")).content.decode()
    assert reverse("guidelines_panel", args=[panel.pk]) in html


def test_the_side_by_side_page_links_the_panels_guidelines(personas: Personas) -> None:
    panel = personas.panel_a
    instruction = Instruction.objects.create(text="Сравните два ответа.")
    answers = [
        Answer.objects.create(
            instruction=instruction,
            model=LanguageModel.objects.get_or_create(name=f"M{n}", version="1")[0],
            text=f"Ответ {n}.",
            text_hash=f"g-pair-{n}",
        )
        for n in (1, 2)
    ]
    pair = AnswerPair.objects.create(
        instruction=instruction, answer_a=answers[0], answer_b=answers[1]
    )
    comparisons_build(panel_id=panel.pk, route=True, pair_ids=[pair.pk], seed=1)
    assignment = Assignment.objects.get(pair=pair, expert=personas.expert_a)
    html = _client("expert_a").get(reverse("assignment", args=[assignment.pk])).content.decode()
    assert f'href="{reverse("guidelines_panel", args=[panel.pk])}"' in html
