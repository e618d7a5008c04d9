"""One typed reading of uploads: the same content gets the same answer in CSV, JSONL, XLSX and
Parquet (issue #28, items 7, 8 and 10).

A number, a boolean, a list, an object or Infinity where text is expected is refused naming row
and column, never stored as "7" or "inf"; a workbook's formula cell is refused naming its sheet
and cell, never stored as its cached value; an id is text or an integer in every format (1.0 is
refused); the same answers with a trailing space, Windows line ends or another Unicode form are
the same submission. Each refusal stores nothing.
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from pathlib import Path
from typing import Any

import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from authoring import corpora
from authoring.models import ReferenceCorpus
from authoring.services import AuthoringError
from material.importing import material_import
from material.models import Answer, AnswerPair, Instruction, LanguageModel
from material.pairs import pairs_import
from submissions.models import Submission
from tests.conftest import Personas
from tests.submissions import test_submissions
from tests.submissions.test_submissions import Bench, _upload

pytestmark = pytest.mark.django_db

# The submissions' board with its designated judge (a fake OpenAI-compatible server).
bench = test_submissions.bench

INF = float("inf")


def file_of(fmt: str, rows: list[dict[str, Any]]) -> bytes:
    """The rows as a file of the format, each value as its own type where the format has types
    (a workbook's "=..." string is a formula cell); CSV writes every value as text."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, columns)
        writer.writeheader()
        writer.writerows(rows)
        return out.getvalue().encode()
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    buffer = io.BytesIO()
    if fmt == "xlsx":
        workbook = openpyxl.Workbook()
        sheet = workbook.active
        assert sheet is not None
        sheet.title = "Ответы"
        sheet.append(columns)
        for row in rows:
            sheet.append([row.get(c) for c in columns])
        workbook.save(buffer)
    else:
        pq.write_table(pa.Table.from_pylist(rows), buffer)
    return buffer.getvalue()


def stored() -> tuple[int, int, int, int, int]:
    return (
        Submission.objects.count(),
        Instruction.objects.count(),
        LanguageModel.objects.count(),
        Answer.objects.count(),
        AnswerPair.objects.count(),
    )


def refused(b: Bench, content: bytes, fmt: str) -> list[tuple[int | None, str | None, str]]:
    """The errors of a refused submission (422), after checking nothing was stored."""
    before = stored()
    response = _upload(b, content, name=f"answers.{fmt}")
    assert response.status_code == 422, response.content.decode()[:500]
    assert stored() == before
    return [(e.row, e.column, e.code) for e in response.context["errors"]]


def answers_with(b: Bench, second: Any, id_of: Any = None) -> list[dict[str, Any]]:
    """A submission's rows, the second answer (and optionally its id) replaced."""
    rows: list[dict[str, Any]] = [
        {"instruction_id": i.pk, "answer": f"Ответ {i.pk}"} for i in b.instructions
    ]
    rows[1]["answer"] = second
    if id_of is not None:
        rows[1]["instruction_id"] = id_of(rows[1]["instruction_id"])
    return rows


# --------------------------------------------------------------------- 7: typed answers


# What each format can hold: a workbook has no lists, objects or Infinity.
NOT_TEXT = [
    ("jsonl", ["a", 1]),
    ("jsonl", {"t": 1}),
    ("jsonl", True),
    ("jsonl", 7),
    ("jsonl", INF),
    ("xlsx", True),
    ("xlsx", 7),
    ("xlsx", 2.5),
    ("parquet", ["a", "b"]),
    ("parquet", {"t": 1}),
    ("parquet", True),
    ("parquet", 7),
    ("parquet", INF),
]


@pytest.mark.parametrize(("fmt", "value"), NOT_TEXT, ids=lambda v: repr(v))
def test_a_submitted_answer_that_is_not_text_is_refused_in_every_format(
    bench: Bench, fmt: str, value: Any
) -> None:
    rows = answers_with(bench, value)
    if fmt == "parquet":
        # Parquet types a column: the whole answer column holds the value's type.
        rows = [{**r, "answer": value} for r in rows]
    errors = refused(bench, file_of(fmt, rows), fmt)
    # Rows as the user sees them: a workbook's header is row 1; Parquet names the column.
    row = {"jsonl": 2, "xlsx": 3, "parquet": None}[fmt]
    assert (row, "answer", "bad_type") in errors, errors


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "xlsx", "parquet"])
def test_the_text_7_is_an_answer_in_every_format(
    bench: Bench, fmt: str, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks():
        response = _upload(bench, file_of(fmt, answers_with(bench, "7")), name=f"a.{fmt}")
    assert response.status_code == 302, response.content.decode()[:500]
    submission = Submission.objects.get()
    assert (
        sorted(Answer.objects.filter(model=submission.model).values_list("text", flat=True))[0]
        == "7"
    )


def _material_row(answer: Any) -> dict[str, Any]:
    return {
        "instruction": "Придумайте идею научно-популярной статьи о космосе.",
        "answer": answer,
        "model_name": "GigaChat",
        "task_path": "Creative Generation / Applied brainstorming / Scientific brainstorming",
    }


@pytest.mark.parametrize(
    ("fmt", "value"), [("jsonl", INF), ("jsonl", 7), ("jsonl", False), ("xlsx", 7)]
)
def test_the_material_import_refuses_numbers_and_infinity_as_answers(
    catalogue: None, tmp_path: Path, fmt: str, value: Any
) -> None:
    path = tmp_path / f"material.{fmt}"
    path.write_bytes(file_of(fmt, [_material_row("Идея: тёмная материя."), _material_row(value)]))
    before = stored()
    report = material_import(path=path)
    row = 2 if fmt == "jsonl" else 3
    assert (row, "answer", "bad_type") in [(e.row, e.column, e.code) for e in report.errors]
    assert stored() == before


# --------------------------------------------------------------------- 8: formula cells


def test_a_formula_in_a_submission_is_refused_naming_sheet_and_cell(bench: Bench) -> None:
    content = file_of("xlsx", answers_with(bench, "=1+1"))
    before = stored()
    response = _upload(bench, content, name="answers.xlsx")
    assert response.status_code == 422
    errors = response.context["errors"]
    assert [(e.row, e.column, e.code) for e in errors] == [(3, "answer", "formula")]
    assert "B3" in errors[0].message and "Ответы" in errors[0].message
    assert stored() == before


def test_a_formula_in_material_pairs_and_corpora_is_refused(
    personas: Personas, tmp_path: Path
) -> None:
    material = tmp_path / "material.xlsx"
    material.write_bytes(file_of("xlsx", [_material_row("=SUM(1,2)")]))
    pairs = tmp_path / "pairs.xlsx"
    pair = {
        "query": "Сколько будет дважды два?",
        "model_name_1": "GigaChat",
        "model_name_2": "YandexGPT",
        "model_output_1": "4",
        "model_output_2": "=2*2",
    }
    pairs.write_bytes(file_of("xlsx", [pair]))
    before = stored()
    for report, cell in (
        (material_import(path=material), "B2"),
        (pairs_import(path=pairs), "E2"),
    ):
        assert [(e.row, e.code) for e in report.errors] == [(2, "formula")], report.errors
        assert cell in report.errors[0].message and "Ответы" in report.errors[0].message
    upload = SimpleUploadedFile("c.xlsx", file_of("xlsx", [{"id": "r1", "text": "=A1"}]))
    with pytest.raises(AuthoringError) as bad:
        corpora.corpus_from_upload(name="formulas", upload=upload, user=personas.admin)
    assert bad.value.status == 422 and "B2" in str(bad.value)
    assert not ReferenceCorpus.objects.filter(name="formulas").exists()
    assert stored() == before


# --------------------------------------------------------------------- 10: duplicates, ids


@pytest.mark.parametrize(
    "variant",
    [
        lambda t: t + " ",
        lambda t: "\n" + t,
        lambda t: t.replace("\n", "\r\n"),
        lambda t: unicodedata.normalize("NFD", t),
    ],
    ids=["trailing-space", "leading-newline", "crlf", "nfd"],
)
def test_the_same_answers_but_for_spacing_or_unicode_form_are_a_duplicate(
    bench: Bench, django_capture_on_commit_callbacks: Any, variant: Any
) -> None:
    rows = [
        {"instruction_id": i.pk, "answer": f"Ответ {i.pk}:\nйод и ёж"} for i in bench.instructions
    ]
    with django_capture_on_commit_callbacks():
        first = _upload(bench, file_of("jsonl", rows), name="a.jsonl")
    assert first.status_code == 302
    again = [{**r, "answer": variant(r["answer"])} for r in rows]
    assert again != rows
    response = _upload(bench, file_of("jsonl", again), name="b.jsonl")
    assert response.status_code == 409, response.content.decode()[:500]
    assert response.context["errors"][0].code == "duplicate_submission"
    assert Submission.objects.count() == 1


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "xlsx", "parquet"])
def test_an_id_1_0_is_refused_in_every_format(bench: Bench, fmt: str) -> None:
    # A workbook's number cell 1.0 is the integer 1 (the file stores "1"): text "1.0" there.
    id_of = (lambda pk: f"{pk}.0") if fmt in ("csv", "xlsx") else float
    rows = answers_with(bench, "Ответ", id_of=id_of)
    if fmt == "parquet":
        rows = [{**r, "instruction_id": float(r["instruction_id"])} for r in rows]
    errors = refused(bench, file_of(fmt, rows), fmt)
    assert any(column == "instruction_id" for _row, column, _code in errors), errors
