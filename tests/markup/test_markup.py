"""The markup app: storing a validated markup, the import command, the comparison pages and
who may see them."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from markup.models import Markup, MarkupSource, MarkupStatus, MarkupText
from markup.selectors import text_rows
from markup.services import MarkupInvalid, markup_document, markup_store
from protocol.markup_format import MarkupDocument, default_meta
from protocol.markup_json import to_json
from protocol.spans import Fragment, pair_accuracy
from tests.conftest import Personas

pytestmark = pytest.mark.django_db

TEXT = "Читая книгу, снег падал. Мы одеваем шапки и идём гулять во двор."


def span(quote: str, code: str, **extra: Any) -> Fragment:
    start = TEXT.find(quote)
    assert start >= 0
    return Fragment(start=start, end=start + len(quote), code=code, **extra)


def document(fragments: list[Fragment], expert: str = "E1", uid: str = "t-1") -> MarkupDocument:
    meta = default_meta()
    meta.update(uuid=uid, subject="rus", expert=expert)
    return MarkupDocument(TEXT, fragments, meta)


FIRST = [
    span("Читая книгу, снег падал", "Г.деепр"),
    span("одеваем", "Р.оним", subtype="пар", correction="надеваем"),
]
SECOND = [
    span("Читая книгу", "Г.деепр"),
    span("одеваем", "Р.знач", correction="надеваем"),
    span("идём гулять во двор", "Р.лишн"),
]


def test_a_valid_document_is_stored_and_reads_back_unchanged() -> None:
    markup = markup_store(document(FIRST), source=MarkupSource.EXPERT)

    text = MarkupText.objects.get(external_id="t-1")
    assert text.text == TEXT and text.subject == "rus"
    assert (text.classifier_name, text.classifier_version) == ("prochtenie", "2020")
    assert markup.author == "E1" and markup.status == "submitted"
    assert markup.selections == to_json(document(FIRST))["selections"]
    assert markup_document(markup).fragments == FIRST
    # A second markup of the same text joins it.
    markup_store(document(SECOND, expert="E2"))
    assert text.markups.count() == 2


@pytest.mark.parametrize(
    ("fragments", "meta", "field"),
    [
        ([Fragment(0, 5, "Г.нет")], {}, "selections[0]"),
        ([FIRST[0], Fragment(10, 500, "Г.деепр")], {}, "selections[1]"),
        ([span("одеваем", "ИСП")], {}, "selections[0]"),  # ИСП needs a correction
        (FIRST, {"subject": "physics"}, "meta.subject"),
    ],
)
def test_an_invalid_document_is_refused_naming_the_field_and_nothing_is_written(
    fragments: list[Fragment], meta: dict[str, str], field: str
) -> None:
    doc = document(fragments)
    doc.meta.update(meta)
    with pytest.raises(MarkupInvalid) as refused:
        markup_store(doc)
    assert refused.value.field == field
    assert str(refused.value).startswith(field)
    assert not MarkupText.objects.exists() and not Markup.objects.exists()


def test_another_text_under_a_stored_id_is_refused_and_a_marked_text_is_immutable() -> None:
    markup_store(document(FIRST))
    changed = document([])
    changed.text = TEXT + " Ещё."
    with pytest.raises(MarkupInvalid) as refused:
        markup_store(changed)
    assert refused.value.field == "text"
    assert Markup.objects.count() == 1
    text = MarkupText.objects.get()
    text.text = "другой"
    with pytest.raises(ValueError, match="cannot change"):
        text.save()


def test_the_import_command_reads_contest_json_and_inline_markup(tmp_path: Path) -> None:
    json_file = tmp_path / "first.json"
    json_file.write_text(json.dumps(to_json(document(FIRST)), ensure_ascii=False), "utf-8")
    inline = tmp_path / "second.txt"
    inline.write_text(
        "Предмет: русский\nUUID: t-1\nЭксперт: E2\n\n"
        "(*Г.деепр\\ Читая книгу*), снег падал. Мы (*Р.знач\\ одеваем >>надеваем*) шапки и "
        "идём гулять во двор.",
        "utf-8",
    )
    out = StringIO()
    call_command("markup_import", str(json_file), str(inline), stdout=out)

    text = MarkupText.objects.get(external_id="t-1")
    markups = list(text.markups.order_by("pk"))
    assert [m.author for m in markups] == ["E2", "E1"][::-1]
    assert markup_document(markups[0]).fragments == FIRST
    assert markup_document(markups[1]).fragments == SECOND[:2]
    assert out.getvalue().count("markup ") == 2

    algorithm = tmp_path / "algorithm.json"
    algorithm.write_text(json.dumps(to_json(document(SECOND)), ensure_ascii=False), "utf-8")
    call_command(
        "markup_import",
        str(algorithm),
        "--source",
        "algorithm",
        "--author",
        "baseline",
        stdout=StringIO(),
    )
    assert text.markups.get(author="baseline").source == MarkupSource.ALGORITHM


def test_the_import_command_reports_an_invalid_file_and_stores_nothing_of_it(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.json"
    data = to_json(document(FIRST))
    data["selections"][1]["type"] = "Г.нет"
    bad.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
    err = StringIO()
    with pytest.raises(CommandError, match="1 of 1"):
        call_command("markup_import", str(bad), stdout=StringIO(), stderr=err)
    assert "selections[1]" in err.getvalue()
    assert not MarkupText.objects.exists()


def _login(client: Client, user: Any) -> Client:
    client.force_login(user)
    return client


def test_the_comparison_shows_both_markups_matched_and_unmatched_with_the_metrics(
    client: Client, personas: Personas
) -> None:
    x = markup_store(document(FIRST))
    y = markup_store(document(SECOND, expert="E2"), source=MarkupSource.ALGORITHM)
    _login(client, personas.admin)
    url = reverse("markup_compare", args=[x.text.pk])

    page = client.get(url).content.decode()  # the first two markups by default

    assert "E1" in page and "E2" in page
    # Both matched pairs numbered alike on both sides, linked to each other.
    for n in (1, 2):
        assert f'id="x-p{n}"' in page and f'id="y-p{n}"' in page
        assert f'href="#y-p{n}"' in page and f'href="#x-p{n}"' in page
    # Y's third fragment has no partner.
    assert page.count("span-unmatched") >= 1
    assert 'id="y-f2"' in page
    assert "span-error" in page
    xy = pair_accuracy(FIRST, SECOND, TEXT)
    yx = pair_accuracy(SECOND, FIRST, TEXT)
    for name in ("M2", "M3", "M4", "M5", "M6"):
        row = re.search(
            rf'data-metric="{name}"><th>{name}</th><td>([\d.,]+)</td><td>([\d.,]+)', page
        )
        assert row, name
        assert float(row[1].replace(",", ".")) == pytest.approx(xy.metrics[name], abs=0.01)
        assert float(row[2].replace(",", ".")) == pytest.approx(yx.metrics[name], abs=0.01)
    total = re.search(r'data-metric="M"><th>M\(X, Y\)</th><td>([\d.,]+)</td><td>([\d.,]+)', page)
    assert total
    assert float(total[1].replace(",", ".")) == pytest.approx(xy.value, abs=0.01)
    assert float(total[2].replace(",", ".")) == pytest.approx(yx.value, abs=0.01)

    # Chosen the other way round, and an id of another text is not found.
    swapped = client.get(url, {"x": y.pk, "y": x.pk}).content.decode()
    assert swapped.index(f"X: #{y.pk}") < swapped.index(f"Y: #{x.pk}")
    assert client.get(url, {"x": 999999}).status_code == 404


def test_the_text_is_escaped_in_the_rendering(client: Client, personas: Personas) -> None:
    doc = document([])
    doc.text = "<script>alert(1)</script> а также текст"
    quote = doc.text.find("текст")
    doc.fragments = [Fragment(quote, quote + 5, "Р.повтор")]
    markup_store(doc)
    markup_store(_same(doc, "E2"))
    _login(client, personas.admin)
    page = client.get(reverse("markup_compare", args=[MarkupText.objects.get().pk])).content
    assert b"<script>alert(1)" not in page
    assert b"&lt;script&gt;alert(1)" in page


def _same(doc: MarkupDocument, expert: str) -> MarkupDocument:
    meta = dict(doc.meta, expert=expert)
    return MarkupDocument(doc.text, list(doc.fragments), meta)


def test_the_list_shows_the_algorithm_accuracy_per_expert(
    client: Client, personas: Personas
) -> None:
    markup_store(document(FIRST))
    markup_store(document(FIRST[:1], expert="E2"))
    markup_store(document(SECOND, expert="baseline"), source=MarkupSource.ALGORITHM)
    _login(client, personas.admin)
    page = client.get(reverse("markup_texts")).content.decode()
    assert "t-1" in page and "baseline" in page
    assert page.count("?x=") == 2  # a comparison link per expert markup


@pytest.mark.parametrize("route", ["markup_texts", "markup_compare"])
def test_access_supervisors_and_admins_only(client: Client, personas: Personas, route: str) -> None:
    markup_store(document(FIRST))
    markup_store(document(SECOND, expert="E2"))
    args = [MarkupText.objects.get().pk] if route == "markup_compare" else []
    url = reverse(route, args=args)

    anonymous = client.get(url)
    assert anonymous.status_code == 302 and reverse("login") in anonymous["Location"]
    assert _login(Client(), personas.expert_a.user).get(url).status_code == 403
    assert _login(Client(), personas.admin).get(url).status_code == 200
    # A supervisor: the list, and a text once a panel of his is asked to mark it (markup.rules;
    # tests/security/test_access_matrix.py walks the panels' scoping).
    supervisor = _login(Client(), personas.supervisor_a)
    assert supervisor.get(url).status_code == (404 if route == "markup_compare" else 200)
    Markup.objects.filter(author="E2").update(panel=personas.panel_a)
    assert supervisor.get(url).status_code == 200


def test_the_navigation_links_the_markups_for_those_who_may_see_them(
    personas: Personas,
) -> None:
    link = reverse("markup_texts").encode()
    supervisor = _login(Client(), personas.supervisor_a).get(reverse("home"), follow=True)
    expert = _login(Client(), personas.expert_a.user).get(reverse("home"), follow=True)
    assert link in supervisor.content
    assert link not in expert.content


def test_draft_markups_take_no_part_in_the_accuracy() -> None:
    markup_store(document(FIRST))
    markup_store(document(SECOND, expert="E2"), status=MarkupStatus.DRAFT)
    markup_store(document(SECOND, expert="late"), source=MarkupSource.ALGORITHM, status="draft")
    markup_store(document(SECOND, expert="baseline"), source=MarkupSource.ALGORITHM)
    (row,) = text_rows()
    ((algorithm, against, _opt, _mean),) = row.accuracy
    assert algorithm.author == "baseline"
    assert [m.author for m, _value in against] == ["E1"]
