"""The data browser and the console's search-as-you-type pickers: what they find, for whom."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from dataset.models import EXCLUDED_FEW, TripleAggregate
from material.models import Answer, LanguageModel
from tests.conftest import PASSWORD, Personas
from work.assignments import assignments_build
from work.models import Assignment, Estimate, Triple

pytestmark = pytest.mark.django_db

BROWSER = "console_browser"
SCIENCE = "Original Text Generation / Scientific text / Academic text"
POETRY = "Original Text Generation / Literary text / Poetry"


def _login(username: str) -> Client:
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    return client


def _answer_ids(html: str) -> set[int]:
    return {int(n) for n in re.findall(r'data-answer="(\d+)"', html)}


def _triple_ids(html: str) -> set[int]:
    return {int(n) for n in re.findall(r'data-triple="(\d+)"', html)}


def _instruction_ids(html: str) -> set[int]:
    return {int(n) for n in re.findall(r'data-instruction="(\d+)"', html)}


def _option_values(html: str) -> set[str]:
    return set(re.findall(r'<option value="([^"]+)"', html))


@pytest.fixture
def material(personas: Personas, make_answer: Callable[..., Answer]) -> dict[str, Answer]:
    """Three science answers (one by another model, one hard, one with an external id) and one
    poetry answer that no science panel scores."""
    plain = make_answer(text="Фотосинтез идёт в хлоропластах.")
    quasar = make_answer(text="Квазар — активное ядро далёкой галактики.", model="YandexGPT")
    quasar.instruction.complexity = "hard"
    quasar.instruction.save(update_fields=["complexity"])
    named = make_answer(text="Митохондрии вырабатывают энергию.")
    named.external_id = "ext-mito-77"
    named.save(update_fields=["external_id"])
    poem = make_answer(POETRY, text="Стихотворение о квазаре и осени.")
    assignments_build(answer_ids=[plain.pk, quasar.pk, named.pk, poem.pk])
    assert Triple.objects.filter(answer=plain, panel=personas.panel_a).exists()
    assert not Triple.objects.filter(answer=poem, panel=personas.panel_a).exists()
    assert Triple.objects.filter(answer=poem, panel=personas.panel_b).exists()
    return {"plain": plain, "quasar": quasar, "named": named, "poem": poem}


def test_search_and_answer_filters_return_the_right_rows(
    personas: Personas, material: dict[str, Answer]
) -> None:
    client = _login("admin")
    url = reverse(BROWSER)
    everything = client.get(url)
    assert everything.status_code == 200
    assert _answer_ids(everything.content.decode()) >= {a.pk for a in material.values()}

    # Text (any case), the answer's external id, its id, and the instruction's external id.
    assert _answer_ids(client.get(url, {"q": "квазар"}).content.decode()) == {
        material["quasar"].pk,
        material["poem"].pk,
    }
    assert _answer_ids(client.get(url, {"q": "ext-mito-77"}).content.decode()) == {
        material["named"].pk
    }
    plain = material["plain"]
    assert plain.pk in _answer_ids(client.get(url, {"q": str(plain.pk)}).content.decode())
    instruction_ext = plain.instruction.external_id or ""
    found = _answer_ids(client.get(url, {"q": instruction_ext}).content.decode())
    assert found == {plain.pk}
    # Instruction text is searched too.
    assert plain.pk in _answer_ids(client.get(url, {"q": "аннотацию"}).content.decode())

    assert _answer_ids(client.get(url, {"complexity": "hard"}).content.decode()) == {
        material["quasar"].pk
    }
    yandex = LanguageModel.objects.get(name="YandexGPT")
    assert _answer_ids(client.get(url, {"model": yandex.pk}).content.decode()) == {
        material["quasar"].pk
    }
    poem_task = material["poem"].instruction.task_id or 0
    assert _answer_ids(client.get(url, {"task": poem_task}).content.decode()) == {
        material["poem"].pk
    }
    in_b: dict[str, str | int] = {"panel": personas.panel_b.pk, "q": "квазар"}
    assert _answer_ids(client.get(url, in_b).content.decode()) == {material["poem"].pk}


def test_triple_filters_on_the_verdict(personas: Personas, material: dict[str, Answer]) -> None:
    panel = personas.panel_a
    sure, unsure = Triple.objects.filter(answer=material["plain"], panel=panel)[:2]
    TripleAggregate.objects.create(triple=sure, n_estimates=3, mean=2.0, confidence=0.9)
    TripleAggregate.objects.create(
        triple=unsure, n_estimates=1, confidence=0.3, excluded_reason=EXCLUDED_FEW
    )
    client = _login("sup_a")
    url = reverse(BROWSER)
    base: dict[str, str | int] = {"kind": "triples", "panel": panel.pk}

    def found(**extra: str) -> set[int]:
        response = client.get(url, {**base, **extra})
        assert response.status_code == 200
        return _triple_ids(response.content.decode())

    assert found(conf_min="0.8") == {sure.pk}
    assert found(conf_max="0,5") == {unsure.pk}
    assert found(excluded=EXCLUDED_FEW) == {unsure.pk}
    assert found(status="in_dataset") == {sure.pk}
    assert found(status="excluded") == {unsure.pk}
    no_verdict = found(status="no_verdict")
    assert sure.pk not in no_verdict and unsure.pk not in no_verdict and no_verdict
    # Every built triple still has its slots open.
    assert found(status="open") >= {sure.pk, unsure.pk}
    # Answers with a matching triple, for the answer view.
    answers = _answer_ids(client.get(url, {"status": "excluded"}).content.decode())
    assert answers == {material["plain"].pk}
    # Searching triples by their own id.
    assert sure.pk in found(q=str(sure.pk))
    # Bad input is a 400 naming the field, never a 500.
    bad = client.get(url, {"conf_min": "2"}, HTTP_ACCEPT_LANGUAGE="en")
    assert bad.status_code == 400 and b"conf_min" in bad.content
    # The browser page itself, the reason where the results would be, in the form's words.
    html = bad.content.decode()
    assert 'id="browser-filters"' in html and 'id="browser-error"' in html
    assert "Confidence from: between 0 and 1." in html
    assert client.get(url, {"status": "whatever"}).status_code == 400
    assert client.get(url, {"task": "abc"}).status_code == 400


def test_keyset_pages_cover_every_row_once(personas: Personas, material: dict[str, Answer]) -> None:
    from console import browser

    filters = browser.Filters(kind="triples")
    seen: list[int] = []
    while True:
        page = browser.browse_triples(filters, panel_ids=None, viewer=None, size=7)
        seen += [t.pk for t in page.rows]
        if page.next_before is None:
            break
        filters = browser.Filters(kind="triples", before=page.next_before)
    expected = list(
        Triple.objects.filter(answer_id__in=[a.pk for a in material.values()])
        .order_by("-pk")
        .values_list("pk", flat=True)
    )
    assert seen == expected


def test_a_supervisor_sees_only_his_panels_and_never_the_model(
    personas: Personas, material: dict[str, Answer]
) -> None:
    client = _login("sup_a")
    url = reverse(BROWSER)
    response = client.get(url)
    html = response.content.decode()
    assert response.status_code == 200
    ids = _answer_ids(html)
    assert material["plain"].pk in ids
    assert material["poem"].pk not in ids
    assert material["poem"].pk not in _answer_ids(client.get(url, {"q": "осени"}).content.decode())
    triples = _triple_ids(client.get(url, {"kind": "triples"}).content.decode())
    assert triples and set(
        Triple.objects.filter(pk__in=triples).values_list("panel", flat=True)
    ) == {personas.panel_a.pk}
    # Another panel does not exist for him.
    assert client.get(url, {"panel": personas.panel_b.pk}).status_code == 404
    # No model column, no model filter; a hand-written ?model= filters nothing.
    assert "browser-model-filter" not in html and "model-col" not in html
    assert "YandexGPT" not in client.get(url, {"kind": "triples"}).content.decode()
    yandex = LanguageModel.objects.get(name="YandexGPT")
    unfiltered = _answer_ids(client.get(url, {"model": yandex.pk}).content.decode())
    assert unfiltered == ids

    admin_html = _login("admin").get(url).content.decode()
    assert "browser-model-filter" in admin_html and "model-col" in admin_html
    assert "YandexGPT" in admin_html


def test_experts_and_anonymous_users_are_kept_out(
    personas: Personas, material: dict[str, Answer]
) -> None:
    url = reverse(BROWSER)
    assert _login("expert_a").get(url).status_code == 403
    pick = reverse("console_pick", args=[personas.panel_a.pk, "answers"])
    assert _login("expert_a").get(pick, {"q": "квазар"}).status_code == 403
    assert Client().get(url).status_code == 302


def test_pickers_find_the_panels_answers_triples_and_tasks(
    personas: Personas, material: dict[str, Answer]
) -> None:
    client = _login("sup_a")
    panel_a, panel_b = personas.panel_a, personas.panel_b

    def pick(panel_pk: int, what: str, **params: str) -> set[str]:
        response = client.get(reverse("console_pick", args=[panel_pk, what]), params)
        assert response.status_code == 200
        return _option_values(response.content.decode())

    # The picker reads the input's own name (the form field the POST handler expects).
    assert pick(panel_a.pk, "answers", answer="квазар") == {str(material["quasar"].pk)}
    # An answer's external id can name its model (material.identity): a supervisor, who does
    # not see models, neither sees nor finds answers by it; the admin does (below).
    assert pick(panel_a.pk, "answers", references="ext-mito-77") == set()
    # Panel-scoped: the poem is not panel A's, whatever is typed.
    assert pick(panel_a.pk, "answers", q="осени") == set()
    assert pick(panel_a.pk, "answers", q=str(material["poem"].pk)) == set()
    triples = pick(panel_a.pk, "triples", triple="квазар")
    expected = Triple.objects.filter(answer=material["quasar"], panel=panel_a)
    assert triples == {str(pk) for pk in expected.values_list("pk", flat=True)}
    poem_triple = Triple.objects.filter(answer=material["poem"], panel=panel_b).first()
    assert poem_triple is not None
    assert pick(panel_a.pk, "triples", triple=str(poem_triple.pk)) == set()
    assert str(material["plain"].instruction.task_id) in pick(panel_a.pk, "tasks", task="Academic")
    assert pick(panel_a.pk, "answers", q="") == set()
    # Another panel's picker does not exist for him; an unknown kind neither.
    assert client.get(reverse("console_pick", args=[panel_b.pk, "answers"])).status_code == 404
    assert client.get(reverse("console_pick", args=[panel_a.pk, "experts"])).status_code == 404
    admin = _login("admin").get(
        reverse("console_pick", args=[panel_a.pk, "answers"]), {"references": "ext-mito-77"}
    )
    assert _option_values(admin.content.decode()) == {str(material["named"].pk)}


def test_the_console_forms_carry_pickers_with_the_expected_field_names(
    personas: Personas, material: dict[str, Answer]
) -> None:
    client = _login("sup_a")
    panel = personas.panel_a
    panel_html = client.get(reverse("console_panel", args=[panel.pk])).content.decode()
    assert 'name="triple" list="pick-reopen-triple"' in panel_html
    assert 'name="task" list="pick-lock-task"' in panel_html
    assert reverse("console_pick", args=[panel.pk, "triples"]) in panel_html
    control_html = client.get(reverse("console_control", args=[panel.pk])).content.decode()
    assert 'name="answer" list="pick-control-answer"' in control_html
    assert 'name="references" list="pick-references"' in control_html
    # The reopen form still takes the id the picker fills in.
    triple = Triple.objects.filter(answer=material["plain"], panel=panel).first()
    assert triple is not None
    response = client.post(
        reverse("console_reopen", args=[panel.pk]), {"triple": triple.pk, "note": "перепроверить"}
    )
    assert response.status_code == 302
    triple.refresh_from_db()
    assert triple.reopened_note == "перепроверить"


def test_instructions_are_browsed_with_the_same_scope_and_filters(
    personas: Personas, material: dict[str, Answer]
) -> None:
    url = reverse(BROWSER)
    instruction = {name: a.instruction_id for name, a in material.items()}
    sup = _login("sup_a")
    mine = _instruction_ids(sup.get(url, {"kind": "instructions"}).content.decode())
    assert {instruction["plain"], instruction["quasar"], instruction["named"]} <= mine
    assert instruction["poem"] not in mine
    hard = sup.get(url, {"kind": "instructions", "complexity": "hard"}).content.decode()
    assert _instruction_ids(hard) == {instruction["quasar"]}
    # Found by its own text, or by an answer's.
    admin = _login("admin")
    by_answer = admin.get(url, {"kind": "instructions", "q": "осени"}).content.decode()
    assert _instruction_ids(by_answer) == {instruction["poem"]}
    by_own_text = admin.get(url, {"kind": "instructions", "q": "аннотацию"}).content.decode()
    assert instruction["poem"] in _instruction_ids(by_own_text)


def test_a_supervisor_who_scores_an_answer_does_not_see_its_verdicts(
    personas: Personas, material: dict[str, Answer]
) -> None:
    """Blindness holds in the browser: his open answer's triples (and their verdicts) are left
    out, and a verdict filter does not find the answer either."""
    from panels.models import Expert, Membership

    panel = personas.panel_a
    quasar = material["quasar"]
    expert = Expert.objects.create(user=personas.supervisor_a, profession="physicist")
    Membership.objects.create(expert=expert, panel=panel, qualified=True)
    # His own open assignment on the quasar answer (a real one: moved over from another expert).
    open_work = Assignment.objects.filter(answer=quasar, panel=panel).first()
    assert open_work is not None
    Estimate.objects.filter(assignment=open_work).update(expert=expert)
    Assignment.objects.filter(pk=open_work.pk).update(expert=expert, status="in_progress")
    triple = Triple.objects.filter(answer=quasar, panel=panel).first()
    assert triple is not None
    TripleAggregate.objects.create(triple=triple, n_estimates=3, mean=1.0, confidence=0.7)
    client = _login("sup_a")
    url = reverse(BROWSER)
    triples = _triple_ids(client.get(url, {"kind": "triples"}).content.decode())
    assert triples and not set(
        Triple.objects.filter(pk__in=triples, answer=quasar).values_list("pk", flat=True)
    )
    verdicts = client.get(url, {"status": "in_dataset"}).content.decode()
    assert quasar.pk not in _answer_ids(verdicts)
    # The admin, who scores nothing, sees the verdict.
    admin = _login("admin").get(url, {"kind": "triples", "status": "in_dataset"})
    assert triple.pk in _triple_ids(admin.content.decode())


def _review_links(html: str) -> set[str]:
    return set(re.findall(r'class="review-link" data-panel="\d+" href="([^"#]+)', html))


def test_rows_link_to_the_answer_review_page_of_the_viewers_panels(
    personas: Personas,
    material: dict[str, Answer],
    django_assert_max_num_queries: Callable[..., Any],
) -> None:
    client = _login("sup_a")
    url = reverse(BROWSER)
    plain, poem = material["plain"], material["poem"]
    plain_review = reverse("console_answer_review", args=[personas.panel_a.pk, plain.pk])

    answers_html = client.get(url).content.decode()
    links = _review_links(answers_html)
    assert plain_review in links
    # Only his panel's review pages: panel B scores the poem, it is not his.
    assert all(f"/panels/{personas.panel_a.pk}/" in link for link in links)
    assert reverse("console_answer_review", args=[personas.panel_b.pk, poem.pk]) not in links
    assert client.get(plain_review).status_code == 200

    triple = Triple.objects.filter(answer=plain, panel=personas.panel_a).first()
    assert triple is not None
    triples_html = client.get(url, {"kind": "triples", "q": str(triple.pk)}).content.decode()
    assert plain_review in _review_links(triples_html)
    assert f'href="{plain_review}#triple-{triple.pk}"' in triples_html

    # The admin's answer rows link the poem's review through panel B, where it is scored.
    admin = _login("admin")
    poem_review = reverse("console_answer_review", args=[personas.panel_b.pk, poem.pk])
    assert poem_review in _review_links(admin.get(url).content.decode())
    assert admin.get(poem_review).status_code == 200

    # The links cost one query per page, not one per row: a page of 3 answers and a page of 1
    # take the same number of queries.
    with django_assert_max_num_queries(100) as full:
        client.get(url)
    with django_assert_max_num_queries(100) as single:
        client.get(url, {"q": str(plain.pk)})
    assert len(full.captured_queries) == len(single.captured_queries)
