"""The strict reading of the contest JSON (protocol.markup_json_strict): the regulations' field
table (Appendix 3, section 2), field by field."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from protocol.markup_format import MarkupFormatError
from protocol.markup_json_strict import contest_json_issues, read_json_strict

TEXT = "Все удивлялись его силой.\nПотом ушли."


def complete() -> dict[str, Any]:
    return {
        "meta": {
            "id": "",
            "uuid": "4f0e2a58-3c2b-4d8e-9a4b-0c1d2e3f4a5b",
            "theme": "Сила",
            "class": "11",
            "year": 2020,
            "subject": "rus",
            "taskText": "",
            "category": "",
            "expert": "Эксперт 1",
            "test": "егэ тренировка",
        },
        "criteria": [{"name": "К9", "score": 2}],
        "selections": [
            {
                "id": 1,
                "startSelection": 19,
                "endSelection": 24,
                "comment": "",
                "explanation": "",
                "correction": "силе",
                "tag": "",
                "group": "error",
                "type": "Г.упр",
                "subtype": "упр",
            },
            {
                "id": 2,
                "startSelection": None,
                "endSelection": None,
                "comment": "",
                "explanation": "",
                "correction": "",
                "tag": "",
                "group": "error",
                "type": "Р.бедн",
                "subtype": "",
            },
        ],
        "text": TEXT,
    }


def test_a_complete_file_reads() -> None:
    assert contest_json_issues(complete(), expert_markup=True) == []
    document = read_json_strict(json.dumps(complete(), ensure_ascii=False))
    assert document.meta["uuid"] and document.meta["year"] == 2020
    assert [f.start for f in document.fragments] == [19, None]


def test_the_regulations_example_meta_is_not_strictly_complete() -> None:
    # The example of section 2: no id, no uuid, category null, the subject in Russian.
    data = complete()
    data["meta"] = {
        "subject": "литература",
        "test": "егэ тренировка",
        "category": None,
        "year": 2017,
        "class": "11",
        "theme": "Проблема преодоления страха в обычной, мирной жизни",
        "taskText": "Выдержка из текста Ф.А.Вигдоровой",
    }
    fields = [issue.field for issue in contest_json_issues(data)]
    assert fields == ["meta.uuid", "meta.id", "meta.category", "meta.subject"]


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = data
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value

    return change


_DELETE = object()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (_set("meta.uuid", ""), "meta.uuid"),
        (_set("meta.uuid", _DELETE), "meta.uuid"),
        (_set("meta.test", " "), "meta.test"),
        (_set("meta.theme", ""), "meta.theme"),
        (_set("meta.year", None), "meta.year"),
        (_set("meta.year", "2020"), "meta.year"),
        (_set("meta.year", True), "meta.year"),
        (_set("meta.subject", "русский"), "meta.subject"),
        (_set("meta.class", None), "meta.class"),
        (_set("meta.id", _DELETE), "meta.id"),
        (_set("meta", _DELETE), "meta"),
        (_set("text", " " + TEXT), "text"),
        (_set("text", TEXT.replace("\n", "\r\n")), "text"),
        (_set("text", ""), "text"),
        (_set("selections.0.id", _DELETE), "selections[0].id"),
        (_set("selections.1.id", 1), "selections[1].id"),
        (_set("selections.0.startSelection", None), "selections[0].startSelection"),
        (_set("selections.0.endSelection", len(TEXT) + 1), "selections[0].endSelection"),
        (_set("selections.0.endSelection", 18), "selections[0].endSelection"),
        (_set("selections.0.group", "mistake"), "selections[0].group"),
        (_set("selections.0.type", ""), "selections[0].type"),
        (_set("selections.0.comment", None), "selections[0].comment"),
        (_set("selections.1.tag", _DELETE), "selections[1].tag"),
        (_set("criteria", {"К9": 2}), "criteria"),
        (_set("criteria", [{"name": "девять", "score": 2}]), "criteria[0].name"),
    ],
)
def test_each_breach_of_the_field_table_is_named(
    change: Callable[[dict[str, Any]], None], field: str
) -> None:
    data = copy.deepcopy(complete())
    change(data)
    assert [issue.field for issue in contest_json_issues(data)] == [field]
    with pytest.raises(MarkupFormatError) as error:
        read_json_strict(data)
    assert error.value.field == field


def test_an_expert_markup_names_its_expert_and_an_unmarked_text_has_no_selections() -> None:
    data = complete()
    data["meta"]["expert"] = ""
    assert contest_json_issues(data) == []
    assert [i.field for i in contest_json_issues(data, expert_markup=True)] == ["meta.expert"]
    del data["selections"]
    assert contest_json_issues(data) == []
    assert contest_json_issues("{") and contest_json_issues("[]")[0].field == "(document)"


def test_a_classifier_of_our_own_names_its_subjects() -> None:
    data = complete()
    data["meta"]["subject"] = "llm"
    assert [i.field for i in contest_json_issues(data)] == ["meta.subject"]
    assert contest_json_issues(data, subjects=["llm"]) == []
