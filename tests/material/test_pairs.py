"""Answer pairs: the REPA import in every format, its errors and atomicity, pairing, the page."""

from __future__ import annotations

import csv
import io
import json
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
from material.import_common import ImportReport, sha256_hex
from material.models import Answer, AnswerPair, Instruction, LanguageModel
from material.pairing import pairs_make
from material.pairs import pairs_import
from material.tasks import import_pairs_job, make_pairs_job
from panels.defaults import ensure_default_panels
from taxonomy.models import Criterion, Task
from taxonomy.services import load_pollux
from tests.conftest import PASSWORD, Personas

FORMATS = ["csv", "jsonl", "xlsx", "parquet"]


@pytest.fixture(scope="module", autouse=True)
def _catalogue_once(django_db_setup: Any, django_db_blocker: Any) -> Iterator[None]:
    """The catalogue (for the personas) once for the module, and an empty database after it."""
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


# --------------------------------------------------------------------------- helpers


def repa_rows() -> list[dict[str, Any]]:
    """Three REPA rows: two pairs on one query sharing YandexGPT's answer, one on another."""
    return [
        {
            "id": "repa-1",
            "query": "Сколько будет дважды два?",
            "query_category": "Математика",
            "model_name_1": "GigaChat",
            "model_name_2": "YandexGPT",
            "model_output_1": "4",
            "model_output_2": "Четыре.\nЭто просто.",
            "source": "repa-test",
        },
        {
            "id": "repa-2",
            "query": "Сколько будет дважды два?",
            "query_category": "Математика",
            "model_name_1": "YandexGPT",
            "model_name_2": "Llama",
            "model_output_1": "Четыре.\nЭто просто.",
            "model_output_2": "2 × 2 = 4",
            "source": "repa-test",
        },
        {
            "id": "repa-3",
            "query": "Напиши хокку об осени.",
            "query_category": "Творчество",
            "model_name_1": "Llama",
            "model_name_2": "GigaChat",
            "model_output_1": "Листья на ветру",
            "model_output_2": "Осенний дождь",
            "source": "repa-test",
        },
    ]


