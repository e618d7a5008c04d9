"""One bounded JSON reader for what people send (issue #28, item 9).

JSON typed or uploaded by a person reached json.loads unbounded: 3,000 nested lists in a
submission's inference settings, 50,000 in a contest JSON file or an authoring draft's body raised
RecursionError, an integer of 5,000 digits Python's ValueError of its int-string limit, and a
configuration id beyond 64 bits OverflowError in SQLite's driver: each a 500. Each is now a
refusal of the view's kind (the form's 400, the import report's 422, the draft's 422, the
refusal page's 400) naming the field and the limit, and nothing is stored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from authoring.models import Revision, Slot
from generation import services as generation
from generation.models import GenerationConfig, GenerationRun
from markup.models import Markup, MarkupText
from material.importing import material_import
from material.models import Answer, Instruction, LanguageModel
from protocol.markup_json import to_json
from submissions.models import Submission
from taxonomy.models import Task
from tests import test_bad_input_digits
from tests.authoring import test_authoring
from tests.authoring.test_authoring import _slot
from tests.conftest import Personas
from tests.markup.test_markup import FIRST, document
from tests.sqlite_probe import run_sqlite_probe
from tests.submissions import test_submissions
from tests.submissions.test_submissions import Bench, _upload
from work.models import Assignment, Estimate

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent

# The fixtures of the suites whose views are exercised here.
bench = test_submissions.bench
team = test_authoring.team
scoring = test_bad_input_digits.scoring

DIGITS_5000 = "9" * 5000  # beyond Python's 4,300-digit int-string conversion limit


def nested(depth: int, inner: str = "0") -> str:
    return "[" * depth + inner + "]" * depth


def stored() -> tuple[int, ...]:
    return (
        Submission.objects.count(),
        Instruction.objects.count(),
        LanguageModel.objects.count(),
        Answer.objects.count(),
        MarkupText.objects.count(),
        Markup.objects.count(),
        GenerationRun.objects.count(),
        GenerationConfig.objects.count(),
    )


# --------------------------------------------------------------------- submissions


@pytest.mark.parametrize(
    ("settings_text", "limit"),
    [
        (nested(3000), "64 levels"),
        ('{"temperature": 0, "seed": ' + "1" * 4000 + "}", "100 digits"),
    ],
    ids=["3000-nested-lists", "4000-digit-integer"],
)
def test_inference_settings_beyond_the_limits_are_a_form_error(
    bench: Bench, settings_text: str, limit: str
) -> None:
    before = stored()
    content = b"instruction_id,answer\n" + b"".join(
        f'{i.pk},"Ответ {i.pk}"\n'.encode() for i in bench.instructions
    )
    response = _upload(bench, content, inference_settings=settings_text)
    assert response.status_code == 400, response.content.decode()[:500]
    errors = response.context["form"].errors
    assert list(errors) == ["inference_settings"], errors
    assert limit in errors["inference_settings"][0]
    assert stored() == before


def test_a_submission_jsonl_line_with_a_5000_digit_number_names_its_line(bench: Bench) -> None:
    lines = [
        json.dumps({"instruction_id": i.pk, "answer": f"Ответ {i.pk}"}) for i in bench.instructions
    ]
    lines[1] = '{"instruction_id": ' + DIGITS_5000 + ', "answer": "Ответ"}'
    before = stored()
    response = _upload(bench, ("\n".join(lines) + "\n").encode(), name="answers.jsonl")
    assert response.status_code == 422, response.content.decode()[:500]
    errors = [(e.row, e.code, e.message) for e in response.context["errors"]]
    assert [(row, code) for row, code, _m in errors] == [(2, "bad_json")], errors
    assert "100 digits" in errors[0][2]
    assert stored() == before


# --------------------------------------------------------------------- markup import


def _markup_post(client: Client, body: bytes, name: str = "deep.json") -> Any:
    upload = SimpleUploadedFile(name, body, content_type="application/json")
    return client.post(
        reverse("markup_import"),
        {
            "markup_files": [upload],
            "source": "expert",
            "author": "",
            "classifier": "prochtenie:2020",
        },
    )


def _contest_json_with_year(year: str) -> bytes:
    data = to_json(document(FIRST))
    data["meta"]["year"] = 0
    return json.dumps(data, ensure_ascii=False).replace('"year": 0', f'"year": {year}').encode()


@pytest.mark.parametrize(
    ("body", "limit"),
    [
        (nested(50_000).encode(), "64 levels"),
        (_contest_json_with_year(DIGITS_5000), "100 digits"),
        (b'{"meta": ' * 50_000, "64 levels"),
    ],
    ids=["50000-nested-lists", "5000-digit-year", "50000-nested-objects"],
)
def test_a_contest_json_upload_beyond_the_limits_is_refused_naming_the_file(
    client: Client, personas: Personas, body: bytes, limit: str
) -> None:
    client.force_login(personas.admin)
    before = stored()
    response = _markup_post(client, body)
    assert response.status_code == 422, response.content.decode()[:500]
    errors = [(e.file, e.field, e.message) for e in response.context["report"].errors]
    assert [(file, field) for file, field, _m in errors] == [("deep.json", "(document)")], errors
    assert limit in errors[0][2]
    page = response.content.decode()
    assert "deep.json" in page and limit in page
    assert stored() == before


# --------------------------------------------------------------------- authoring drafts


@pytest.mark.parametrize(
    "body",
    [
        b'{"text": "x", "devices": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
        b'{"text": "x", "seconds": ' + DIGITS_5000.encode() + b"}",
    ],
    ids=["50000-nested", "5000-digit-integer"],
)
def test_an_authoring_draft_body_beyond_the_limits_is_refused(
    team: dict[str, Any], body: bytes
) -> None:
    slot = _slot(team)
    client = Client(raise_request_exception=False)
    client.force_login(team["author"].user)
    before = (slot.text, Revision.objects.count(), slot.saved_at)
    response = client.post(
        reverse("authoring_save", args=[slot.pk]), data=body, content_type="application/json"
    )
    assert response.status_code == 422, response.content.decode()[:500]
    errors = response.json()["errors"]
    assert "64 levels" in errors["__all__"] or "100 digits" in errors["__all__"], errors
    slot = Slot.objects.get(pk=slot.pk)
    assert (slot.text, Revision.objects.count(), slot.saved_at) == before


# --------------------------------------------------------------------- material import


def test_a_material_csv_generation_meta_with_a_5000_digit_number_names_row_and_column(
    catalogue: None, tmp_path: Path
) -> None:
    path = tmp_path / "material.csv"
    meta = '{""seed"": ' + DIGITS_5000 + "}"
    path.write_text(
        "instruction,answer,model_name,task_path,generation_meta\n"
        '"Придумайте идею статьи о космосе.","Идея: тёмная материя.",GigaChat,'
        '"Creative Generation / Applied brainstorming / Scientific brainstorming",'
        f'"{meta}"\n',
        encoding="utf-8",
    )
    before = stored()
    report = material_import(path=path)
    errors = [(e.row, e.column, e.code, e.message) for e in report.errors]
    assert [(row, column) for row, column, _c, _m in errors] == [(2, "generation_meta")], errors
    assert "100 digits" in errors[0][3]
    assert stored() == before


# One valid row of a material file (the bad one is added beside it).
MATERIAL_ROW = {
    "instruction": "Придумайте идею статьи о космосе.",
    "answer": "Идея: тёмная материя.",
    "model_name": "GigaChat",
    "task_path": "Creative Generation / Applied brainstorming / Scientific brainstorming",
}


def test_a_material_jsonl_line_with_a_5000_digit_number_names_its_line(
    catalogue: None, tmp_path: Path
) -> None:
    row = dict(MATERIAL_ROW)
    path = tmp_path / "material.jsonl"
    path.write_text(
        json.dumps(row, ensure_ascii=False)
        + "\n"
        + '{"instruction": "x", "n": '
        + DIGITS_5000
        + "}\n",
        encoding="utf-8",
    )
    before = stored()
    report = material_import(path=path)
    assert [(e.row, e.code) for e in report.errors] == [(2, "bad_json")], report.errors
    assert "100 digits" in report.errors[0].message
    assert stored() == before


def test_a_material_jsonl_generation_meta_holding_nan_is_refused_naming_row_and_column(
    catalogue: None, tmp_path: Path
) -> None:
    # Read as a float so the typed reading names the column; PostgreSQL's jsonb has no NaN
    # (stored, it stopped the import with a database error).
    row = {**MATERIAL_ROW, "generation_meta": {"temperature": float("nan")}}
    path = tmp_path / "material.jsonl"
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    before = stored()
    report = material_import(path=path)
    errors = [(e.row, e.column, e.code, e.message) for e in report.errors]
    assert [(r, c, code) for r, c, code, _m in errors] == [(1, "generation_meta", "bad_value")]
    assert "NaN" in errors[0][3]
    assert stored() == before


# --------------------------------------------------------------------- the API


def test_the_scoring_api_refuses_a_body_beyond_the_limits_naming_body_and_limit(
    scoring: tuple[Assignment, Client, Estimate],
) -> None:
    assignment, client, estimate = scoring
    url = f"/api/assignments/{assignment.pk}/draft/"
    for body, limit in [
        (f'{{"triple_id": {estimate.triple_id}, "score": {"1" * 4000}}}', "100 digits"),
        (f'{{"triple_id": {estimate.triple_id}, "x": {nested(100)}}}', "64 levels"),
    ]:
        response = client.post(url, body, content_type="application/json")
        assert response.status_code == 400, response.content
        detail = response.json()["detail"]
        assert "body" in detail and limit in detail, detail
    estimate.refresh_from_db()
    assert estimate.score is None and estimate.rationale == ""


# --------------------------------------------------------------------- generation


def _admin(personas: Personas) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(personas.admin)
    return client


def _refusal_text(response: Any) -> str:
    return " ".join(response.content.decode().split("<main")[-1].split())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("config", "9999999999999999999"),  # 19 digits, beyond a bigint
        ("config", "99999999999999999999"),
        ("limit", "99999999999999999999"),
    ],
)
def test_a_run_with_an_integer_out_of_range_is_refused_naming_the_field(
    personas: Personas, field: str, value: str
) -> None:
    config = generation.config_save(
        name="c", model_name="M", backend="openai", endpoint="http://127.0.0.1:9/v1"
    )
    data = {"config": str(config.pk), "all": "1", field: value}
    before = stored()
    response = _admin(personas).post(reverse("generation_run_create"), data)
    assert response.status_code == 400, _refusal_text(response)[:500]
    assert response.context["field"] == field
    assert stored() == before


# The suite runs on PostgreSQL, which compares an id beyond 64 bits as a numeric and finds
# nothing; SQLite's driver cannot bind it at all (OverflowError, a 500). The embedded default
# is SQLite, so the routes are run there, in a process of its own as tests/test_sqlite_* do.
_SQLITE_PROBE = """
import json
from io import StringIO

