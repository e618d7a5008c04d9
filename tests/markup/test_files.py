"""Markup files in and out (markup.files, markup.views_files): the upload is validated whole and
stored all or nothing, refusals name the file and field; the downloads hold the submitted
markups only, read back unchanged, with no formula in the workbook; admins only."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import openpyxl
import pyarrow.parquet as pq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from markup.models import Markup, MarkupStatus, MarkupText
from markup.services import markup_document, markup_store
from protocol.markup_format import MarkupDocument
from protocol.markup_json import read_json, to_json
from protocol.spans import Fragment
from tests.conftest import Personas
from tests.markup.test_markup import FIRST, TEXT, document, span

pytestmark = pytest.mark.django_db

INLINE = (
    "Предмет: русский\nUUID: t-1\nЭксперт: E2\n\n"
    "(*Г.деепр\\ Читая книгу*), снег падал. Мы (*Р.знач\\ одеваем >>надеваем*) шапки и "
    "идём гулять во двор."
)


def json_file(doc: MarkupDocument, name: str = "first.json") -> SimpleUploadedFile:
    body = json.dumps(to_json(doc), ensure_ascii=False).encode()
    return SimpleUploadedFile(name, body, content_type="application/json")


def post(client: Client, files: list[SimpleUploadedFile], **fields: str) -> Any:
    data: dict[str, Any] = {
        "markup_files": files,
        "source": "expert",
        "author": "",
        "classifier": "prochtenie:2020",
        **fields,
    }
    return client.post(reverse("markup_import"), data)


@pytest.fixture
def admin(client: Client, personas: Personas) -> Client:
    client.force_login(personas.admin)
    return client


def test_an_upload_of_json_and_inline_markup_is_stored(admin: Client) -> None:
    inline = SimpleUploadedFile("second.txt", INLINE.encode(), content_type="text/plain")
    response = post(admin, [json_file(document(FIRST)), inline])

    assert response.status_code == 302, response.content.decode()[:2000]
    text = MarkupText.objects.get(external_id="t-1")
    markups = list(text.markups.order_by("pk"))
    assert [m.author for m in markups] == ["E1", "E2"]
    assert markup_document(markups[0]).fragments == FIRST
    assert [f.code for f in markup_document(markups[1]).fragments] == ["Г.деепр", "Р.знач"]


def test_an_algorithms_upload_takes_the_authors_name(admin: Client) -> None:
    response = post(admin, [json_file(document(FIRST))], source="algorithm", author="baseline")
    assert response.status_code == 302
    markup = Markup.objects.get()
    assert (markup.source, markup.author, markup.expert) == ("algorithm", "baseline", None)


def test_one_bad_file_refuses_the_upload_naming_file_and_field_and_stores_nothing(
    admin: Client,
) -> None:
    bad = to_json(document(FIRST, uid="t-2"))
    bad["selections"][1]["type"] = "Г.нет"
    broken = SimpleUploadedFile("broken.json", b'{"meta": {', content_type="application/json")
    latin = SimpleUploadedFile("latin1.txt", "Предмет".encode("cp1251"))
    bad_file = SimpleUploadedFile("bad.json", json.dumps(bad, ensure_ascii=False).encode())
    response = post(admin, [json_file(document(FIRST)), bad_file, broken, latin])

    assert response.status_code == 422
    page = response.content.decode()
    assert "broken.json" in page and "latin1.txt" in page and "not UTF-8" in page
    # Reading errors come first; with them nothing is even validated against the database.
    assert not MarkupText.objects.exists() and not Markup.objects.exists()

    bad_file = SimpleUploadedFile("bad.json", json.dumps(bad, ensure_ascii=False).encode())
    response = post(admin, [json_file(document(FIRST)), bad_file])
    assert response.status_code == 422
    page = response.content.decode()
    assert "bad.json" in page and "selections[1]" in page
    # The good file was stored inside the transaction, then rolled back with the bad one.
    assert not MarkupText.objects.exists() and not Markup.objects.exists()


def test_two_files_of_one_id_with_different_texts_are_refused(admin: Client) -> None:
    other = document(FIRST)
    other = MarkupDocument(TEXT + " Конец.", other.fragments, other.meta)
    response = post(admin, [json_file(document(FIRST)), json_file(other, "other.json")])
    assert response.status_code == 422
    assert "other.json" in response.content.decode()
    assert not Markup.objects.exists()


def test_a_stored_texts_id_with_another_text_is_refused(admin: Client) -> None:
    markup_store(document(FIRST))
    other = MarkupDocument(TEXT + " Конец.", FIRST, document(FIRST).meta)
    response = post(admin, [json_file(other, "other.json")])
    assert response.status_code == 422
    assert Markup.objects.count() == 1


def test_a_missing_file_or_an_unknown_classifier_is_400(admin: Client) -> None:
    assert post(admin, []).status_code == 400
    assert post(admin, [json_file(document(FIRST))], classifier="nope:1").status_code == 400
    assert not Markup.objects.exists()


def _submitted_and_draft() -> tuple[Markup, Markup]:
    tricky = [
        span("Читая книгу, снег падал", "Г.деепр", comment='=HYPERLINK("http://x")'),
        span("одеваем", "Р.оним", subtype="пар", correction="+надеваем"),
        Fragment(start=None, end=None, code="Р.бедн"),
    ]
    done = markup_store(document(tricky))
    draft = markup_store(document(FIRST, expert="E9"), status=MarkupStatus.DRAFT)
    return done, draft


def test_the_tables_hold_submitted_markups_and_their_fragments(admin: Client) -> None:
    done, _draft = _submitted_and_draft()
    response = admin.get(reverse("markup_export", args=["parquet"]))
    assert response.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    tables = {
        name.removesuffix(".parquet"): pq.read_table(io.BytesIO(archive.read(name))).to_pylist()
        for name in archive.namelist()
    }
    assert [t["text_id"] for t in tables["texts"]] == ["t-1"]
    assert tables["texts"][0]["markups"] == 1  # the draft is not counted
    assert [m["markup_id"] for m in tables["markups"]] == [done.pk]
    fragments = tables["fragments"]
    assert [(f["position"], f["type"]) for f in fragments] == [
        (1, "Г.деепр"),
        (2, "Р.оним"),
        (3, "Р.бедн"),
    ]
    assert fragments[0]["fragment"] == "Читая книгу, снег падал"
    assert fragments[1]["correction"] == "+надеваем"
    assert fragments[2]["start"] is None and fragments[2]["fragment"] == ""


def test_the_workbook_keeps_formula_like_text_as_text(admin: Client, tmp_path: Any) -> None:
    _submitted_and_draft()
    response = admin.get(reverse("markup_export", args=["xlsx"]))
    assert response.status_code == 200
    path = tmp_path / "m.xlsx"
    path.write_bytes(response.content)
    book = openpyxl.load_workbook(path)
    assert book.sheetnames == ["README", "texts", "markups", "fragments"]
    rows = list(book["fragments"].iter_rows(values_only=False))
    header = [c.value for c in rows[0]]
    comment = rows[1][header.index("comment")]
    assert comment.value == '=HYPERLINK("http://x")' and comment.data_type == "s"


def test_the_contest_json_reads_back_as_stored(admin: Client) -> None:
    done, _draft = _submitted_and_draft()
    response = admin.get(reverse("markup_export", args=["json"]))
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    assert archive.namelist() == [f"json/t-1/{done.pk}.json"]
    back = read_json(archive.read(archive.namelist()[0]).decode())
    assert back.fragments == markup_document(done).fragments and back.text == TEXT


@pytest.mark.parametrize(
    "route", [("markup_import", []), ("markup_export", ["xlsx"]), ("markup_export", ["json"])]
)
def test_only_admins_move_markup_files(personas: Personas, route: tuple[str, list[str]]) -> None:
    url = reverse(route[0], args=route[1])
    assert Client().get(url).status_code == 302  # to the login page
    for user in (personas.supervisor_a, personas.expert_a.user):
        client = Client()
        client.force_login(user)
        assert client.get(url).status_code == 403
    client = Client()
    client.force_login(personas.admin)
    assert client.get(url).status_code == 200
    assert client.get(reverse("markup_export", args=["csv"])).status_code == 404