def write(fmt: str, rows: list[dict[str, Any]], directory: Path, name: str = "pairs") -> Path:
    """The rows as a file of the given format (columns: the union of keys, in order)."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    path = directory / f"{name}.{fmt}"
    if fmt == "csv":
        with path.open("w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, columns)
            writer.writeheader()
            writer.writerows(rows)
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
            sheet.append([row.get(c) for c in columns])
        workbook.save(path)
    else:
        table = pa.Table.from_pylist(
            [{c: row.get(c) for c in columns} for row in rows],
            schema=pa.schema([(c, pa.string()) for c in columns]),
        )
        pq.write_table(table, path)
    return path


def shown_row(fmt: str, index: int) -> int:
    """The row number a user sees for the index-th data row (1-based): +1 for a header line."""
    return index + 1 if fmt in ("csv", "xlsx") else index


def counts() -> tuple[int, int, int, int]:
    return (
        Instruction.objects.count(),
        LanguageModel.objects.count(),
        Answer.objects.count(),
        AnswerPair.objects.count(),
    )


def errors_of(report: ImportReport) -> list[tuple[int | None, str | None, str]]:
    return [(e.row, e.column, e.code) for e in report.errors]


def answer(instruction: Instruction, model: str, text: str) -> Answer:
    lm, _ = LanguageModel.objects.get_or_create(name=model)
    return Answer.objects.create(
        instruction=instruction, model=lm, text=text, text_hash=sha256_hex(text)
    )


def instruction_with(*models: str, text: str = "Вопрос") -> Instruction:
    instruction = Instruction.objects.create(text=f"{text} {Instruction.objects.count()}")
    for model in models:
        answer(instruction, model, f"Ответ {model} на «{instruction.text}»")
    return instruction


def models_of(pair: AnswerPair) -> tuple[str, str]:
    return pair.answer_a.model.name, pair.answer_b.model.name


# --------------------------------------------------------------------------- the import


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_repa_file_imports_in_every_format(fmt: str, tmp_path: Path) -> None:
    report = pairs_import(path=write(fmt, repa_rows(), tmp_path))

    assert report.errors == []
    assert report.rows == 3
    # Two queries; YandexGPT's answer to the first is in two pairs and stored once.
    assert report.created == {"instructions": 2, "models": 3, "answers": 5, "pairs": 3}
    assert counts() == (2, 3, 5, 3)
    pair = AnswerPair.objects.select_related(
        "instruction", "answer_a__model", "answer_b__model"
    ).get(external_id="repa-1")
    assert models_of(pair) == ("GigaChat", "YandexGPT")  # model 1 is A
    assert (pair.answer_a.text, pair.answer_b.text) == ("4", "Четыре.\nЭто просто.")
    assert (pair.category, pair.source) == ("Математика", "repa-test")
    assert pair.instruction.text == "Сколько будет дважды два?"
    assert pair.instruction.task_id is None and pair.instruction.source == "repa-test"
    assert pair.answer_b.text_hash == sha256_hex("Четыре.\nЭто просто.")
    assert pair.answer_a.instruction_id == pair.answer_b.instruction_id == pair.instruction_id
    shared = AnswerPair.objects.get(external_id="repa-2")
    assert shared.answer_a_id == pair.answer_b_id


@pytest.mark.parametrize("fmt", FORMATS)
def test_reimporting_the_same_file_creates_nothing(fmt: str, tmp_path: Path) -> None:
    path = write(fmt, repa_rows(), tmp_path)
    pairs_import(path=path)
    before = counts()

    again = pairs_import(path=path)

    assert again.errors == []
    assert again.created == {"instructions": 0, "models": 0, "answers": 0, "pairs": 0}
    assert again.existing == {"instructions": 2, "models": 3, "answers": 5, "pairs": 3}
    assert counts() == before


def test_our_own_column_names_are_accepted(tmp_path: Path) -> None:
    names = {
        "query": "instruction",
        "query_category": "category",
        "model_name_1": "model_a",
        "model_name_2": "model_b",
        "model_output_1": "answer_a",
        "model_output_2": "answer_b",
        "id": "pair_id",
    }
    rows = [{names.get(k, k): v for k, v in row.items()} for row in repa_rows()]
    rows[2]["instruction_id"] = "haiku-1"

    report = pairs_import(path=write("jsonl", rows, tmp_path))

    assert report.errors == []
    assert counts() == (2, 3, 5, 3)
    haiku = AnswerPair.objects.select_related("instruction").get(external_id="repa-3")
    assert haiku.instruction.external_id == "haiku-1"
    assert haiku.category == "Творчество"


def test_a_parquet_id_may_be_an_integer_and_id_and_source_are_optional(tmp_path: Path) -> None:
    rows = repa_rows()
    columns = [c for c in rows[0] if c not in ("id", "source")]
    table = pa.table({c: [row[c] for row in rows] for c in columns} | {"id": [10, 20, 30]})
    path = tmp_path / "ints.parquet"
    pq.write_table(table, path)

    report = pairs_import(path=path)

    assert report.errors == []
    assert set(AnswerPair.objects.values_list("external_id", flat=True)) == {"10", "20", "30"}
    assert set(AnswerPair.objects.values_list("source", flat=True)) == {""}


def test_stored_material_and_pairs_are_found_again(tmp_path: Path) -> None:
    # The query, both models and one answer exist already (a POLLUX import made them, with a
    # task), and the file's first pair is stored with its answers the other way round.
    task = Task.objects.filter(is_leaf=True).first()
    query = Instruction.objects.create(text="Сколько будет дважды два?", task=task)
    giga = answer(query, "GigaChat", "4")
    yandex = answer(query, "YandexGPT", "Четыре.\nЭто просто.")
    AnswerPair.objects.create(instruction=query, answer_a=yandex, answer_b=giga)
    rows = [{k: v for k, v in row.items() if k != "id"} for row in repa_rows()]

    report = pairs_import(path=write("csv", rows, tmp_path))

    assert report.errors == []
    assert report.existing == {"instructions": 1, "models": 2, "answers": 2, "pairs": 1}
    assert report.created == {"instructions": 1, "models": 1, "answers": 3, "pairs": 2}
    assert AnswerPair.objects.filter(instruction=query).count() == 2
    assert counts() == (2, 3, 5, 3)


@pytest.mark.parametrize("fmt", FORMATS)
def test_bad_rows_are_named_by_row_and_column_and_nothing_is_written(
    fmt: str, tmp_path: Path
) -> None:
    rows = repa_rows()
    rows[0]["query"] = "  "
    rows[1]["model_name_2"] = "YandexGPT"  # the same model on both sides
    rows.append({**repa_rows()[2], "id": "repa-4"})  # row 3 again, under another id
    rows.append({**repa_rows()[2], "id": "repa-5", "model_output_2": ""})
    # The first row's error is the only one in a column of its own: a clean second half.
    rows.append({**repa_rows()[0], "id": "repa-6", "model_name_1": "Qwen", "model_name_2": "Qwen2"})

    report = pairs_import(path=write(fmt, rows, tmp_path))

    assert errors_of(report) == [
        (shown_row(fmt, 1), "query", "empty_text"),
        (shown_row(fmt, 2), "model_name_2", "same_model"),
        (shown_row(fmt, 4), "query", "duplicate_pair"),
        (shown_row(fmt, 5), "model_output_2", "empty_text"),
    ]
    assert f"row {shown_row(fmt, 3)}" in report.errors[2].message
    assert report.created == {"instructions": 0, "models": 0, "answers": 0, "pairs": 0}
    assert counts() == (0, 0, 0, 0)


def test_a_pair_given_twice_the_other_way_round_or_under_one_id_is_an_error(
    tmp_path: Path,
) -> None:
    rows = repa_rows()
    swapped = {
        **rows[0],
        "id": "repa-9",
        "model_name_1": "YandexGPT",
        "model_name_2": "GigaChat",
        "model_output_1": rows[0]["model_output_2"],
        "model_output_2": rows[0]["model_output_1"],
    }
    rows += [swapped, {**rows[2], "model_output_2": "Иной дождь"}]

    report = pairs_import(path=write("csv", rows, tmp_path))

    assert errors_of(report) == [(5, "query", "duplicate_pair"), (6, "id", "duplicate_id")]
    assert counts() == (0, 0, 0, 0)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_missing_column_is_named(fmt: str, tmp_path: Path) -> None:
    rows = [{k: v for k, v in row.items() if k != "model_output_2"} for row in repa_rows()]

    report = pairs_import(path=write(fmt, rows, tmp_path))

    header = 1 if fmt in ("csv", "xlsx") else None
    assert errors_of(report) == [(header, "model_output_2", "missing_column")]
    assert counts() == (0, 0, 0, 0)


def test_texts_over_the_import_limits_are_errors(tmp_path: Path, settings: Any) -> None:
    settings.IMPORT_MAX_TEXT_CHARS = 30
    rows = repa_rows()
    rows[1]["model_output_2"] = "х" * 31
    rows[2]["model_name_1"] = "m" * 201
    rows[2]["query_category"] = "к" * 101

    report = pairs_import(path=write("xlsx", rows, tmp_path))

    assert errors_of(report) == [
        (3, "model_output_2", "text_too_long"),
        (4, "model_name_1", "too_long"),
        (4, "query_category", "too_long"),
    ]
    assert counts() == (0, 0, 0, 0)


def test_an_id_stored_with_other_answers_is_a_conflict_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    pairs_import(path=write("csv", repa_rows()[:1], tmp_path, "first"))
    changed = repa_rows()
    changed[0]["model_output_2"] = "Пять."  # repa-1 now names another answer
    before = counts()

    report = pairs_import(path=write("csv", changed, tmp_path, "changed"))

    assert errors_of(report) == [(2, "id", "conflict")]
    assert counts() == before


def test_the_import_command_prints_a_summary_or_the_errors(tmp_path: Path) -> None:
    out = io.StringIO()
    call_command("import_pairs", str(write("parquet", repa_rows(), tmp_path)), stdout=out)
    assert "created 3 pairs, 2 instructions, 3 models, 5 answers" in out.getvalue()

    rows = repa_rows()
    rows[2]["model_name_2"] = "Llama"
    err = io.StringIO()
    with pytest.raises(CommandError) as failure:
        call_command(
            "import_pairs", str(write("csv", rows, tmp_path, "bad")), "--format", "csv", stderr=err
        )
    assert failure.value.returncode == 1
    assert "row 4, column model_name_2" in err.getvalue()


# --------------------------------------------------------------------------- making pairs


def test_random_makes_one_pair_of_distinct_models_per_instruction() -> None:
    three = instruction_with("A", "B", "C")
    two = instruction_with("A", "B")
    alone = instruction_with("A")
    # A second answer of A to `three`: a model takes part with its earliest answer.
    answer(three, "A", "Ещё один ответ A")

    report = pairs_make(scheme="random", seed=7)

    assert (report.instructions, report.created, report.seed) == (2, 2, 7)
    pairs = list(AnswerPair.objects.select_related("answer_a__model", "answer_b__model"))
    assert sorted(p.instruction_id for p in pairs) == sorted([three.pk, two.pk])
    assert not AnswerPair.objects.filter(instruction=alone).exists()
    for pair in pairs:
        a, b = models_of(pair)
        assert a != b
        assert pair.answer_a.instruction_id == pair.answer_b.instruction_id == pair.instruction_id
        assert pair.answer_a.text != "Ещё один ответ A" and pair.answer_b.text != "Ещё один ответ A"


def test_random_is_reproducible_with_its_seed_and_places_a_and_b_at_random() -> None:
    instructions = [instruction_with("A", "B", "C", "D") for _ in range(30)]

    first = pairs_make(scheme="random", seed=2024)
    drawn = set(AnswerPair.objects.values_list("instruction_id", "answer_a_id", "answer_b_id"))
    AnswerPair.objects.all().delete()
    pairs_make(scheme="random", seed=2024)
    again = set(AnswerPair.objects.values_list("instruction_id", "answer_a_id", "answer_b_id"))
    AnswerPair.objects.all().delete()
    pairs_make(scheme="random", seed=2025)
    other = set(AnswerPair.objects.values_list("instruction_id", "answer_a_id", "answer_b_id"))

    assert first.created == 30 and len(drawn) == 30
    assert again == drawn
    assert other != drawn
    # Each instruction's draw does not depend on which others are paired with it.
    AnswerPair.objects.all().delete()
    pairs_make(scheme="random", seed=2024, instruction_ids=[instructions[5].pk])
    assert set(AnswerPair.objects.values_list("instruction_id", "answer_a_id", "answer_b_id")) == {
        row for row in drawn if row[0] == instructions[5].pk
    }
    # Placement: A is sometimes the earlier answer, sometimes the later one.
    assert {a < b for _i, a, b in drawn} == {True, False}


def test_random_again_with_any_seed_adds_nothing() -> None:
    for _ in range(5):
        instruction_with("A", "B", "C")
    pairs_make(scheme="random", seed=1)

    again = pairs_make(scheme="random", seed=99)

    assert (again.created, again.already_paired) == (0, 5)
    assert AnswerPair.objects.count() == 5


def test_all_makes_every_pair_of_models_once_in_either_order() -> None:
    four = instruction_with("A", "B", "C", "D")
    three = instruction_with("A", "B", "C")
    a, b = list(four.answers.order_by("pk"))[:2]
    AnswerPair.objects.create(instruction=four, answer_a=b, answer_b=a)  # stored as (B, A)

    report = pairs_make(scheme="all", seed=3)

    assert (report.created, report.existing) == (4 * 3 // 2 - 1 + 3 * 2 // 2, 1)
    assert AnswerPair.objects.filter(instruction=four).count() == 6
    assert AnswerPair.objects.filter(instruction=three).count() == 3
    unordered = {
        frozenset(models_of(p))
        for p in AnswerPair.objects.filter(instruction=four).select_related(
            "answer_a__model", "answer_b__model"
        )
    }
    assert len(unordered) == 6
    assert pairs_make(scheme="all", seed=4).created == 0
    assert AnswerPair.objects.count() == 9


def test_the_make_command_prints_its_seed() -> None:
    instruction_with("A", "B")
    out = io.StringIO()

    call_command("make_pairs", "--scheme", "random", "--seed", "11", stdout=out)

    assert "seed 11" in out.getvalue() and "created 1 pairs" in out.getvalue()
    with pytest.raises(CommandError):
        call_command("make_pairs", "--scheme", "some")


# --------------------------------------------------------------------------- the jobs


def _job_for(path: Path) -> Job:
    target = Path(settings.PRIVATE_STORAGE_ROOT) / "imports" / path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(path.read_bytes())
    return Job.objects.create(kind=JobKind.PAIR_IMPORT, params={"path": f"imports/{path.name}"})


def test_the_import_task_imports_or_fails_with_the_errors(tmp_path: Path) -> None:
    job = _job_for(write("xlsx", repa_rows(), tmp_path))
    import_pairs_job.delay(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert job.result["created"]["pairs"] == 3

    rows = repa_rows()
    rows[0]["model_name_1"] = ""
    bad = _job_for(write("csv", rows, tmp_path, "bad"))
    import_pairs_job.delay(bad.pk)
    bad.refresh_from_db()
    assert bad.status == JobStatus.FAILED
    assert [(e["row"], e["column"]) for e in bad.result["errors"]] == [(2, "model_name_1")]

    outside = Job.objects.create(kind=JobKind.PAIR_IMPORT, params={"path": "../../etc/passwd"})
    import_pairs_job.delay(outside.pk)
    outside.refresh_from_db()
    assert outside.status == JobStatus.FAILED
    assert counts()[3] == 3


def test_the_make_task_pairs_with_the_jobs_seed() -> None:
    instruction_with("A", "B", "C")
    job = Job.objects.create(kind=JobKind.PAIR_MAKE, params={"scheme": "all", "seed": 5})

    make_pairs_job.delay(job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert (job.result["created"], job.result["seed"]) == (3, 5)


# --------------------------------------------------------------------------- the page


def _login(client: Client, username: str) -> None:
    assert client.login(username=username, password=PASSWORD)


def _upload(path: Path) -> dict[str, Any]:
    return {"file": SimpleUploadedFile(path.name, path.read_bytes())}


def test_only_an_admin_sees_the_page_uploads_or_makes_pairs(
    client: Client, personas: Personas, tmp_path: Path
) -> None:
    path = write("csv", repa_rows(), tmp_path)
    instruction_with("A", "B")
    job = Job.objects.create(kind=JobKind.PAIR_MAKE, status=JobStatus.DONE)
    assert client.get(reverse("material_pairs")).status_code == HTTPStatus.FOUND  # to login
    for username in ("expert_a", "sup_a"):
        _login(client, username)
        assert client.get(reverse("material_pairs")).status_code == HTTPStatus.FORBIDDEN
        refused = client.post(reverse("material_pairs_import"), _upload(path))
        assert refused.status_code == HTTPStatus.FORBIDDEN
        refused = client.post(reverse("material_pairs_make"), {"scheme": "random"})
        assert refused.status_code == HTTPStatus.FORBIDDEN
        page = client.get(reverse("material_pairs_job", args=[job.pk]))
        assert page.status_code == HTTPStatus.FORBIDDEN
    assert Job.objects.count() == 1
    assert AnswerPair.objects.count() == 0
    _login(client, "admin")
    assert client.get(reverse("material_pairs")).status_code == HTTPStatus.OK


def test_an_admin_uploads_a_file_and_sees_what_it_made(
    client: Client,
    personas: Personas,
    tmp_path: Path,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    _login(client, "admin")

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("material_pairs_import"), _upload(write("parquet", repa_rows(), tmp_path))
        )

    job = Job.objects.get(kind=JobKind.PAIR_IMPORT)
    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"] == reverse("material_pairs_job", args=[job.pk])
    assert (job.status, job.created_by) == (JobStatus.DONE, personas.admin)
    assert counts() == (2, 3, 5, 3)
    page = client.get(response["Location"])
    assert page.status_code == HTTPStatus.OK
    assert "<td>3</td>" in page.content.decode() and "pairs.parquet" in page.content.decode()


def test_a_file_with_bad_rows_gets_a_4xx_page_naming_row_and_column(
    client: Client,
    personas: Personas,
    tmp_path: Path,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    rows = repa_rows()
    rows[1]["model_name_2"] = rows[1]["model_name_1"]
    _login(client, "admin")

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("material_pairs_import"), _upload(write("csv", rows, tmp_path))
        )

    page = client.get(response["Location"])
    assert page.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert "<td>3</td><td>model_name_2</td>" in page.content.decode()
    assert counts() == (0, 0, 0, 0)
    # The polled region stays 200 (htmx swaps only a 2xx in) and shows the same errors.
    region = client.get(response["Location"], headers={"HX-Request": "true"})
    assert region.status_code == HTTPStatus.OK
    assert "<td>3</td><td>model_name_2</td>" in region.content.decode()


def test_a_malformed_upload_is_refused_at_once_naming_the_field(
    client: Client, personas: Personas, tmp_path: Path
) -> None:
    _login(client, "admin")
    rows = [{k: v for k, v in row.items() if k != "query"} for row in repa_rows()]

    missing = client.post(reverse("material_pairs_import"), _upload(write("xlsx", rows, tmp_path)))
    wrong_type = client.post(
        reverse("material_pairs_import"), {"file": SimpleUploadedFile("pairs.txt", b"query\n")}
    )
    no_file = client.post(reverse("material_pairs_import"), {})

    assert missing.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert "<td>1</td><td>query</td>" in missing.content.decode()
    assert wrong_type.status_code == HTTPStatus.BAD_REQUEST
    assert ".parquet" in wrong_type.content.decode()
    assert no_file.status_code == HTTPStatus.BAD_REQUEST
    assert 'id="id_file_error"' in no_file.content.decode()
    assert Job.objects.count() == 0
    # The refused file is not kept.
    assert not any((Path(settings.PRIVATE_STORAGE_ROOT) / "imports").glob("*"))


def test_an_admin_makes_pairs_and_a_bad_form_is_a_400(
    client: Client,
    personas: Personas,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    instruction_with("A", "B", "C")
    _login(client, "admin")

    bad = client.post(reverse("material_pairs_make"), {"scheme": "some", "seed": "-1"})
    assert bad.status_code == HTTPStatus.BAD_REQUEST
    content = bad.content.decode()
    assert 'id="id_scheme_error"' in content and 'id="id_seed_error"' in content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("material_pairs_make"), {"scheme": "all", "seed": "8"})

    job = Job.objects.get(kind=JobKind.PAIR_MAKE)
    assert response.status_code == HTTPStatus.FOUND
    assert job.status == JobStatus.DONE and job.params == {"scheme": "all", "seed": 8}
    assert AnswerPair.objects.count() == 3
    page = client.get(response["Location"]).content.decode()
    assert "<td>8</td>" in page and "<td>3</td>" in page
