"""open_table: every file and workbook it opens is closed when its block is left, however it is
left (the end of the block, an exception from the block, too many errors, a file refused after
it was opened)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from material.import_common import Errors, TooManyErrors
from material.readers import open_table

FORMATS = ["csv", "jsonl", "xlsx", "parquet"]
MAX_BYTES = 10_000_000
ROWS = [{"instruction": f"Вопрос {i}", "answer": f"Ответ {i}"} for i in range(3)]


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def write(fmt: str, directory: Path, columns: list[str], rows: list[list[str]]) -> Path:
    """The rows as a file of the format; every cell is text."""
    path = directory / f"data.{fmt}"
    if fmt == "csv":
        lines = [",".join(columns), *(",".join(row) for row in rows)]
        path.write_text("\n".join(lines) + "\n", "utf-8")
    elif fmt == "jsonl":
        objects = (dict(zip(columns, row, strict=True)) for row in rows)
        path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects))
    elif fmt == "xlsx":
        workbook = openpyxl.Workbook()
        sheet = workbook.active
        assert sheet is not None
        sheet.append(columns)
        for row in rows:
            sheet.append(row)
        workbook.save(path)
    else:
        arrays = [pa.array([row[i] for row in rows], pa.string()) for i in range(len(columns))]
        pq.write_table(pa.table(arrays, names=columns), path)
    return path


def good_file(fmt: str, directory: Path) -> Path:
    return write(fmt, directory, list(ROWS[0]), [list(row.values()) for row in ROWS])


def read_once(fmt: str, directory: Path) -> None:
    """Open and read a good file of the format once, so what is loaded on first use
    (translations, openpyxl's and pyarrow's modules) is loaded before descriptors are
    counted."""
    (directory / "warm").mkdir()
    with open_table(good_file(fmt, directory / "warm"), None, MAX_BYTES, Errors(10)) as table:
        assert table is not None
        list(table.rows)


@pytest.mark.parametrize("fmt", FORMATS)
def test_open_table_closes_its_file_when_the_block_ends(fmt: str, tmp_path: Path) -> None:
    path = good_file(fmt, tmp_path)
    read_once(fmt, tmp_path)
    before = open_descriptors()
    errors = Errors(limit=10)
    with open_table(path, None, MAX_BYTES, errors) as table:
        assert table is not None
        first = next(table.rows)
        assert open_descriptors() > before  # the file is open while its rows are read
    assert first[1]["instruction"] == "Вопрос 0"
    assert not errors
    assert open_descriptors() == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_open_table_closes_its_file_when_the_block_raises(fmt: str, tmp_path: Path) -> None:
    path = good_file(fmt, tmp_path)
    read_once(fmt, tmp_path)
    before = open_descriptors()
    with (
        pytest.raises(RuntimeError, match="the caller failed"),
        open_table(path, None, MAX_BYTES, Errors(limit=10)) as table,
    ):
        assert table is not None
        next(table.rows)
        raise RuntimeError("the caller failed")
    assert open_descriptors() == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_open_table_closes_its_file_on_too_many_errors(fmt: str, tmp_path: Path) -> None:
    # A number where text is expected (a JSON line's, a workbook's cell, a Parquet column's
    # type) or a row longer than the header (CSV): two errors, the second one past the limit,
    # raised while the rows are read (Parquet: while its file is opened).
    path = tmp_path / f"data.{fmt}"
    if fmt == "csv":
        path.write_text("instruction,answer\na,b,c\nd,e,f\n", "utf-8")
    elif fmt == "jsonl":
        path.write_text('{"instruction": 1, "answer": "a"}\n{"instruction": 2, "answer": "b"}\n')
    elif fmt == "xlsx":
        workbook = openpyxl.Workbook()
        sheet = workbook.active
        assert sheet is not None
        for row in (["instruction", "answer"], [1, "a"], [2, "b"]):
            sheet.append(row)
        workbook.save(path)
    else:
        pq.write_table(pa.table({"instruction": [1], "answer": [2]}), path)
    read_once(fmt, tmp_path)
    before = open_descriptors()
    errors = Errors(limit=1)
    with pytest.raises(TooManyErrors), open_table(path, None, MAX_BYTES, errors) as table:
        assert table is not None
        list(table.rows)
    assert errors.truncated and len(errors.items) == 1
    assert open_descriptors() == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_open_table_closes_a_file_it_refuses_after_opening(fmt: str, tmp_path: Path) -> None:
    # A column twice is found once the header is read, the file being open.
    path = write(fmt, tmp_path, ["instruction", "Instruction "], [["a", "b"]])
    if fmt == "jsonl":
        # JSON lines have no header: a key twice is one column; a line that is not an object
        # is refused after the file is opened instead.
        path.write_text('["instruction", "answer"]\n')
    read_once(fmt, tmp_path)
    before = open_descriptors()
    errors = Errors(limit=10)
    with open_table(path, None, MAX_BYTES, errors) as table:
        assert table is None
    assert [e.code for e in errors.items] == ["bad_json" if fmt == "jsonl" else "bad_header"], (
        errors.items
    )
    assert open_descriptors() == before


def test_open_table_refuses_before_opening(tmp_path: Path) -> None:
    errors = Errors(limit=10)
    path = tmp_path / "data.txt"
    path.write_bytes(b"instruction\n")
    with open_table(path, None, MAX_BYTES, errors) as table:
        assert table is None
    big = good_file("csv", tmp_path)
    with open_table(big, None, 10, errors) as table:
        assert table is None
    assert [e.code for e in errors.items] == ["bad_format", "too_large"]


def test_an_xlsx_read_into_memory_is_closed(tmp_path: Path) -> None:
    # read_table (the exam references) reads through the same openers.
    from material.readers import read_table

    buffer = io.BytesIO()
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["answer", "score"])
    sheet.append(["7", "2"])
    workbook.save(buffer)
    read_table(buffer.getvalue(), "r.xlsx", MAX_BYTES)
    before = open_descriptors()
    assert read_table(buffer.getvalue(), "r.xlsx", MAX_BYTES) == [{"answer": "7", "score": "2"}]
    assert open_descriptors() == before
