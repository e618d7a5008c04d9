"""LibreOffice as a second reader of the workbooks we write (conformance tests).

LibreOffice (Debian's libreoffice-calc-nogui; .ci/run installs it) converts a workbook to a new
.xlsx of its own writing; both are read with openpyxl (data_only: the values LibreOffice
computed, so a text it had taken for a formula would show its result) and compared cell by cell.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import openpyxl


def libreoffice_convert(source: Path, workdir: Path) -> Path:
    """The workbook as LibreOffice rewrites it (headless, with a profile of its own)."""
    soffice = shutil.which("soffice")
    assert soffice, "LibreOffice is missing: apt-get install libreoffice-calc-nogui"
    out = workdir / "libreoffice"
    result = subprocess.run(
        [
            soffice,
            f"-env:UserInstallation={(workdir / 'lo-profile').as_uri()}",  # no shared profile
            "--headless",
            "--convert-to",
            "xlsx",
            "--outdir",
            str(out),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    converted = out / source.name
    assert converted.exists(), result.stdout + result.stderr
    return converted


def _values(path: Path) -> dict[str, list[list[Any]]]:
    book = openpyxl.load_workbook(path, data_only=True)
    return {
        sheet.title: [[cell.value for cell in row] for row in sheet.iter_rows()] for sheet in book
    }


def _unescape(value: Any) -> Any:
    """openpyxl leaves Excel's `_x005F_` escape in inline strings; Excel reads it as "_".
    An empty text cell is an empty cell to LibreOffice (it keeps no empty string)."""
    if isinstance(value, str):
        return re.sub(r"_x005F_(x[0-9A-Fa-f]{4}_)", r"_\1", value) or None
    return value


def _same(ours: Any, theirs: Any) -> bool:
    """Equal values; LibreOffice keeps 15 significant digits of a double (17 are written)."""
    if isinstance(ours, float) and isinstance(theirs, float | int):
        return math.isclose(ours, theirs, rel_tol=1e-14)
    return bool(ours == theirs and type(ours) is type(theirs))


def assert_libreoffice_reads_as_openpyxl(source: Path, workdir: Path) -> dict[str, list[list[Any]]]:
    """Every sheet's values as LibreOffice reads them equal openpyxl's reading; returns them."""
    ours = _values(source)
    theirs = _values(libreoffice_convert(source, workdir))
    assert list(theirs) == list(ours)
    for title, rows in ours.items():
        expected = [[_unescape(v) for v in row] for row in rows]
        # LibreOffice leaves no trailing empty cells; openpyxl's grid of ours pads to the width.
        assert len(theirs[title]) == len(expected), title
        for r, (mine, lo) in enumerate(zip(expected, theirs[title], strict=True), start=1):
            lo = lo + [None] * (len(mine) - len(lo))
            differ = [
                (c, m, t) for c, (m, t) in enumerate(zip(mine, lo, strict=True)) if not _same(m, t)
            ]
            assert not differ, f"{title} row {r}: (column, ours, LibreOffice's) {differ}"
    return theirs
