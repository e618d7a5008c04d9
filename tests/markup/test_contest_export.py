"""The contest JSON export (markup.files.contest_files) against the regulations' field table:
every required meta field written (uuid, test, year kept on the text), so that our own export
passes the strict reading (protocol.markup_json_strict)."""

from __future__ import annotations

import json
import uuid
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from demo.demo_markup import DEMO_MARKUP_TEST
from markup.files import contest_files, markups_import
from markup.models import Markup, MarkupSource, MarkupText
from protocol.markup_format import MarkupDocument, default_meta
from protocol.markup_json import to_json
from protocol.markup_json_strict import contest_json_issues, read_json_strict
from tests.markup.test_markup import FIRST, SECOND, TEXT

pytestmark = pytest.mark.django_db


def upload(meta: dict[str, Any], fragments: Any = FIRST, name: str = "a.json") -> Any:
    document = MarkupDocument(TEXT, list(fragments), {**default_meta(), **meta})
    return markups_import([(name, json.dumps(to_json(document), ensure_ascii=False).encode())])


def exported() -> dict[str, dict[str, Any]]:
    return {name: json.loads(data) for name, data in contest_files().items()}


def test_the_demo_export_passes_the_strict_reading(settings: Any) -> None:
    settings.POLLUX_DEMO = True
    call_command("seed_demo", "--no-judge", stdout=StringIO())
    files = exported()
    by_id = {str(m.pk): m for m in Markup.objects.select_related("text")}
    demo = {n: d for n, d in files.items() if n.startswith("json/demo-markup-")}
    assert len(demo) == 12
    for name, data in files.items():
        markup = by_id[name.rsplit("/", 1)[1].removesuffix(".json")]
        expert = markup.source == MarkupSource.EXPERT
        assert contest_json_issues(data, expert_markup=expert) == [], name
        meta = data["meta"]
        assert meta["uuid"] == markup.text.uuid and uuid.UUID(meta["uuid"])
        assert meta["test"] == DEMO_MARKUP_TEST
        assert meta["year"] == markup.text.created_at.year
    # One uuid per text, shared by its markups.
    per_text = {(n.split("/")[1], d["meta"]["uuid"]) for n, d in demo.items()}
    assert len(per_text) == len({uid for _n, uid in per_text}) == 3


def test_a_text_imported_without_them_gets_a_uuid_the_test_and_its_year(settings: Any) -> None:
    settings.POLLUX = {**settings.POLLUX, "MARKUP_TEST": "Pollux: сочинения"}
    report = upload({"id": "essay-7", "subject": "rus", "theme": "Зима", "expert": "E1"})
    assert not report.errors
    text = MarkupText.objects.get(external_id="essay-7")
    assert uuid.UUID(text.uuid) and text.test == "Pollux: сочинения"
    assert text.year == timezone.now().year
    ((_name, data),) = exported().items()
    document = read_json_strict(data, expert_markup=True)
    assert document.meta["uuid"] == text.uuid and document.meta["id"] == "essay-7"
    assert (document.meta["test"], document.meta["year"]) == (text.test, text.year)
    # Our export imported again is the same text (found by its uuid), with a second markup.
    data["meta"]["expert"] = "E2"
    again = markups_import([("again.json", json.dumps(data, ensure_ascii=False).encode())])
    assert not again.errors and MarkupText.objects.count() == 1
    assert text.markups.count() == 2


def test_a_text_imported_with_them_keeps_them() -> None:
    meta = {"uuid": "u-1", "subject": "rus", "theme": "Зима", "test": "ЕГЭ 2020", "year": 2020}
    assert not upload({**meta, "expert": "E1"}).errors
    text = MarkupText.objects.get(uuid="u-1")
    assert (text.external_id, text.test, text.year) == ("u-1", "ЕГЭ 2020", 2020)
    # A later markup of the same text does not change them.
    later = {**meta, "test": "другой", "year": 2021, "expert": "E2"}
    assert not upload(later, SECOND, "b.json").errors
    text.refresh_from_db()
    assert (text.test, text.year) == ("ЕГЭ 2020", 2020)
    for data in exported().values():
        assert contest_json_issues(data, expert_markup=True) == []
        assert (data["meta"]["uuid"], data["meta"]["test"], data["meta"]["year"]) == (
            "u-1",
            "ЕГЭ 2020",
            2020,
        )


@pytest.mark.parametrize(
    ("meta", "field"),
    [
        ({"year": 0}, "meta.year"),
        ({"year": 100_000}, "meta.year"),
        ({"test": "т" * 201}, "meta.test"),
        ({"uuid": "u" * 201}, "meta.uuid"),
    ],
)
def test_a_meta_value_the_text_cannot_keep_is_refused_by_name(
    meta: dict[str, Any], field: str
) -> None:
    report = upload({"id": "essay-8", "subject": "rus", "expert": "E1", **meta})
    assert [(e.file, e.field) for e in report.errors] == [("a.json", field)]
    assert not MarkupText.objects.exists() and not Markup.objects.exists()


def test_an_inline_import_exports_the_subject_as_the_json_names_it() -> None:
    inline = "Предмет: русский\nТема: Зима\nЭксперт: E2\n\n(*Г.деепр\\ Читая книгу*), снег падал."
    report = markups_import([("a.txt", inline.encode())])
    assert not report.errors
    ((_name, data),) = exported().items()
    assert data["meta"]["subject"] == "rus"
    assert contest_json_issues(data, expert_markup=True) == []