import django

django.setup()
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.test.utils import setup_test_environment

from generation.models import GenerationConfig, GenerationRun

setup_test_environment()  # the responses' template context, as in a test
call_command("migrate", verbosity=0, stdout=StringIO())
admin = get_user_model().objects.create_superuser("root", "root@example.org", "x")
client = Client(raise_request_exception=False, SERVER_NAME="127.0.0.1")
client.force_login(admin)
out = {}
for name, url, data in [
    ("run", "/generation/runs/new/", {"config": "9999999999999999999", "all": "1"}),
    (
        "config",
        "/generation/configs/new/",
        {
            "name": "g",
            "model_name": "M",
            "backend": "openai",
            "endpoint": "http://127.0.0.1:9/v1",
            "task_groups": "9999999999999999999",
        },
    ),
]:
    response = client.post(url, data)
    out[name] = [response.status_code, (response.context or {}).get("field")]
out["stored"] = [GenerationRun.objects.count(), GenerationConfig.objects.count()]
print(json.dumps(out))
"""


@pytest.mark.slow  # a process of its own seeding the demo on SQLite: not in --quick
def test_generation_ids_beyond_64_bits_are_refused_on_sqlite(tmp_path: Path) -> None:
    report, stderr = run_sqlite_probe(["-c", _SQLITE_PROBE], tmp_path, timeout=240)
    assert report == {
        "run": [400, "config"],
        "config": [400, "task_groups"],
        "stored": [0, 0],
    }, (report, stderr[-3000:])


def test_a_run_s_task_group_in_unicode_digits_is_refused(personas: Personas) -> None:
    # int() reads "١٢" as 12: the run's task group is read as strictly as its configuration id.
    config = generation.config_save(
        name="c", model_name="M", backend="openai", endpoint="http://127.0.0.1:9/v1"
    )
    group = Task.objects.filter(level=0).order_by("pk").first()
    assert group is not None
    arabic = str(group.pk).translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"))
    before = stored()
    response = _admin(personas).post(
        reverse("generation_run_create"), {"config": str(config.pk), "group": arabic}
    )
    assert response.status_code == 400, _refusal_text(response)[:500]
    assert response.context["field"] == "group"
    assert stored() == before


@pytest.mark.parametrize(
    ("field", "typed"), [("max_new_tokens", "١٠٢٤"), ("batch_size", "٨"), ("temperature", "٠.٧")]
)
def test_a_configuration_s_numbers_in_unicode_digits_are_refused(
    personas: Personas, field: str, typed: str
) -> None:
    # int() and float() read Arabic-Indic digits; the page's numbers take ASCII digits only.
    before = GenerationConfig.objects.count()
    response = _admin(personas).post(
        reverse("generation_config_create"),
        {
            "name": "c",
            "model_name": "M",
            "backend": "openai",
            "endpoint": "http://127.0.0.1:9/v1",
            field: typed,
        },
    )
    assert response.status_code == 400, _refusal_text(response)[:500]
    assert response.context["field"] == field
    assert GenerationConfig.objects.count() == before
