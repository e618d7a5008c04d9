"""Conformance: a workbook written by lib.xlsx opens in LibreOffice with the values openpyxl
reads (see tests/lib/libreoffice.py). A missing soffice fails this test: CI installs it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from lib.xlsx import XlsxWriter
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
TEXTS = [
    "=1+1",
    "+7 (495) 000-00-00",
    "-3",
    "@SUM(A1:A2)",
    '=HYPERLINK("http://example.com")',
    "ok & <b>не формула</b>",
    " leading and trailing ",
    "bell\x07 removed",
    "_x0041_ stays literal",
    "строка\nс переводом",
    "Ёжик 🦔",
    "",
    None,
    "я" * 20_000 + "🦔" * 10_000,  # cut at the cell limit
]


def _workbook(path: Path) -> None:
    k = len(TEXTS)
    rows = 2 * k
    batch = pa.record_batch(
        [
            pa.array([i if i % 5 else None for i in range(rows)], pa.int64()),
            pa.array([[0.5, float("nan"), -1e-9, 12345.678][i % 4] for i in range(rows)]),
            pa.array([[True, False, None][i % 3] for i in range(rows)]),
            pa.array(
                [datetime(2026, 11, 26, 12, 0, i, tzinfo=UTC) for i in range(rows)],
                pa.timestamp("us", tz="UTC"),
            ),
            pa.array([TEXTS[i % k] for i in range(rows)]),
            pa.DictionaryArray.from_arrays(
                pa.array([i % 3 for i in range(rows)], pa.int32()),
                pa.array(["=A1", "answer ✓", None]),
            ),
        ],
        schema=SCHEMA,
    )
    writer = XlsxWriter(path, max_rows=rows)  # the last row continues on "data (2)"
    writer.write_notes([("=key", "-value"), ("Notes", "Заметки")])
    writer.write_table("data", SCHEMA, iter([batch]))
    writer.close()


def test_libreoffice_reads_the_values_openpyxl_reads(tmp_path: Path) -> None:
    source = tmp_path / "book.xlsx"
    _workbook(source)
    theirs = assert_libreoffice_reads_as_openpyxl(source, tmp_path)
    assert list(theirs) == ["README", "data", "data (2)"]
    # Formula-looking text is text in LibreOffice too, not a formula's result.
    assert theirs["data"][1][4] == "=1+1" and theirs["README"][0] == ["=key", "-value"]
    assert theirs["data"][1][5] == "=A1"
