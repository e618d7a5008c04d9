"""Importing instructions, models and answers: every format, good and bad files, atomicity."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Callable, Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from jobs.models import Job, JobKind, JobStatus
from material.import_common import PROGRESS_TOTAL, ImportReport
from material.importing import material_import
from material.models import Answer, Instruction, LanguageModel
from material.readers import read_table
from material.tasks import import_material_job
from panels.defaults import ensure_default_panels
from taxonomy.models import Criterion
from taxonomy.services import load_pollux
from tests.conftest import PASSWORD, Personas

DATA = Path(__file__).parents[1] / "data" / "import"
POLLUX_CSV = DATA / "pollux_sample.csv"
OWN_JSONL = DATA / "own_columns.jsonl"
FORMATS = ["csv", "jsonl", "xlsx", "parquet"]


@pytest.fixture(scope="module", autouse=True)
def _catalogue_once(django_db_setup: Any, django_db_blocker: Any) -> Iterator[None]:
    """Load the catalogue once for the module (seconds), and empty the database afterwards."""
    with django_db_blocker.unblock():
        if not Criterion.objects.exists():
            load_pollux()
            ensure_default_panels()
    yield
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


@pytest.fixture(autouse=True)
def _private_root(tmp_path: Path, settings: Any) -> None:
    settings.PRIVATE_STORAGE_ROOT = tmp_path / "private"


pytestmark = pytest.mark.usefixtures("catalogue")


# --------------------------------------------------------------------------- file helpers


def pollux_rows() -> list[dict[str, Any]]:
    with POLLUX_CSV.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def own_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in OWN_JSONL.read_text("utf-8").splitlines()]


def write(fmt: str, rows: list[dict[str, Any]], directory: Path, name: str = "data") -> Path:
    """The rows as a file of the given format (columns: the union of keys, in order)."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    path = directory / f"{name}.{fmt}"
    if fmt == "csv":
        with path.open("w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, columns)
            writer.writeheader()
            for row in rows:
                writer.writerow({k: _flat(v) for k, v in row.items()})
    elif fmt == "jsonl":
        path.write_text(
            "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), "utf-8"
        )
    elif fmt == "xlsx":
        workbook = openpyxl.Workbook()
        sheet = workbook.active
        assert sheet is not None
        sheet.append(columns)
        for row in rows:
            sheet.append([_flat(row.get(c)) for c in columns])
        workbook.save(path)
    else:
        table = pa.Table.from_pylist(
            [{c: _flat(row.get(c)) for c in columns} for row in rows],
            schema=pa.schema([(c, pa.string()) for c in columns]),
        )
        pq.write_table(table, path)
    return path


def _flat(value: Any) -> Any:
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def shown_row(fmt: str, index: int) -> int:
    """The row number a user sees for the index-th data row (1-based): +1 for a header line."""
    return index + 1 if fmt in ("csv", "xlsx") else index


def counts() -> tuple[int, int, int]:
    return Instruction.objects.count(), LanguageModel.objects.count(), Answer.objects.count()


def errors_of(report: ImportReport) -> list[tuple[int | None, str | None, str]]:
    return [(e.row, e.column, e.code) for e in report.errors]


# --------------------------------------------------------------------------- good files


@pytest.mark.parametrize("fmt", FORMATS)
def test_it_imports_the_pollux_sample_in_every_format(fmt: str, tmp_path: Path) -> None:
    path = write(fmt, pollux_rows(), tmp_path)

    report = material_import(path=path)

    assert report.errors == []
    assert report.rows == 10
    # 10 rows are (answer, criterion) pairs: 3 instructions x 2 models = 6 answers.
    assert report.created == {"instructions": 3, "models": 2, "answers": 6}
    assert counts() == (3, 2, 6)
    sql = Instruction.objects.select_related("task", "style").get(text__startswith="Напиши запрос")
    assert sql.task is not None and sql.task.path == "Technical Problems / Code creation / SQL"
    assert sql.style is not None and sql.style.name_en == "General-purpose"
    assert sql.complexity == "hard"
    assert sql.reference_answer.startswith("SELECT id")
    summary = Instruction.objects.select_related("task", "style").get(text__startswith="Кратко")
    assert summary.task is not None
    assert (
        summary.task.path == "Text Transformation / Summarizing / Brief retelling / Scientific text"
    )
    assert summary.style is not None and summary.style.name_en == "Scientific text"
    assert summary.complexity == "medium"
    editing = Instruction.objects.select_related("task").get(text__startswith="Edit")
    assert editing.task is not None and editing.task.path == "Text Transformation / Editing"
    assert editing.complexity == "easy"
    answer = Answer.objects.select_related("model").filter(instruction=sql).first()
    assert answer is not None
    assert answer.text.startswith("Ответ модели") and "\n" in answer.text
    assert len(answer.text_hash) == 64
    assert set(LanguageModel.objects.values_list("name", flat=True)) == {
        "GigaChat-Max",
        "T-pro-it-1.0",
    }


@pytest.mark.parametrize("fmt", FORMATS)
def test_reimporting_the_same_file_creates_nothing(fmt: str, tmp_path: Path) -> None:
    path = write(fmt, pollux_rows(), tmp_path)
    material_import(path=path)
    before = counts()

    again = material_import(path=path)

    assert again.errors == []
    assert again.created == {"instructions": 0, "models": 0, "answers": 0}
    assert again.existing == {"instructions": 3, "models": 2, "answers": 6}
    assert counts() == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_it_imports_our_own_columns(fmt: str, tmp_path: Path) -> None:
    path = write(fmt, own_rows(), tmp_path)

    report = material_import(path=path)

    assert report.errors == []
    assert report.created == {"instructions": 3, "models": 2, "answers": 6}
    instruction = Instruction.objects.select_related("task", "style").get(external_id="own-i3")
    assert instruction.task is not None
    assert instruction.task.path == (
        "Creative Generation / Applied brainstorming / Scientific brainstorming"
    )
    assert instruction.style is not None and instruction.style.key == "scientific-text"
    assert instruction.ethics_flag is True
    assert (instruction.author, instruction.source, instruction.complexity) == (
        "expert-17",
        "pilot-2025",
        "medium",
    )
    assert not Instruction.objects.get(external_id="own-i1").ethics_flag
    answer = Answer.objects.select_related("model").get(external_id="own-a3-2")
    assert answer.instruction_id == instruction.pk
    assert (answer.model.name, answer.model.version, answer.model.provider) == (
        "YandexGPT",
        "4 Pro",
        "Yandex",
    )
    assert answer.generation_meta == {"temperature": 0.7, "max_tokens": 2048}


def test_it_finds_an_answer_again_by_its_natural_key_across_files(tmp_path: Path) -> None:
    rows = pollux_rows()
    material_import(path=write("csv", rows[:4], tmp_path, "first"))
    before = counts()

    report = material_import(path=write("parquet", rows, tmp_path, "all"))

    assert report.errors == []
    assert report.existing["answers"] == 2
    assert report.created["answers"] == 4
    assert counts() == (before[0] + 2, before[1], before[2] + 4)
    # POLLUX rows carry no answer id: the COPY writes NULL, not "None".
    assert not Answer.objects.filter(external_id="None").exists()
    assert Answer.objects.filter(external_id__isnull=True).count() == 6
    metas = list(Answer.objects.values_list("generation_meta", flat=True))
    assert metas and all(isinstance(meta, dict) for meta in metas)  # a JSON object, not a string


def test_it_accepts_a_utf8_bom_and_english_or_russian_names(tmp_path: Path) -> None:
    rows = [
        {**pollux_rows()[0], "task_type": "Code creation", "domain": "general-purpose"},
        {**pollux_rows()[0], "task_type": "написать КОД", "difficulty": "Сложная"},
    ]
    path = write("csv", rows, tmp_path)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())

    report = material_import(path=path)

    assert report.errors == []
    assert report.created["instructions"] == 1
    assert Instruction.objects.get().complexity == "hard"


