"""The dataset export: Parquet and Excel read back against the database, safe cells, atomicity."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from datetime import timedelta
from http import HTTPStatus
from pathlib import Path
from typing import Any

import numpy as np
import openpyxl
import pandas as pd
import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dataset.aggregation import aggregation_run
from dataset.export import TRUNCATION_MARKER, ExportOptions, dataset_export
from dataset.models import TripleAggregate
from dataset.tasks import dataset_job_create
from jobs.models import Job, JobKind, JobStatus
from jobs.services import jobs_requeue_stale
from material.models import Answer
from tests.celery_worker import default_queue, purge_run_queues
from tests.conftest import PASSWORD, Personas, make_expert
from tests.dataset.test_aggregation import GOOD, score_triples
from tests.lib.libreoffice import assert_libreoffice_reads_as_openpyxl
from work.models import Estimate

# Mostly Cyrillic letters, so the rationale rule keeps it (rationale.py: "mostly Russian").
FORMULA = '=HYPERLINK("http://evil.example","нажмите сюда, чтобы получить приз")'
LONG_ANSWER = "Длинный ответ модели. " * 2000  # 44,000 characters: over Excel's cell limit


@pytest.fixture
def material(personas: Personas, make_answer: Callable[..., Answer]) -> dict[str, Any]:
    experts = [personas.expert_a] + [make_expert(f"ex{i}", personas.panel_a) for i in range(3)]
    plain = make_answer()
    risky = make_answer(model="YandexGPT", text=LONG_ANSWER)
    violating = make_answer(model="GigaChat")
    score_triples(
        plain,
        experts,
        {
            "censor": [(0, GOOD), (0, GOOD), (0, GOOD)],
            "repeats": [(2, GOOD), (1, "Есть повторы\x07 в тексте"), (2, GOOD)],
            "grammar": [(2, GOOD), (1, "bad")],  # the bad rationale leaves one estimate
        },
    )
    score_triples(
        risky,
        experts,
        {
            "censor": [(0, GOOD), (0, GOOD)],
            "repeats": [(1, FORMULA), (1, "+7 раз повтор"), (0, "-- минус балл"), (2, "@все ок")],
        },
    )
    score_triples(
        violating,
        experts,
        {"censor": [(1, GOOD), (0, GOOD)], "repeats": [(2, GOOD), (2, GOOD)]},
    )
    return {"plain": plain, "risky": risky, "violating": violating}


def expected_estimate_ids() -> set[int]:
    """Submitted estimates with valid rationales on triples that stay in the dataset."""
    aggregation_run()
    included = TripleAggregate.objects.filter(excluded_reason="").values("triple_id")
    bad = Estimate.objects.filter(rationale="bad")
    return set(
        Estimate.objects.filter(status="submitted", triple_id__in=included)
        .exclude(pk__in=bad)
        .values_list("pk", flat=True)
    )


def test_parquet_round_trip_matches_the_database(material: dict[str, Any], tmp_path: Path) -> None:
    expected = expected_estimate_ids()
    report = dataset_export(tmp_path / "ds", ExportOptions(fmt="parquet"))
    estimates = pq.read_table(tmp_path / "ds" / "estimates.parquet").to_pandas()
    triples = pq.read_table(tmp_path / "ds" / "triples.parquet").to_pandas()
    assert set(estimates["estimate_id"]) == expected
    assert report["rows"]["estimates"] == len(expected)
    for row in estimates.itertuples():
        est = Estimate.objects.select_related("expert", "triple__criterion").get(pk=row.estimate_id)
        assert row.rationale == est.rationale  # full text, control characters and all
        assert row.expert == est.expert.pseudonym
        assert est.triple.criterion is not None  # the export's rows are rubric estimates
        assert row.criterion_key == est.triple.criterion.key
        assert row.score == est.score
    aggs = {a.triple_id: a for a in TripleAggregate.objects.filter(excluded_reason="")}
    assert set(triples["triple_id"]) == set(aggs)
    for row in triples.itertuples():
        assert row.criteria_score == pytest.approx(aggs[row.triple_id].mean)
        assert row.n_estimates == aggs[row.triple_id].n_estimates
    # The POLLUX column names are all there, with the texts in full.
    for column in (
        "instruction",
        "reference_answer",
        "answer",
        "model_id",
        "task_type",
        "task_subtype",
        "task_subsubtype",
        "difficulty",
        "domain",
        "criteria_name",
        "rubrics",
        "criteria_score",
    ):
        assert column in triples.columns
    # Answers without an external id are named by their database id.
    risky = triples[triples["answer_id"] == str(material["risky"].pk)]
    assert set(risky["answer"]) == {LONG_ANSWER}  # Parquet keeps the full text
    assert set(risky["model_id"]) == {"YandexGPT 1"}
    assert (tmp_path / "ds" / "agreement.parquet").exists()
    assert not list(tmp_path.glob(".*part*"))


def test_excel_round_trip_matches_parquet_and_neutralises_formulas(
    material: dict[str, Any], tmp_path: Path
) -> None:
    expected = expected_estimate_ids()
    out = tmp_path / "ds.xlsx"
    dataset_export(out, ExportOptions(fmt="xlsx"))
    book = openpyxl.load_workbook(out)
    assert book.sheetnames[0] == "README"
    assert {"triples", "estimates", "agreement", "model_criterion", "model_task"} <= set(
        book.sheetnames
    )
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                assert cell.data_type != "f", f"{sheet.title}!{cell.coordinate} is a formula"
    rows = list(book["estimates"].iter_rows(values_only=True))
    header, body = rows[0], rows[1:]
    records = [dict(zip(header, r, strict=True)) for r in body]
    assert {r["estimate_id"] for r in records} == expected
    by_text = {r["rationale"] for r in records}
    assert FORMULA in by_text and "+7 раз повтор" in by_text and "@все ок" in by_text
    assert "Есть повторы в тексте" in by_text  # the BEL control character removed
    formula_cell = next(
        c for row in book["estimates"].iter_rows() for c in row if c.value == FORMULA
    )
    assert formula_cell.data_type == "s" and formula_cell.quotePrefix
    triples = list(book["triples"].iter_rows(values_only=True))
    answers = [dict(zip(triples[0], r, strict=True))["answer"] for r in triples[1:]]
    long = [a for a in answers if a and a.endswith(TRUNCATION_MARKER)]
    assert long and all(len(a) <= 32_767 for a in long)
    readme = dict(book["README"].iter_rows(values_only=True))
    assert readme["setting: drop_after_critical"] == "True"


def test_the_exported_workbook_opens_in_libreoffice_with_the_same_values(
    material: dict[str, Any], tmp_path: Path
) -> None:
    """Conformance (#12 item 6): LibreOffice reads every sheet of the dataset as openpyxl does;
    the formula-looking rationales stay text there too."""
    out = tmp_path / "ds.xlsx"
    dataset_export(out, ExportOptions(fmt="xlsx"))
    sheets = assert_libreoffice_reads_as_openpyxl(out, tmp_path)
    assert {"README", "estimates", "triples", "agreement"} <= set(sheets)
    assert FORMULA in {value for row in sheets["estimates"] for value in row}


def test_excel_splits_a_sheet_at_the_row_limit(material: dict[str, Any], tmp_path: Path) -> None:
    expected = expected_estimate_ids()
    out = tmp_path / "split.xlsx"
    # A 4-row limit (header + 3): the estimates continue on "estimates (2)", "(3)"...
    report = dataset_export(out, ExportOptions(fmt="xlsx", excel_max_rows=4, chunk_rows=2))
    book = openpyxl.load_workbook(out, read_only=True)
    parts = report["sheets"]["estimates"]
    assert parts[:2] == ["estimates", "estimates (2)"]
    ids: list[int] = []
    for title in parts:
        rows = list(book[title].iter_rows(values_only=True))
        assert rows[0][0] == "estimate_id" and len(rows) <= 4
        ids += [r[0] for r in rows[1:]]
    assert sorted(ids) == sorted(expected) and len(ids) == len(set(ids))


def test_parquet_zip_holds_one_file_per_table(material: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "ds.zip"
    dataset_export(out, ExportOptions(fmt="parquet"), temp_name=".job-x.part")
    with zipfile.ZipFile(out) as archive:
        assert {"estimates.parquet", "triples.parquet"} <= set(archive.namelist())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds.zip"]


def test_a_failed_export_leaves_no_file(
    material: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataset.export as export

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk full")

    monkeypatch.setattr(export.ExportLookups, "load", boom)
    with pytest.raises(RuntimeError):
        dataset_export(tmp_path / "ds.xlsx", ExportOptions(fmt="xlsx"))
    assert list(tmp_path.iterdir()) == []


def test_the_command_writes_the_dataset(material: dict[str, Any], tmp_path: Path) -> None:
    call_command(
        "export_dataset",
        "--format",
        "xlsx",
        "--out",
        str(tmp_path / "c.xlsx"),
        "--keep-after-critical",
    )
    book = openpyxl.load_workbook(tmp_path / "c.xlsx", read_only=True)
    readme = dict(book["README"].iter_rows(values_only=True))
    assert readme["setting: drop_after_critical"] == "False"


def test_the_aggregate_command_fills_aggregates(material: dict[str, Any]) -> None:
    call_command("aggregate")
    assert TripleAggregate.objects.filter(excluded_reason="").count() == 5


# ---------------------------------------------------------------------------------------------
# The admin page.
# ---------------------------------------------------------------------------------------------


def login(user: Any) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def test_only_admins_see_the_dataset_page(personas: Personas) -> None:
    assert login(personas.supervisor_a).get(reverse("dataset")).status_code == 403
    assert login(personas.expert_a.user).get(reverse("dataset")).status_code == 403
    assert Client().get(reverse("dataset")).status_code == HTTPStatus.FOUND
    assert login(personas.admin).get(reverse("dataset")).status_code == HTTPStatus.OK


def test_an_admin_starts_an_export_and_downloads_it(
    material: dict[str, Any],
    personas: Personas,
    django_capture_on_commit_callbacks: Any,
    settings: Any,
    tmp_path: Path,
) -> None:
    settings.PRIVATE_STORAGE_ROOT = tmp_path
    client = login(personas.admin)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("dataset"),
            {
                "kind": "export",
                "format": "xlsx",
                "drop_invalid_rationale": "on",
                "drop_after_critical": "on",
                "min_estimates": 2,
            },
        )
    assert response.status_code == HTTPStatus.FOUND
    job = Job.objects.get(kind=JobKind.EXPORT)
    assert job.status == JobStatus.DONE and job.file_path.endswith(".xlsx")
    assert job.created_by == personas.admin and job.params["format"] == "xlsx"
    page = client.get(reverse("dataset")).content.decode()
    assert reverse("dataset-download", args=[job.pk]) in page
    row = client.get(reverse("dataset-job", args=[job.pk]), HTTP_HX_REQUEST="true")
    assert b"<tr" in row.content and b"<html" not in row.content
    download = client.get(reverse("dataset-download", args=[job.pk]))
    assert download.status_code == HTTPStatus.OK
    body = b"".join(download.streaming_content)  # type: ignore[attr-defined]
    assert body[:2] == b"PK"
    assert (
        login(personas.supervisor_a).get(reverse("dataset-download", args=[job.pk])).status_code
        == 403
    )


def test_a_finished_job_is_not_run_twice(
    material: dict[str, Any],
    personas: Personas,
    settings: Any,
    tmp_path: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from dataset.tasks import export_dataset_job

    settings.PRIVATE_STORAGE_ROOT = tmp_path
    with django_capture_on_commit_callbacks(execute=True):
        job = dataset_job_create(
            kind=JobKind.EXPORT, user=personas.admin, params={"format": "parquet"}
        )
    job.refresh_from_db()
    first = job.file_path
    export_dataset_job(job.pk)  # a duplicate delivery
    job.refresh_from_db()
    assert job.file_path == first and job.attempts == 1
    assert len(list((tmp_path / "exports").iterdir())) == 1


# ---------------------------------------------------------------------------------------------
# A real worker killed in the middle of an export.
# ---------------------------------------------------------------------------------------------


def _worker(log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    db = settings.DATABASES["default"]
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.test",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        REDIS_URL=settings.REDIS_URL,
        CELERY_TASK_ALWAYS_EAGER="0",
    )
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool",
            "solo",
            "-c",
            "1",
            "-Q",
            default_queue(),
            "-I",
            # The slow export: each estimates chunk takes a second, so the kill lands mid-way.
            "dataset.tasks,tests.faults.slow_export",
            "--loglevel",
            "INFO",
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
        ],
        env=env,
        cwd=settings.BASE_DIR,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _wait(predicate: Callable[[], bool], timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}\n{log.read_text()[-4000:]}")


@pytest.mark.celery
@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_export_still_yields_one_complete_file(
    material: dict[str, Any], personas: Personas, tmp_path: Path
) -> None:
    from config.celery_app import app

    assert connection.vendor == "postgresql"
    purge_run_queues()  # no stale messages of this run; other runs' keys stay
    root = Path(settings.PRIVATE_STORAGE_ROOT) / "exports"
    job = Job.objects.create(
        kind=JobKind.EXPORT,
        created_by=personas.admin,
        # Two estimates per chunk and a second after each (the worker's slow export): ~10 s.
        params={"format": "parquet", "chunk_rows": 2},
    )
    for stale in root.glob(f"*{job.pk}*"):
        stale.unlink()
    log = tmp_path / "worker.log"
    first = _worker(log)
    try:
        app.send_task("dataset.tasks.export_dataset_job", args=[job.pk])

        def writing() -> bool:
            job.refresh_from_db()
            return (
                job.status == JobStatus.RUNNING
                and job.progress_done > 0
                and (root / f".job-{job.pk}.part.d" / "estimates.parquet").exists()
            )

        _wait(writing, 60, "the export to start writing", log)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and not job.file_path
    # The dead attempt's half-written files are there, and not offered.
    assert (root / f".job-{job.pk}.part.d").exists()

    second = _worker(tmp_path / "worker2.log")
    try:
        app.conf.task_always_eager = False
        # The killed worker beats no more: age its last heartbeat past the limit rather than wait
        # for it to age (the new worker judges staleness by its own clock).
        beat = timezone.now() - timedelta(seconds=5)
        Job.objects.filter(pk=job.pk).update(heartbeat_at=beat)
        assert jobs_requeue_stale(stale_after=timedelta(seconds=1)) == [job.pk]

        def done() -> bool:
            job.refresh_from_db()
            return job.status == JobStatus.DONE

        _wait(done, 120, "the retried export", tmp_path / "worker2.log")
    finally:
        app.conf.task_always_eager = settings.CELERY_TASK_ALWAYS_EAGER
        os.killpg(second.pid, signal.SIGTERM)
        second.wait(20)
        purge_run_queues()
    job.refresh_from_db()
    assert job.attempts == 2 and job.file_path
    files = sorted(p.name for p in root.iterdir() if str(job.pk) in p.name)
    assert files == [Path(job.file_path).name]  # one file, no .part left
    with zipfile.ZipFile(root.parent / job.file_path) as archive:
        archive.extractall(tmp_path / "unzipped")
    ids = pq.read_table(tmp_path / "unzipped" / "estimates.parquet")["estimate_id"].to_pylist()
    assert len(ids) == job.result["rows"]["estimates"] == len(set(ids)) > 0


def test_the_triples_table_carries_the_judge_columns(
    material: dict[str, Any], tmp_path: Path
) -> None:
    from judging.models import JudgeEstimate, JudgeRun
    from judging.services import config_save

    config = config_save(name="pollux7b")
    run = JudgeRun.objects.create(config=config, backend="transformers", scope={"all": True})
    expected_estimate_ids()  # aggregates exist: the triples that stay in the dataset
    kept = list(
        TripleAggregate.objects.filter(excluded_reason="").values_list("triple_id", flat=True)
    )
    judged, failed = kept[0], kept[1]
    JudgeEstimate.objects.create(
        run=run, triple_id=judged, config=config, score=2.0, parse_ok=True, feedback="=SUM(A1)"
    )
    JudgeEstimate.objects.create(
        run=run, triple_id=failed, config=config, score=None, parse_ok=False, error="no [RESULT]"
    )

    dataset_export(tmp_path / "ds", ExportOptions(fmt="parquet"))
    triples = pq.read_table(tmp_path / "ds" / "triples.parquet").to_pandas().set_index("triple_id")
    assert triples.loc[judged, "judge__pollux7b__score"] == 2.0
    assert triples.loc[judged, "judge__pollux7b__config_version"] == config.version
    assert bool(triples.loc[failed, "judge__pollux7b__parse_ok"]) is False
    # A parse failure is no score, never a 0.
    assert pd.isna(triples.loc[failed, "judge__pollux7b__score"])
    others = triples.drop(index=[judged, failed])
    assert others["judge__pollux7b__run"].isna().all()

    dataset_export(tmp_path / "ds.xlsx", ExportOptions(fmt="xlsx"))
    sheet = openpyxl.load_workbook(tmp_path / "ds.xlsx", read_only=True)["triples"]
    header = [c.value for c in next(sheet.iter_rows(max_row=1))]
    assert "judge__pollux7b__feedback" in header
    column = header.index("judge__pollux7b__feedback")
    # Read-only rows stop at their last non-empty cell.
    cells = [row[column] for row in sheet.iter_rows(min_row=2) if len(row) > column]
    feedback = [c for c in cells if c.value == "=SUM(A1)"]
    assert feedback and all(c.data_type == "s" for c in feedback)  # text, never a formula


# ---------------------------------------------------------------------------------------------
# One pass over the estimates (the spill), dictionaries, the prefetching thread, XML slices.
# ---------------------------------------------------------------------------------------------


def test_the_export_reads_the_estimates_once_and_aggregates_what_it_writes(
    material: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataset.aggregation as aggregation
    import dataset.export as export

    estimate_table = Estimate._meta.db_table
    queries: list[str] = []
    original = aggregation.stream_query

    def counting(sql: str, *args: Any, **kwargs: Any) -> Any:
        queries.append(sql)
        return original(sql, *args, **kwargs)

    monkeypatch.setattr(export, "stream_query", counting)
    monkeypatch.setattr(aggregation, "stream_query", counting)
    report = dataset_export(tmp_path / "ds", ExportOptions(fmt="parquet", chunk_rows=3))
    assert len([q for q in queries if estimate_table in q]) == 1
    # Aggregates and rows come from that one read: every triple's n_estimates is the number of
    # its rows in the estimates table, and its mean is theirs.
    estimates = pq.read_table(tmp_path / "ds" / "estimates.parquet").to_pandas()
    triples = pq.read_table(tmp_path / "ds" / "triples.parquet").to_pandas()
    rows = estimates.groupby("triple_id").size()
    assert rows.to_dict() == triples.set_index("triple_id")["n_estimates"].to_dict()
    means = estimates.groupby("triple_id")["score"].mean()
    for row in triples.itertuples():
        assert row.mean == pytest.approx(means[row.triple_id])
    assert report["estimates_submitted"] == Estimate.objects.filter(status="submitted").count()
    assert set(estimates["estimate_id"]) == expected_estimate_ids()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]  # no spill file left


def test_the_single_pass_frame_is_the_aggregations_own_read(
    material: dict[str, Any], tmp_path: Path
) -> None:
    from dataset.aggregation import read_estimate_frame, snapshot
    from dataset.export import EstimateSpill, read_estimates_once

    with snapshot():
        narrow = read_estimate_frame()
        # A folder of its own: PRIVATE_STORAGE_ROOT exists only once another test made it.
        spill = EstimateSpill(tmp_path / "test-frame.spill")
        try:
            once = read_estimates_once(spill, chunk_rows=4)
            spilled = sum(batch.num_rows for batch in spill.batches())
        finally:
            spill.remove()
    assert not spill.path.exists()
    assert spilled == len(once) == len(narrow) > 0
    key = "estimate_id"
    pd.testing.assert_frame_equal(
        once.sort_values(key).reset_index(drop=True),
        narrow.sort_values(key).reset_index(drop=True),
    )
    assert not once["rationale_ok"].all()  # the "bad" rationale was checked, not assumed


def test_a_failure_while_writing_the_estimates_leaves_nothing_behind(
    material: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataset.export as export

    def failing(*args: Any, **kwargs: Any) -> Any:
        yield 1, None
        raise RuntimeError("disk full")

    # Raised in the prefetching thread: it reaches the caller, and every file goes.
    monkeypatch.setattr(export, "_estimate_batches", failing)
    for name, fmt in (("ds", "parquet"), ("ds.xlsx", "xlsx"), ("ds.zip", "parquet")):
        with pytest.raises(RuntimeError, match="disk full"):
            dataset_export(tmp_path / name, ExportOptions(fmt=fmt))
        assert list(tmp_path.iterdir()) == []


def test_prefetched_keeps_order_raises_and_stops_its_thread() -> None:
    import threading

    from dataset.export import _prefetched

    assert list(_prefetched(iter(range(50)))) == list(range(50))

    def broken() -> Any:
        yield 1
        raise ValueError("bad batch")

    with pytest.raises(ValueError, match="bad batch"):
        list(_prefetched(broken()))

    produced: list[int] = []

    def endless() -> Any:
        n = 0
        while True:
            produced.append(n)
            yield n
            n += 1

    items = _prefetched(endless())
    assert next(items) == 0
    items.close()  # the caller stops early: the worker is told and joined
    assert not [t for t in threading.enumerate() if t.name == "export-prefetch"]
    assert len(produced) <= 4


def test_id_map_dictionaries_hold_each_text_once_and_no_null() -> None:
    from dataset.export import IdMap

    mapping = IdMap({1: "0,1,2", 2: "0,1", 3: "0,1,2", 4: None, 5: ""})
    array = mapping.dictionary(np.array([3, 1, 2, 4, 9, 1, 5, -1]))
    assert array.to_pylist() == ["0,1,2", "0,1,2", "0,1", None, None, "0,1,2", "", None]
    dictionary = array.dictionary.to_pylist()
    assert sorted(dictionary) == sorted({"0,1,2", "0,1", ""})  # once each, no null entry
    assert array.indices.null_count == 3
    empty = IdMap({}).dictionary(np.array([1, 2]))
    assert empty.to_pylist() == [None, None] and len(empty.dictionary) == 0


def test_shared_rubric_texts_stay_dictionary_encoded_in_parquet(
    material: dict[str, Any], tmp_path: Path
) -> None:
    # Ids sharing a text (instructions without a reference answer, rubrics with the same scale)
    # made a dictionary repeat it, or hold a null: Parquet then wrote the column out in full
    # (plain encoding), every row's text, instead of as a dictionary.
    dataset_export(tmp_path / "ds", ExportOptions(fmt="parquet"))
    meta = pq.ParquetFile(tmp_path / "ds" / "triples.parquet").metadata
    for group in range(meta.num_row_groups):
        columns = {
            meta.row_group(group).column(i).path_in_schema: meta.row_group(group).column(i)
            for i in range(meta.num_columns)
        }
        for name in ("scale", "rubrics", "criteria_name", "reference_answer"):
            assert "RLE_DICTIONARY" in columns[name].encodings, name


def test_excel_rows_are_the_same_whatever_the_xml_slices(
    material: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lib.xlsx

    dataset_export(tmp_path / "big.xlsx", ExportOptions(fmt="xlsx"))
    # One row per slice: the slices follow the cell text (the long answer's rows are wide).
    monkeypatch.setattr(lib.xlsx, "_XML_BYTES", 1)
    dataset_export(tmp_path / "small.xlsx", ExportOptions(fmt="xlsx"))
    with (
        zipfile.ZipFile(tmp_path / "big.xlsx") as big,
        zipfile.ZipFile(tmp_path / "small.xlsx") as small,
    ):
        titles = ["triples", "agreement", "model_criterion", "model_task"]
        book = openpyxl.load_workbook(tmp_path / "big.xlsx", read_only=True)
        for title in titles:
            member = f"xl/worksheets/sheet{book.sheetnames.index(title) + 1}.xml"
            assert big.read(member) == small.read(member), title


def test_a_triple_scored_na_by_everyone_is_not_exported(
    personas: Personas, make_answer: Callable[..., Answer], tmp_path: Path
) -> None:
    """Issue #11, item 14: POLLUX's own code reads `float(criteria_score)`; never null."""
    experts = [personas.expert_a, make_expert("na2", personas.panel_a)]
    answer = make_answer()
    na_text = "Критерий к этому ответу неприменим"
    triples = score_triples(
        answer,
        experts,
        {"repeats": [(2, GOOD), (1, GOOD)], "grammar": [(None, na_text), (None, na_text)]},
    )
    dataset_export(tmp_path / "ds", ExportOptions(fmt="parquet"))
    exported = pq.read_table(tmp_path / "ds" / "triples.parquet").to_pandas()
    assert set(exported["triple_id"]) == {triples["repeats"].pk}
    assert exported["criteria_score"].notna().all()
    [float(v) for v in exported["criteria_score"]]  # what POLLUX's evaluation code does
    aggregation_run()
    assert TripleAggregate.objects.get(triple=triples["grammar"]).excluded_reason == (
        "no_numeric_score"
    )


# ---------------------------------------------------------------------------------------------
# The kinds' parts (dataset.parts): a kind plugs its verdicts and tables into the aggregation and
# the export without either naming it.
# ---------------------------------------------------------------------------------------------


def test_a_registered_part_adds_its_verdicts_report_notes_and_table(
    material: dict[str, Any], tmp_path: Path
) -> None:
    import pyarrow as pa

    from dataset.parts import parts

    computed: list[str] = []

    class ScratchPart:
        key = "scratch-test"

        def compute(self, rules: Any) -> dict[str, int]:
            computed.append("compute")
            return {"items": 2}

        def verdict_rows(self, result: Any, job_id: int | None) -> pa.Table | None:
            return None

        def report(self, result: Any) -> dict[str, Any]:
            return {"scratch": dict(result)}

        def notes(self, result: Any) -> list[tuple[str, str]]:
            return [("Sheet scratch", "two rows of a scratch kind")]

        def write(self, sink: Any, result: Any, *, fmt: str, chunk_rows: int) -> None:
            schema = pa.schema([("n", pa.int64())])
            batch = pa.record_batch([pa.array(range(result["items"]), pa.int64())], schema=schema)
            sink.write_table("scratch", schema, iter([batch]))

    parts.register(ScratchPart(), key="scratch-test")
    try:
        assert aggregation_run()["scratch"] == {"items": 2}
        assert computed == ["compute"]
        report = dataset_export(tmp_path / "ds", ExportOptions(fmt="parquet"))
        assert report["scratch"] == {"items": 2} and report["rows"]["scratch"] == 2
        assert pq.read_table(tmp_path / "ds" / "scratch.parquet").column("n").to_pylist() == [0, 1]
        dataset_export(tmp_path / "ds.xlsx", ExportOptions(fmt="xlsx"))
        book = openpyxl.load_workbook(tmp_path / "ds.xlsx", read_only=True)
        assert [r[0] for r in book["scratch"].iter_rows(values_only=True)] == ["n", 0, 1]
        notes = [r[0] for r in book[book.sheetnames[0]].iter_rows(values_only=True)]
        assert "Sheet scratch" in notes
    finally:
        parts.pop("scratch-test")
