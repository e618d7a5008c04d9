"""Uploaded files over HTTP (size, zip bombs, encodings) and formula injection in exports."""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Callable
from typing import Any

import openpyxl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from jobs.models import Job, JobKind, JobStatus
from material.models import Answer, Instruction
from quality.exams import exam_create
from tests.conftest import Personas, make_expert, rubric_of
from work.assignments import assignments_build
from work.models import Assignment
from work.services import ScoreInput, assignment_submit

pytestmark = pytest.mark.django_db

FORMULAS = [
    '=HYPERLINK("http://127.0.0.1/x","нажмите здесь, чтобы открыть")',  # mostly Cyrillic
    "+7 раз повторяется одно и то же",
    "-1 балл за неточность формулировки",
    "@все хорошо написано автором",
]


def _admin(personas: Personas) -> Client:
    client = Client()
    client.force_login(personas.admin)
    return client


def _bomb(unpacked_mb: int) -> bytes:
    """A valid-looking xlsx whose sheet unpacks ~1000 times larger than the file."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr(
            "xl/worksheets/sheet1.xml",
            b'<worksheet><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>answer</t></is></c>'
            + b" " * (unpacked_mb * 1024 * 1024)
            + b"</row></sheetData></worksheet>",
        )
    return buffer.getvalue()


def test_the_import_page_refuses_a_file_over_the_limit(personas: Personas, settings: Any) -> None:
    settings.IMPORT_MAX_BYTES = 1024
    upload = SimpleUploadedFile("big.csv", b"a," * 2048, content_type="text/csv")
    response = _admin(personas).post(reverse("import_material"), {"file": upload})
    assert response.status_code == 200
    assert response.context["form"].errors["file"]
    assert not Job.objects.filter(kind=JobKind.IMPORT).exists()


@pytest.mark.parametrize(
    ("name", "content", "code"),
    [
        ("bomb.xlsx", None, "too_large"),
        ("cp1251.csv", "текст,ответ\nпривет,мир\n".encode("cp1251"), "encoding"),
        ("broken.xlsx", b"PK\x03\x04 this is not a workbook", "bad_xlsx"),
    ],
    ids=["zip-bomb", "cp1251", "corrupt-xlsx"],
)
def test_a_hostile_import_fails_its_job_cleanly_and_imports_nothing(
    personas: Personas,
    settings: Any,
    django_capture_on_commit_callbacks: Callable[..., Any],
    name: str,
    content: bytes | None,
    code: str,
) -> None:
    settings.IMPORT_MAX_BYTES = 1024 * 1024
    data = _bomb(60) if content is None else content
    before = Instruction.objects.count(), Answer.objects.count()
    started = time.monotonic()
    with django_capture_on_commit_callbacks(execute=True):
        response = _admin(personas).post(
            reverse("import_material"), {"file": SimpleUploadedFile(name, data)}
        )
    assert response.status_code == 302
    job = Job.objects.get(kind=JobKind.IMPORT)
    assert job.status == JobStatus.FAILED
    assert code in str(job.result) or code in job.message, (job.result, job.message)
    assert (Instruction.objects.count(), Answer.objects.count()) == before
    # Refused from the archive's directory, not by inflating it.
    assert time.monotonic() - started < 20


def test_the_exam_import_reports_a_bad_encoding_instead_of_failing(personas: Personas) -> None:
    exam = exam_create(panel=personas.panel_a, title="T", user=personas.supervisor_a)
    client = Client()
    client.force_login(personas.supervisor_a)
    upload = SimpleUploadedFile("refs.csv", "answer;criterion;score\n1;к;2\n".encode("cp1251"))
    response = client.post(reverse("console_exam_import", args=[exam.pk]), {"file": upload})
    assert response.status_code == 422
    assert "cannot be read" in response.content.decode() or "прочитать" in response.content.decode()


def test_the_exam_import_refuses_a_zip_bomb_unopened(personas: Personas) -> None:
    exam = exam_create(panel=personas.panel_a, title="T", user=personas.supervisor_a)
    client = Client()
    client.force_login(personas.supervisor_a)
    upload = SimpleUploadedFile("refs.xlsx", _bomb(60))
    response = client.post(reverse("console_exam_import", args=[exam.pk]), {"file": upload})
    assert response.status_code == 422
    text = response.content.decode()
    assert "large" in text or "больш" in text


def test_an_exported_workbook_holds_formulas_as_text(
    personas: Personas,
    make_answer: Callable[..., Answer],
    django_capture_on_commit_callbacks: Callable[..., Any],
    settings: Any,
    tmp_path: Any,
) -> None:
    """Rationales that look like formulas come out of the Excel export as inert text."""
    settings.PRIVATE_STORAGE_ROOT = tmp_path
    answer = make_answer()
    make_expert("peer_a", personas.panel_a)
    assignments_build(answer_ids=[answer.pk])
    submitted = 0
    for n, assignment in enumerate(Assignment.objects.filter(answer=answer)):
        items = [
            ScoreInput(
                triple_id=e.triple_id,
                score=0 if e.triple.group == "critical" else max(rubric_of(e.triple).values),
                rationale=FORMULAS[(n + i) % len(FORMULAS)],
            )
            for i, e in enumerate(assignment.estimates.select_related("triple__rubric"))
        ]
        result = assignment_submit(assignment=assignment, items=items)
        assert result.ok, result.errors
        submitted += 1
    assert submitted >= 2
    client = _admin(personas)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("dataset"),
            {
                "kind": "export",
                "format": "xlsx",
                "min_estimates": 1,
                "drop_invalid_rationale": "",
                "drop_after_critical": "",
            },
        )
    assert response.status_code == 302
    job = Job.objects.get(kind=JobKind.EXPORT)
    assert job.status == JobStatus.DONE, job.message
    download = client.get(reverse("dataset-download", args=[job.pk]))
    assert download.status_code == 200
    book = openpyxl.load_workbook(io.BytesIO(b"".join(download.streaming_content)))  # type: ignore[attr-defined]
    texts = set()
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                assert cell.data_type != "f", f"{sheet.title}!{cell.coordinate} is a formula"
                if isinstance(cell.value, str):
                    texts.add(cell.value)
    assert set(FORMULAS) <= texts