def test_a_finer_pollux_subsubtype_maps_to_its_catalogue_leaf(tmp_path: Path) -> None:
    row = {
        **pollux_rows()[0],
        "task_type": "Написать художественный текст",
        "task_subtype": "Поэзия",
        "task_subsubtype": "Романтизм",
        "domain": "Художественный текст",
    }
    report = material_import(path=write("csv", [row], tmp_path))

    assert report.errors == []
    task = Instruction.objects.get().task
    assert task is not None and task.path == "Original Text Generation / Literary text / Poetry"


def test_progress_is_reported_up_to_the_total(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []

    material_import(
        path=write("csv", pollux_rows(), tmp_path), progress=lambda d, t: seen.append((d, t))
    )

    assert seen[0] == (0, PROGRESS_TOTAL)
    assert seen[-1] == (PROGRESS_TOTAL, PROGRESS_TOTAL)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_the_import_does_not_query_per_row(
    tmp_path: Path, django_assert_max_num_queries: Callable[..., Any]
) -> None:
    template = pollux_rows()[0]
    rows = [
        {
            **template,
            "instruction": f"Задание {i // 5}",
            "answer": f"Ответ {i}",
            "model_id": f"m{i % 5}",
        }
        for i in range(400)
    ]
    path = write("parquet", rows, tmp_path)

    with django_assert_max_num_queries(30):
        report = material_import(path=path)

    assert report.created == {"instructions": 80, "models": 5, "answers": 400}


# --------------------------------------------------------------------------- bad files


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_bad_row_writes_nothing_and_names_the_row_and_column(fmt: str, tmp_path: Path) -> None:
    rows = pollux_rows()
    rows.append({**rows[0], "task_type": "Несуществующая задача"})
    path = write(fmt, rows, tmp_path)

    report = material_import(path=path)

    assert errors_of(report) == [(shown_row(fmt, 11), "task_type", "unknown_task")]
    assert "Несуществующая задача" in report.errors[0].message
    assert report.created == {"instructions": 0, "models": 0, "answers": 0}
    assert counts() == (0, 0, 0)


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_unknown_criterion_is_an_error(fmt: str, tmp_path: Path) -> None:
    rows = pollux_rows()
    rows[2]["criteria_name"] = "Красота слога по Бунину"
    path = write(fmt, rows, tmp_path)

    report = material_import(path=path)

    assert errors_of(report) == [(shown_row(fmt, 3), "criteria_name", "unknown_criterion")]
    assert counts() == (0, 0, 0)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_missing_column_is_an_error(fmt: str, tmp_path: Path) -> None:
    rows = [{k: v for k, v in row.items() if k != "answer"} for row in pollux_rows()]
    path = write(fmt, rows, tmp_path)

    report = material_import(path=path)

    header = 1 if fmt in ("csv", "xlsx") else None
    assert errors_of(report) == [(header, "answer", "missing_column")]
    assert counts() == (0, 0, 0)


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_empty_text_is_an_error(fmt: str, tmp_path: Path) -> None:
    rows = pollux_rows()
    rows[4]["answer"] = "   "
    rows[6]["instruction"] = ""
    path = write(fmt, rows, tmp_path)

    report = material_import(path=path)

    assert errors_of(report) == [
        (shown_row(fmt, 5), "answer", "empty_text"),
        (shown_row(fmt, 7), "instruction", "empty_text"),
    ]
    assert counts() == (0, 0, 0)


def test_unknown_style_complexity_flag_and_meta_are_errors(tmp_path: Path) -> None:
    rows = own_rows()[:4]
    rows[0]["style"] = "поэтический"
    rows[1]["complexity"] = "extreme"
    rows[2]["ethics_flag"] = "maybe"
    rows[3]["generation_meta"] = "[1, 2]"

    report = material_import(path=write("csv", rows, tmp_path))

    assert errors_of(report) == [
        (2, "style", "unknown_style"),
        (3, "complexity", "unknown_complexity"),
        (4, "ethics_flag", "bad_value"),
        (5, "generation_meta", "bad_value"),
    ]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_cp1251_file_gets_an_encoding_error(fmt: str, tmp_path: Path) -> None:
    path = write(fmt, pollux_rows(), tmp_path)
    path.write_bytes(path.read_text("utf-8").encode("cp1251"))

    report = material_import(path=path)

    assert [(e.column, e.code) for e in report.errors] == [(None, "encoding")]
    # The first Cyrillic letter is on the first data line (the CSV header is ASCII).
    assert report.errors[0].row == (2 if fmt == "csv" else 1)
    assert "1251" in report.errors[0].message
    assert counts() == (0, 0, 0)


def test_an_oversize_file_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    # Not even valid CSV/UTF-8: the size check must come first and alone.
    path.write_bytes(b"\xff" * 5000)

    report = material_import(path=path, max_bytes=4096)

    assert errors_of(report) == [(None, None, "too_large")]


def test_the_upload_limit_comes_from_settings(tmp_path: Path, settings: Any) -> None:
    settings.IMPORT_MAX_BYTES = 100
    report = material_import(path=write("csv", pollux_rows(), tmp_path))
    assert errors_of(report) == [(None, None, "too_large")]


def test_a_text_over_the_limit_is_an_error(tmp_path: Path) -> None:
    rows = pollux_rows()[:2]
    rows[1]["answer"] = "я" * 501

    report = material_import(path=write("jsonl", rows, tmp_path), max_text_chars=500)

    assert errors_of(report) == [(2, "answer", "text_too_long")]


def test_an_xlsx_decompression_bomb_is_refused_unopened(tmp_path: Path) -> None:
    path = tmp_path / "bomb.xlsx"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/worksheets/sheet1.xml", b"<" + b"a" * (30 * 1024 * 1024))
    assert path.stat().st_size < 200 * 1024

    report = material_import(path=path, max_bytes=1024 * 1024)

    assert errors_of(report) == [(None, None, "too_large")]


@pytest.mark.parametrize(("fmt", "code"), [("xlsx", "bad_xlsx"), ("parquet", "bad_parquet")])
def test_a_corrupt_binary_file_is_an_error(fmt: str, code: str, tmp_path: Path) -> None:
    path = tmp_path / f"broken.{fmt}"
    path.write_bytes(b"this is not a real file")
    assert errors_of(material_import(path=path)) == [(None, None, code)]


def test_an_unknown_extension_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_text("instruction,answer\n", "utf-8")
    assert errors_of(material_import(path=path)) == [(None, None, "bad_format")]


def test_bad_json_lines_are_named_by_line(tmp_path: Path) -> None:
    path = write("jsonl", own_rows()[:2], tmp_path)
    path.write_text(path.read_text("utf-8") + "\n{not json\n[1, 2]\n", "utf-8")

    report = material_import(path=path)

    assert errors_of(report) == [(4, None, "bad_json"), (5, None, "bad_json")]
    assert counts() == (0, 0, 0)


def test_a_malformed_csv_row_is_an_error(tmp_path: Path) -> None:
    path = write("csv", pollux_rows()[:2], tmp_path)
    with path.open("a", encoding="utf-8") as f:
        f.write("a,b,c,d,e,f,g,h,i,j,k,l,m,n,o\n")

    report = material_import(path=path)

    assert errors_of(report) == [(4, None, "bad_csv")]


def test_reading_stops_after_fifty_errors(tmp_path: Path) -> None:
    rows = [{**pollux_rows()[0], "task_type": f"нет такой {i}"} for i in range(80)]

    report = material_import(path=write("csv", rows, tmp_path))

    assert len(report.errors) == 50
    assert report.errors_truncated
    assert report.errors[-1].row == 51


# --------------------------------------------------------------------------- duplicates


def test_the_same_id_with_different_content_is_an_error(tmp_path: Path) -> None:
    rows = own_rows()
    rows[1]["answer_id"] = rows[0]["answer_id"]  # another model's answer under the same id
    rows[3]["instruction"] = "Совсем другой текст задания."  # own-i2 given twice, differently

    report = material_import(path=write("jsonl", rows, tmp_path))

    assert errors_of(report) == [
        (2, "answer_id", "duplicate_id"),
        (4, "instruction", "duplicate_id"),
    ]
    assert "own-i2" in report.errors[1].message
    assert counts() == (0, 0, 0)


def test_the_same_rows_under_the_same_ids_are_merged(tmp_path: Path) -> None:
    rows = own_rows()
    report = material_import(path=write("csv", rows + rows, tmp_path))

    assert report.errors == []
    assert report.rows == 12
    assert report.created == {"instructions": 3, "models": 2, "answers": 6}


def test_a_changed_file_under_known_ids_is_refused(tmp_path: Path) -> None:
    material_import(path=write("jsonl", own_rows(), tmp_path, "first"))
    rows = own_rows()
    for row in rows[:2]:  # both answers of own-i1 carry its text
        row["instruction"] = "Исправленный текст задания."
    rows[0]["answer_id"] = "own-new"
    before = counts()

    report = material_import(path=write("jsonl", rows, tmp_path, "second"))

    # The text under own-i1 changed, and the same answer text already has another id.
    assert errors_of(report) == [(1, "instruction", "conflict"), (1, "answer_id", "conflict")]
    assert counts() == before
    assert not Answer.objects.filter(external_id="own-new").exists()


# --------------------------------------------------------------------------- command


def test_the_command_prints_a_summary(tmp_path: Path) -> None:
    out = io.StringIO()
    call_command("import_material", str(write("xlsx", pollux_rows(), tmp_path)), stdout=out)

    assert "created 3 instructions, 2 models, 6 answers" in out.getvalue()
    assert counts() == (3, 2, 6)


def test_the_command_fails_with_the_errors(tmp_path: Path) -> None:
    rows = pollux_rows()
    rows[1]["criteria_name"] = "Нет такого критерия"
    err = io.StringIO()

    with pytest.raises(CommandError) as failure:
        call_command("import_material", str(write("csv", rows, tmp_path)), stderr=err)

    assert failure.value.returncode == 1
    assert "row 3, column criteria_name" in err.getvalue()
    assert counts() == (0, 0, 0)


# --------------------------------------------------------------------------- the job


def _job_for(path: Path, **params: Any) -> Job:
    target = Path(settings.PRIVATE_STORAGE_ROOT) / "imports" / path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(path.read_bytes())
    return Job.objects.create(
        kind=JobKind.IMPORT, params={"path": f"imports/{path.name}", **params}
    )


def test_the_task_imports_and_finishes_the_job(tmp_path: Path) -> None:
    job = _job_for(write("parquet", pollux_rows(), tmp_path))

    import_material_job.delay(job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert job.result["created"] == {"instructions": 3, "models": 2, "answers": 6}
    assert (job.progress_done, job.progress_total) == (PROGRESS_TOTAL, PROGRESS_TOTAL)
    assert job.attempts == 1
    assert counts() == (3, 2, 6)


def test_a_finished_job_is_not_run_again(tmp_path: Path) -> None:
    job = _job_for(write("csv", pollux_rows(), tmp_path))
    Job.objects.filter(pk=job.pk).update(status=JobStatus.DONE, result={"kept": True})

    import_material_job.delay(job.pk)

    job.refresh_from_db()
    assert (job.status, job.result, job.attempts) == (JobStatus.DONE, {"kept": True}, 0)
    assert counts() == (0, 0, 0)


def test_a_failed_import_fails_the_job_with_the_errors(tmp_path: Path) -> None:
    rows = pollux_rows()
    rows[0]["model_id"] = ""
    job = _job_for(write("csv", rows, tmp_path))

    import_material_job.delay(job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert [(e["row"], e["column"]) for e in job.result["errors"]] == [(2, "model_id")]
    assert counts() == (0, 0, 0)


def test_the_task_reads_only_files_under_the_imports_folder(tmp_path: Path) -> None:
    job = Job.objects.create(kind=JobKind.IMPORT, params={"path": str(POLLUX_CSV)})

    import_material_job.delay(job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert counts() == (0, 0, 0)


# --------------------------------------------------------------------------- the page


def _login(client: Client, username: str) -> None:
    assert client.login(username=username, password=PASSWORD)


def test_the_page_is_for_admins_only(client: Client, personas: Personas) -> None:
    url = reverse("import_material")
    assert client.get(url).status_code == HTTPStatus.FOUND  # anonymous: to the login page
    _login(client, "expert_a")
    assert client.get(url).status_code == HTTPStatus.FORBIDDEN
    _login(client, "sup_a")
    assert client.get(url).status_code == HTTPStatus.FORBIDDEN
    _login(client, "admin")
    assert client.get(url).status_code == HTTPStatus.OK


def test_an_expert_cannot_upload_or_see_a_job(client: Client, personas: Personas) -> None:
    job = Job.objects.create(kind=JobKind.IMPORT, params={"path": "imports/x.csv"})
    _login(client, "expert_a")
    upload = SimpleUploadedFile("data.csv", POLLUX_CSV.read_bytes())
    response = client.post(reverse("import_material"), {"file": upload})
    assert response.status_code == HTTPStatus.FORBIDDEN
    assert client.get(reverse("import_job", args=[job.pk])).status_code == HTTPStatus.FORBIDDEN
    assert Job.objects.count() == 1


def test_an_admin_uploads_a_file_and_sees_the_result(
    client: Client,
    personas: Personas,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    _login(client, "admin")
    upload = SimpleUploadedFile("pollux.csv", POLLUX_CSV.read_bytes(), "text/csv")

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("import_material"), {"file": upload})

    job = Job.objects.get(kind=JobKind.IMPORT)
    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"] == reverse("import_job", args=[job.pk])
    assert job.status == JobStatus.DONE
    assert job.created_by == personas.admin
    stored = Path(settings.PRIVATE_STORAGE_ROOT) / job.params["path"]
    assert stored.parent.name == "imports" and stored.read_bytes() == POLLUX_CSV.read_bytes()
    assert counts() == (3, 2, 6)
    page = client.get(response["Location"])
    assert page.status_code == HTTPStatus.OK
    assert 'hx-trigger="every 1s"' not in page.content.decode()
    assert "pollux.csv" in page.content.decode()


def test_a_failed_upload_lists_the_errors_by_row_and_column(
    client: Client,
    personas: Personas,
    tmp_path: Path,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    rows = pollux_rows()
    rows[3]["task_subtype"] = "Кобол"
    path = write("xlsx", rows, tmp_path)
    _login(client, "admin")

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("import_material"), {"file": SimpleUploadedFile("bad.xlsx", path.read_bytes())}
        )

    page = client.get(response["Location"]).content.decode()
    assert "<td>5</td><td>task_type</td>" in page
    assert "Кобол" in page
    assert counts() == (0, 0, 0)


def test_the_progress_region_polls_until_the_job_finishes(
    client: Client, personas: Personas
) -> None:
    job = Job.objects.create(
        kind=JobKind.IMPORT,
        status=JobStatus.RUNNING,
        params={"path": "imports/x.csv", "name": "x.csv"},
        progress_done=420,
        progress_total=PROGRESS_TOTAL,
    )
    _login(client, "admin")
    url = reverse("import_job", args=[job.pk])

    running = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert 'hx-trigger="every 1s"' in running
    assert "42%" in running
    assert "<html" not in running  # only the region is swapped in

    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.DONE,
        result={"created": {"instructions": 7, "models": 1, "answers": 9}, "existing": {}},
    )
    done = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "hx-trigger" not in done
    assert "<td>7</td>" in done


def test_a_wrong_file_type_is_refused_by_the_form(client: Client, personas: Personas) -> None:
    _login(client, "admin")
    upload = SimpleUploadedFile("notes.txt", b"hello")

    response = client.post(reverse("import_material"), {"file": upload})

    assert response.status_code == HTTPStatus.OK
    assert Job.objects.count() == 0


# --------------------------------------------------------------------------- typed and odd files


def _typed_parquet(path: Path, overrides: dict[str, pa.Array]) -> Path:
    """Our own rows as Parquet, strings everywhere except the given columns."""
    rows = own_rows()
    columns = list(dict.fromkeys(k for row in rows for k in row))
    arrays = {c: pa.array([_flat(row.get(c)) for row in rows], pa.string()) for c in columns}
    arrays.update(overrides)
    pq.write_table(pa.table(arrays), path)
    return path


def test_parquet_columns_of_the_wrong_type_are_refused_by_name(tmp_path: Path) -> None:
    n = len(own_rows())
    path = _typed_parquet(
        tmp_path / "typed.parquet",
        {
            "instruction": pa.array(list(range(n)), pa.int64()),
            "answer": pa.array([[1, 2]] * n, pa.list_(pa.int64())),
            "model_name": pa.array([{"a": 1}] * n),
            "answer_id": pa.array([4.5 + i for i in range(n)], pa.float64()),
        },
    )

    report = material_import(path=path)

    assert sorted(errors_of(report)) == [
        (None, "answer", "bad_type"),
        (None, "answer_id", "bad_type"),
        (None, "instruction", "bad_type"),
        (None, "model_name", "bad_type"),
    ]
    by_column = {e.column: e.message for e in report.errors}
    assert "expected: text (string)." in by_column["instruction"]
    assert "int64" in by_column["instruction"]
    assert "expected: text (string), integer." in by_column["answer_id"]
    assert counts() == (0, 0, 0)


def test_parquet_integer_ids_and_dictionary_strings_are_accepted(tmp_path: Path) -> None:
    rows = own_rows()
    ids = {r["answer_id"]: i for i, r in enumerate(rows, start=100)}
    path = _typed_parquet(
        tmp_path / "ints.parquet",
        {
            "answer_id": pa.array([ids[r["answer_id"]] for r in rows], pa.int64()),
            "model_name": pa.array([r["model_name"] for r in rows]).dictionary_encode(),
        },
    )

    report = material_import(path=path)

    assert report.errors == []
    assert Answer.objects.filter(external_id="100").exists()


def test_jsonl_lists_and_objects_in_text_columns_are_errors(tmp_path: Path) -> None:
    rows = own_rows()[:2]
    rows[0]["instruction"] = [1, 2]
    rows[1]["model_name"] = {"a": 1}
    path = write("jsonl", rows, tmp_path)

    report = material_import(path=path)

    assert errors_of(report) == [(1, "instruction", "bad_type"), (2, "model_name", "bad_type")]
    assert counts() == (0, 0, 0)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_a_utf16_file_gets_an_encoding_hint(fmt: str, encoding: str, tmp_path: Path) -> None:
    """utf-16 writes a byte order mark; utf-16-le/-be write none."""
    path = write(fmt, pollux_rows(), tmp_path)
    path.write_bytes(path.read_text("utf-8").encode(encoding))

    report = material_import(path=path)

    assert [(e.column, e.code) for e in report.errors] == [(None, "encoding")]
    assert "UTF-16" in report.errors[0].message
    assert counts() == (0, 0, 0)


def test_deeply_nested_json_lines_get_a_row_error(tmp_path: Path) -> None:
    rows = own_rows()[:3]
    deep: Any = {}
    for _ in range(40):
        deep = {"x": deep}
    rows[1]["generation_meta"] = deep
    path = write("jsonl", rows, tmp_path)
    lines = path.read_text("utf-8").splitlines()
    lines.insert(2, "[" * 100_000 + "]" * 100_000)  # beyond Python's recursion limit
    lines.insert(
        3,
        json.dumps(
            {"instruction": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}
        ),
    )
    path.write_text("\n".join(lines) + "\n", "utf-8")

    report = material_import(path=path)

    assert errors_of(report) == [
        (2, None, "bad_json"),
        (3, None, "bad_json"),
        (4, None, "bad_json"),
    ]
    assert all("nested" in e.message for e in report.errors)
    assert counts() == (0, 0, 0)

    # In a CSV the same object is text in the generation_meta column: named by row and column.
    csv_rows = own_rows()[:2]
    csv_rows[1]["generation_meta"] = deep
    report = material_import(path=write("csv", csv_rows, tmp_path))
    assert errors_of(report) == [(3, "generation_meta", "bad_value")]
    assert counts() == (0, 0, 0)


@pytest.mark.parametrize("sep", [",", ";", "\t"])
def test_the_one_table_reader_reads_small_csv_tables(sep: str) -> None:
    # material.readers.read_table: the exam reference import reads its files through it.
    content = sep.join(["Answer", " Criterion ", "score"]).encode() + b"\r\n"
    content += sep.join(["7", "crit", " 2 "]).encode("utf-8") + b"\r\n\r\n"
    content += sep.join(["8", "другой"]).encode("utf-8") + b"\r\n"
    rows = read_table(b"\xef\xbb\xbf" + content, "refs.csv", 10_000_000)
    assert rows == [
        {"answer": "7", "criterion": "crit", "score": "2"},
        {"answer": "8", "criterion": "другой", "score": ""},
    ]


def test_the_one_table_reader_reads_xlsx_and_refuses_bad_files() -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["answer", "score"])
    sheet.append([7, 2.0])
    sheet.append([None, None])
    buffer = io.BytesIO()
    book.save(buffer)
    assert read_table(buffer.getvalue(), "r.XLSX", 10_000_000) == [{"answer": "7", "score": "2"}]
    with pytest.raises(ValueError, match=r"UTF-8"):
        read_table("answer,score\n7,плохо\n".encode("cp1251"), "refs.csv", 10_000_000)
    with pytest.raises(ValueError):
        read_table(b"not a zip", "refs.xlsx", 10_000_000)


@pytest.mark.parametrize("content", [b"a\n1\n", b"ab\ncd\n", b"q,r\n"])
def test_a_short_utf8_file_is_not_taken_for_utf16(content: bytes, tmp_path: Path) -> None:
    # Four to seven bytes without a NUL once passed the UTF-16 test (its NUL quota was 0).
    path = tmp_path / "short.csv"
    path.write_bytes(content)
    report = material_import(path=path)
    assert "encoding" not in [e.code for e in report.errors], report.errors
    assert report.errors  # refused, for what it lacks: the required columns
    assert counts() == (0, 0, 0)


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_an_unknown_task_error_names_the_catalogue_path_that_matches(
    fmt: str, tmp_path: Path
) -> None:
    # The catalogue's own group and task names in task_type / task_subtype (the group is no
    # level of task_type): the error names the path to give in task_path.
    rows = pollux_rows()[:1]
    rows[0].update(task_type="Text Transformation", task_subtype="Editing", task_subsubtype="")
    report = material_import(path=write(fmt, rows, tmp_path))
    assert errors_of(report) == [(shown_row(fmt, 1), "task_type", "unknown_task")]
    assert "“Text Transformation / Editing” — give it in task_path" in report.errors[0].message
    # A leaf's own name under a wrong group: the leaves of that name are named.
    rows[0].update(task_type="Nonsense", task_subtype="Editing")
    report = material_import(path=write(fmt, rows, tmp_path))
    assert "Text Transformation / Editing" in report.errors[0].message
    assert counts() == (0, 0, 0)
