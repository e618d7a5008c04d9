"""lib.xlsx: what the writer puts in a workbook is what openpyxl reads back, and LibreOffice
reads the same (conformance; a missing soffice fails that test: CI installs it)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import openpyxl
import pandas as pd
import pyarrow as pa
import pytest

import lib.xlsx
from lib.xlsx import EXCEL_MAX_CHARS, TRUNCATION_MARKER, XlsxWriter, clean_cell
from tests.lib.libreoffice import assert_libreoffice_reads_as_openpyxl

SCHEMA = pa.schema(
    [
        ("n", pa.int64()),
        ("x", pa.float64()),
        ("flag", pa.bool_()),
        ("at", pa.timestamp("us", tz="UTC")),
        ("text", pa.string()),
        ("repeated", pa.dictionary(pa.int32(), pa.string())),
    ]
)
LONG = "я" * 20_000 + "🦔" * 10_000  # 40,000 UTF-16 units: over Excel's cell limit
TEXTS = [
    "=1+1",  # formula-looking texts: stay text, quote-prefixed
    "+7 (495) 000-00-00",
    "-3",
    "@SUM(A1:A2)",
    "\tTabbed",
    "ok & <b>не формула</b> = 1",
    " leading and trailing ",
    "bell\x07 and nul\x00 removed",
    "_x0041_ stays literal",
    "строка\nс переводом",
    "",
    None,
    LONG,
]
REPEATED = ['=HYPERLINK("http://x")', "answer ✓", None, "_x0041_ shared"]


def _batch(rows: int, first: int = 0) -> pa.RecordBatch:
    k = len(TEXTS)
    return pa.record_batch(
        [
            pa.array([first + i if i % 5 else None for i in range(rows)], pa.int64()),
            pa.array([[0.5, float("nan"), float("inf"), -1e-9][i % 4] for i in range(rows)]),
            pa.array([[True, False, None][i % 3] for i in range(rows)]),
            pa.array(
                [datetime(2026, 11, 26, 12, 0, i % 60, tzinfo=UTC) for i in range(rows)],
                pa.timestamp("us", tz="UTC"),
            ),
            pa.array([TEXTS[i % k] for i in range(rows)], pa.string()),
            pa.DictionaryArray.from_arrays(
                pa.array([i % len(REPEATED) for i in range(rows)], pa.int32()),
                pa.array(REPEATED),
            ),
        ],
        schema=SCHEMA,
    )


def _expected_cell(column: str, value: Any) -> Any:
    """What openpyxl must read in a cell: numbers as numbers (non-finite: empty), booleans,
    timestamps as ISO text, texts cleaned (control characters out, cut with the marker).

    A literal `_xHHHH_` in a text is written escaped as `_x005F_xHHHH_` (Excel and LibreOffice
    read it back as written; test_xlsx_libreoffice.py checks that); openpyxl does not undo that
    escape in inline strings, so its reading keeps it; the dictionary column is written to the
    shared strings, where openpyxl undoes it."""
    if value is None:
        return None
    if (column == "x" and value != value) or value in (float("inf"), float("-inf")):
        return None
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S.%f%z")
    if isinstance(value, str) and column == "repeated":
        return clean_cell(value)
    if isinstance(value, str):
        return re.sub(r"_(x[0-9A-Fa-f]{4}_)", r"_x005F_\1", clean_cell(value))
    return value


def _sheet_values(path: Path, title: str) -> list[list[Any]]:
    book = openpyxl.load_workbook(path)
    return [[c.value for c in row] for row in book[title].iter_rows()]


def test_cells_read_back_as_written(tmp_path: Path) -> None:
    path = tmp_path / "book.xlsx"
    writer = XlsxWriter(path)
    batches = [_batch(30), _batch(7, first=30)]
    writer.write_table("data", SCHEMA, iter(batches))
    writer.close()
    assert writer.rows == {"data": 37} and writer.sheets == {"data": ["data"]}
    rows = _sheet_values(path, "data")
    assert rows[0] == SCHEMA.names
    table = pa.Table.from_batches(batches).to_pylist()
    expected = [[_expected_cell(c, row[c]) for c in SCHEMA.names] for row in table]
    assert rows[1:] == expected


def test_formula_looking_text_is_neutralised(tmp_path: Path) -> None:
    path = tmp_path / "book.xlsx"
    writer = XlsxWriter(path)
    writer.write_notes([("=key", "=1+1"), ("plain", "text")], title="Notes")
    writer.write_table("data", SCHEMA, iter([_batch(len(TEXTS))]))
    writer.close()
    book = openpyxl.load_workbook(path)
    for sheet in book:
        for row in sheet.iter_rows():
            for cell in row:
                if isinstance(cell.value, str):
                    assert cell.data_type == "s"  # never a formula
                    formula_like = cell.value[:1] in ("=", "+", "-", "@", "\t", "\r")
                    assert cell.quotePrefix == formula_like, cell.value
    notes = book["Notes"]
    assert [[c.value for c in row] for row in notes.iter_rows()] == [
        ["=key", "=1+1"],
        ["plain", "text"],
    ]
    assert notes["A1"].font.b and notes["A2"].font.b and not notes["B1"].font.b


def test_text_over_the_cell_limit_is_cut_with_a_marker(tmp_path: Path) -> None:
    cut = clean_cell(LONG)
    assert cut.endswith(TRUNCATION_MARKER)
    assert len(cut.encode("utf-16-le")) // 2 <= EXCEL_MAX_CHARS
    assert clean_cell("short\x01") == "short"
    path = tmp_path / "book.xlsx"
    writer = XlsxWriter(path)
    writer.write_table("data", SCHEMA, iter([_batch(len(TEXTS))]))
    writer.close()
    assert _sheet_values(path, "data")[TEXTS.index(LONG) + 1][4] == cut


def test_a_table_over_the_row_limit_continues_on_numbered_sheets(tmp_path: Path) -> None:
    path = tmp_path / "book.xlsx"
    writer = XlsxWriter(path, max_rows=4)  # the header and three rows per sheet
    writer.write_table("data", SCHEMA, iter([_batch(5), _batch(3, first=5)]))
    writer.write_frame("small", pd.DataFrame({"a": [1, 2], "b": ["x", "=y"]}))
    writer.close()
    assert writer.sheets == {"data": ["data", "data (2)", "data (3)"], "small": ["small"]}
    assert writer.rows == {"data": 8, "small": 2}
    book = openpyxl.load_workbook(path)
    assert book.sheetnames == ["data", "data (2)", "data (3)", "small"]
    parts = [_sheet_values(path, title) for title in writer.sheets["data"]]
    assert [len(p) for p in parts] == [4, 4, 3]
    assert all(p[0] == SCHEMA.names for p in parts)
    assert [row[0] for p in parts for row in p[1:]] == [None, 1, 2, 3, 4, None, 6, 7]
    assert _sheet_values(path, "small") == [["a", "b"], [1, "x"], [2, "=y"]]


def test_an_empty_table_is_a_sheet_with_its_header(tmp_path: Path) -> None:
    path = tmp_path / "book.xlsx"
    writer = XlsxWriter(path)
    writer.write_table("empty", SCHEMA, iter([]))
    writer.close()
    assert _sheet_values(path, "empty") == [SCHEMA.names]


@pytest.mark.parametrize("xml_bytes", [1, 200, 4 << 20])
def test_rows_are_the_same_whatever_the_xml_slices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, xml_bytes: int
) -> None:
    monkeypatch.setattr(lib.xlsx, "_XML_BYTES", xml_bytes)
    path = tmp_path / "book.xlsx"
    writer = XlsxWriter(path)
    writer.write_table("data", SCHEMA, iter([_batch(40)]))
    writer.close()
    table = _batch(40).to_pylist()
    assert _sheet_values(path, "data")[1:] == [
        [_expected_cell(c, row[c]) for c in SCHEMA.names] for row in table
    ]


def test_xml_slices_cover_the_rows_within_both_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lib.xlsx, "_XML_ROWS", 4)
    monkeypatch.setattr(lib.xlsx, "_XML_BYTES", 10)
    texts = pa.array(["a" * 3, "b" * 12, None, "c"])
    indices = pa.array([0, 0, 0, 1, 2, 3, 3, 3, 3, 3, 3, 0], pa.int32())
    plain = pa.array(["x"] * 12)
    slices = list(lib.xlsx._xml_slices([(texts, indices), (plain, None)], 12))
    # Cell text per row: 4, 4, 4, 13 (over the bound alone), 1, 2, 2, 2, 2, 2, 2, 4.
    assert slices == [(0, 2), (2, 1), (3, 1), (4, 4), (8, 4)]
    sizes = [4, 4, 4, 13, 1, 2, 2, 2, 2, 2, 2, 4]
    for start, n in slices:
        assert n <= 4 and (n == 1 or sum(sizes[start : start + n]) <= 10)


def test_libreoffice_reads_the_values_openpyxl_reads(tmp_path: Path) -> None:
    source = tmp_path / "book.xlsx"
    rows = 2 * len(TEXTS)
    writer = XlsxWriter(source, max_rows=rows)  # the last row continues on "data (2)"
    writer.write_notes([("=key", "-value"), ("Notes", "Заметки")])
    writer.write_table("data", SCHEMA, iter([_batch(rows)]))
    writer.close()
    theirs = assert_libreoffice_reads_as_openpyxl(source, tmp_path)
    assert list(theirs) == ["README", "data", "data (2)"]
    # Formula-looking text is text in LibreOffice too, not a formula's result.
    assert theirs["README"][0] == ["=key", "-value"]
    assert theirs["data"][1][4:] == ["=1+1", '=HYPERLINK("http://x")']


def test_a_repeated_text_is_stored_once_in_the_shared_strings(tmp_path: Path) -> None:
    """Dictionary columns (the export's long texts) go to the shared-string table: each distinct
    text once across batches, columns and sheet parts, the cells referring to it (issue #17)."""
    import zipfile

    distinct = ["ответ модели " * 300, "_x0041_ stays literal", "=1+1", "bell\x07", LONG]
    schema = pa.schema([("a", pa.dictionary(pa.int32(), pa.string())), ("b", pa.string())])

    def batch(order: list[int], rows: int) -> pa.RecordBatch:
        values = pa.array([distinct[i] for i in order])
        codes = pa.array([i % len(order) for i in range(rows)], pa.int32())
        plain = pa.array([distinct[order[i % len(order)]] for i in range(rows)])
        return pa.record_batch([pa.DictionaryArray.from_arrays(codes, values), plain], schema)

    batches = [batch([0, 1, 2, 3, 4], 60), batch([4, 3, 2, 1, 0], 45)]
    path = tmp_path / "book.xlsx"
    writer = XlsxWriter(path, max_rows=71)  # the second batch continues on "data (2)"
    writer.write_table("data", schema, iter(batches))
    writer.close()
    with zipfile.ZipFile(path) as archive:
        sst = archive.read("xl/sharedStrings.xml").decode()
        sheets = [archive.read(n).decode() for n in archive.namelist() if "worksheets/" in n]
    assert sst.count("<si>") == len(distinct)
    assert f'uniqueCount="{len(distinct)}"' in sst and 'count="105"' in sst
    assert sum(sheet.count('t="s"') for sheet in sheets) == 105
    # Column A (shared) holds indices only; the text is written inline in column B alone.
    a_cells = re.findall(r'<c r="A(\d+)"([^>]*)>', "".join(sheets))
    assert all('t="s"' in attrs for row, attrs in a_cells if row != "1")
    inline = "".join(sheets).count(distinct[0])
    assert inline == sum(
        1 for v in pa.Table.from_batches(batches)["b"].to_pylist() if v == distinct[0]
    )
    # Read back: the shared column equals the inline one, cell by cell, in both sheet parts.
    rows = _sheet_values(path, "data")[1:] + _sheet_values(path, "data (2)")[1:]
    assert len(rows) == 105
    expected = [_expected_cell("b", v) for v in pa.Table.from_batches(batches)["b"].to_pylist()]
    assert [r[1] for r in rows] == expected
    # openpyxl undoes Excel's _x005F_ escape in shared strings (not in inline ones, see
    # _expected_cell): the shared column reads back as the cleaned text itself.
    originals = pa.Table.from_batches(batches)["a"].to_pylist()
    assert [r[0] for r in rows] == [clean_cell(v) for v in originals]
    # Formula-looking shared text keeps the quote prefix on its cell.
    book = openpyxl.load_workbook(path)
    quoted = [c.quotePrefix for c in book["data"]["A"][1:] if c.value == "=1+1"]
    assert quoted and all(quoted)
