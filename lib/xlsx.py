"""An .xlsx workbook written sheet by sheet as SpreadsheetML by Arrow compute kernels.

`XlsxWriter(path)`: `write_table(name, schema, batches)` streams record batches into a sheet
(continued on "name (2)", "name (3)"... past Excel's row limit), `write_frame(name, frame)`
writes a pandas frame, `write_notes(lines)` a two-column sheet of (key, text), `close()`
finishes the workbook. `clean_cell` is the rule every text cell follows.

Why not xlsxwriter: its pure-Python cell calls run at ~200,000 cells/s, and a dataset of
~15 million cells spends over a minute in calls alone. Here each batch becomes its sheet XML
in a handful of vectorised Arrow string kernels (escape, concatenate), and the bytes go
straight into a streamed zip member: no Python work per cell or row, memory bounded by one
batch. One sheet is streamed after the other.

Strings: a dictionary-encoded column (the export's long texts — instruction, reference and
answer, each answer on ~15 triple rows — and its repeated ids and names) goes into the
workbook's shared-string table, each distinct text once, the cells referring to it by index; a
plain string column is written inline. Written inline, the POLLUX export repeated every answer
on each of its rows (226 MB, 1.66 GB of sheet XML; issue #17). The table's entries wait in a
temporary file until `close()` (a zip takes one member at a time); the index is keyed by a
128-bit digest of the text, so its memory does not grow with the texts' length.

Text cells: control characters removed, cut at Excel's 32,767-character limit with a marker,
and always strings, inline or shared (never a formula); text starting with = + - @ (or a tab or
carriage return) also gets Excel's quote prefix so that editing the cell does not turn it into a
formula.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

EXCEL_MAX_ROWS = 1_048_576  # rows per sheet, the header included
EXCEL_MAX_CHARS = 32_767  # characters per cell (UTF-16 units)
TRUNCATION_MARKER = " […truncated]"
_CONTROL_RE = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
_FORMULA_START_RE = r"^[=+\-@\t\r]"


class XlsxWriter:
    """Sheets of an .xlsx workbook, one streamed after the other (see the module doc).

    `rows` counts the rows written per table, `sheets` lists the sheet titles of each table.
    """

    def __init__(self, path: Path, *, max_rows: int = EXCEL_MAX_ROWS) -> None:
        # Level 1: the sheets are hundreds of MB of repetitive XML; higher levels cost several
        # times the CPU for a few percent smaller files.
        self.archive = zipfile.ZipFile(
            path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1, allowZip64=True
        )
        self.max_rows = max_rows
        self.rows: dict[str, int] = {}
        self.sheets: dict[str, list[str]] = {}
        self._titles: list[str] = []
        self._shared = SharedStrings()

    def _open_sheet(self, title: str, cols: str = "") -> Any:
        self._titles.append(title[:31])
        stream = self.archive.open(
            f"xl/worksheets/sheet{len(self._titles)}.xml", "w", force_zip64=True
        )
        stream.write((_SHEET_HEAD + cols + "<sheetData>").encode())
        return stream

    @staticmethod
    def _close_sheet(stream: Any) -> None:
        stream.write(b"</sheetData></worksheet>")
        stream.close()

    def _new_sheet(self, name: str, part: int, header: list[str]) -> Any:
        title = name if part == 1 else f"{name} ({part})"
        stream = self._open_sheet(title)
        cells = "".join(
            _text_cell(f"{_col_letter(c)}1", head, bold=True) for c, head in enumerate(header)
        )
        stream.write(f'<row r="1">{cells}</row>'.encode())
        self.sheets.setdefault(name, []).append(title[:31])
        return stream

    def write_table(self, name: str, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> None:
        header = list(schema.names)
        part = 1
        sheet = self._new_sheet(name, part, header)
        row = 1
        total = 0
        try:
            for batch in batches:
                offset = 0
                while offset < batch.num_rows:
                    room = self.max_rows - row
                    if room <= 0:
                        self._close_sheet(sheet)
                        part += 1
                        sheet = self._new_sheet(name, part, header)
                        row = 1
                        room = self.max_rows - 1
                    piece = batch.slice(offset, room)
                    _batch_xml(sheet, piece, row, self._shared)
                    row += piece.num_rows
                    offset += piece.num_rows
                    total += piece.num_rows
                # The batch's XML is written: its buffers go back to the system now, or Arrow's
                # allocator keeps them and each batch's peak stacks on the last one's.
                pa.default_memory_pool().release_unused()
        finally:
            self._close_sheet(sheet)
        self.rows[name] = total

    def write_frame(self, name: str, frame: pd.DataFrame) -> None:
        table = pa.Table.from_pandas(frame, preserve_index=False)
        self.write_table(name, table.schema, iter(table.to_batches(max_chunksize=50_000)))

    def write_notes(self, lines: list[tuple[str, str]], title: str = "README") -> None:
        """A sheet of (key, text) rows: keys bold, both columns wide."""
        stream = self._open_sheet(
            title,
            '<cols><col min="1" max="1" width="28" customWidth="1"/>'
            '<col min="2" max="2" width="100" customWidth="1"/></cols>',
        )
        for row, (key, text) in enumerate(lines, start=1):
            cells = _text_cell(f"A{row}", key, bold=True) + _text_cell(f"B{row}", text)
            stream.write(f'<row r="{row}">{cells}</row>'.encode())
        self._close_sheet(stream)

    def close(self) -> None:
        titles = self._titles
        shared = self._shared
        sheets = "".join(
            f'<sheet name="{_xml_attr(t)}" sheetId="{i}" r:id="rId{i}"/>'
            for i, t in enumerate(titles, start=1)
        )
        parts = {
            "[Content_Types].xml": _CONTENT_TYPES.format(
                sheets="".join(
                    f'<Override PartName="/xl/worksheets/sheet{i}.xml" ContentType="{_CT_SHEET}"/>'
                    for i in range(1, len(titles) + 1)
                )
                + (_CT_SHARED_OVERRIDE if shared.unique else "")
            ),
            "_rels/.rels": _ROOT_RELS,
            "xl/workbook.xml": _WORKBOOK.format(sheets=sheets),
            "xl/_rels/workbook.xml.rels": _WORKBOOK_RELS.format(
                sheets="".join(
                    f'<Relationship Id="rId{i}" Type="{_REL_SHEET}" '
                    f'Target="worksheets/sheet{i}.xml"/>'
                    for i in range(1, len(titles) + 1)
                ),
                styles=len(titles) + 1,
                shared=(
                    f'<Relationship Id="rId{len(titles) + 2}" Type="{_REL_SHARED}" '
                    'Target="sharedStrings.xml"/>'
                    if shared.unique
                    else ""
                ),
            ),
            "xl/styles.xml": _STYLES,
        }
        try:
            for name, text in parts.items():
                self.archive.writestr(name, text.encode())
            if shared.unique:
                shared.write_part(self.archive)
        finally:
            shared.discard()
            self.archive.close()


class SharedStrings:
    """The workbook's shared-string table, filled batch by batch (see the module doc)."""

    def __init__(self) -> None:
        self._index: dict[bytes, int] = {}
        self._items: Any = None  # a temporary file of <si> elements, opened on first use
        self.unique = 0
        self.count = 0

    def indices(self, values: pa.Array) -> pa.Array:
        """The table index of each (cleaned) text of `values`, adding the new ones; null stays
        null. `values` is a dictionary's distinct values, so the Python loop runs per distinct
        text of a batch, never per cell."""
        out: list[int | None] = []
        new: list[int] = []
        for pos, text in enumerate(values.to_pylist()):
            if text is None:
                out.append(None)
                continue
            key = hashlib.blake2b(text.encode(), digest_size=16).digest()
            index = self._index.get(key)
            if index is None:
                index = self._index[key] = self.unique
                self.unique += 1
                new.append(pos)
            out.append(index)
        if new:
            body = _xml_text_array(pc.take(values, pa.array(new)))
            if self._items is None:
                self._items = tempfile.TemporaryFile()  # noqa: SIM115 (closed by discard)
            _write_xml(self._items, _join("<si>", body, "</si>"))
        return pa.array(out, pa.int64())

    def write_part(self, archive: zipfile.ZipFile) -> None:
        head = (
            f'{_XML_DECL}<sst xmlns="{_NS_MAIN}" count="{self.count}" uniqueCount="{self.unique}">'
        )
        with archive.open("xl/sharedStrings.xml", "w", force_zip64=True) as part:
            part.write(head.encode())
            self._items.seek(0)
            shutil.copyfileobj(self._items, part, 1 << 20)
            part.write(b"</sst>")

    def discard(self) -> None:
        if self._items is not None:
            self._items.close()
            self._items = None


# SpreadsheetML boilerplate: the minimal parts Excel, LibreOffice and openpyxl need.
_NS_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_NS_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_XML_DECL = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_SHEET_HEAD = f'{_XML_DECL}<worksheet xmlns="{_NS_MAIN}" xmlns:r="{_NS_REL}">'
_CT_SHEET = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
_REL_SHEET = f"{_NS_REL}/worksheet"
_REL_SHARED = f"{_NS_REL}/sharedStrings"
_CT_SHARED_OVERRIDE = (
    '<Override PartName="/xl/sharedStrings.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
)
_CONTENT_TYPES = (
    _XML_DECL + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" '
    'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/styles.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
    "{sheets}</Types>"
)
_ROOT_RELS = (
    _XML_DECL
    + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    f'<Relationship Id="rId1" Type="{_NS_REL}/officeDocument" Target="xl/workbook.xml"/>'
    "</Relationships>"
)
_WORKBOOK = (
    _XML_DECL
    + f'<workbook xmlns="{_NS_MAIN}" xmlns:r="{_NS_REL}"><sheets>{{sheets}}</sheets></workbook>'
)
_WORKBOOK_RELS = (
    _XML_DECL
    + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    "{sheets}"
    f'<Relationship Id="rId{{styles}}" Type="{_NS_REL}/styles" Target="styles.xml"/>'
    "{shared}</Relationships>"
)
# Cell formats: 0 default, 1 bold (headers, note keys), 2 quote prefix (text that starts like a
# formula stays text when the cell is edited), 3 both.
_XF_BOLD = 1
_XF_QUOTED = 2
_XF_BOLD_QUOTED = 3
_STYLES = (
    _XML_DECL + f'<styleSheet xmlns="{_NS_MAIN}">'
    '<fonts count="2"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font>'
    '<font><b/><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>'
    '<fills count="2"><fill><patternFill patternType="none"/></fill>'
    '<fill><patternFill patternType="gray125"/></fill></fills>'
    '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
    '<cellXfs count="4"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
    '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/>'
    '<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0" quotePrefix="1"/>'
    '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1" quotePrefix="1"/>'
    "</cellXfs>"
    '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
    "</styleSheet>"
)
# Rows turned into XML at once, at most, and the cell text they may carry (see `_xml_slices`):
# these bound the memory of the string kernels.
_XML_ROWS = 5_000
_XML_BYTES = 4 << 20


def _col_letter(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        letters = chr(65 + rem) + letters
    return letters


def _xml_attr(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def _text_cell(ref: str, text: str, *, bold: bool = False) -> str:
    """One inline-string cell written from Python (headers, notes): the same cleaning, escaping
    and quote prefix as the vectorised cells."""
    text = clean_cell(text)
    quoted = re.match(_FORMULA_START_RE, text) is not None
    style = (_XF_BOLD_QUOTED if quoted else _XF_BOLD) if bold else (_XF_QUOTED if quoted else 0)
    return f'<c r="{ref}" t="inlineStr" s="{style}"><is>{_xml_text(text)}</is></c>'


def _xml_text(text: str) -> str:
    """An <is> body for one (already cleaned) string, the same escaping as `_xml_text_array`."""
    text = re.sub(_EXCEL_ESCAPE_RE, r"_x005F_\1", text)
    text = re.sub(_XML_INVALID_RE, "", text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    space = ' xml:space="preserve"' if re.search(r"^\s|\s$", text) else ""
    return f"<t{space}>{text}</t>"


# Excel reads _xHHHH_ in a string as an escaped character: a literal one is escaped as _x005F_.
_EXCEL_ESCAPE_RE = r"_(x[0-9A-Fa-f]{4}_)"
# Characters XML 1.0 forbids that survive the control-character removal.
_XML_INVALID_RE = "[\ufffe\uffff]"
_STR = pa.string()


def _join(*parts: Any) -> pa.Array:
    """Element-wise concatenation of string arrays and literals (null in, null out)."""
    args = [pa.scalar(p, _STR) if isinstance(p, str) else p for p in parts]
    return pc.binary_join_element_wise(*args, pa.scalar("", _STR))


def _xml_text_array(array: pa.Array) -> pa.Array:
    """Cleaned text -> the XML of its <t> element (an <is> or <si> body), vectorised."""
    text = pc.replace_substring_regex(array, _EXCEL_ESCAPE_RE, r"_x005F_\1")
    text = pc.replace_substring_regex(text, _XML_INVALID_RE, "")
    text = pc.replace_substring(text, "&", "&amp;")
    text = pc.replace_substring(text, "<", "&lt;")
    text = pc.replace_substring(text, ">", "&gt;")
    space = pc.fill_null(pc.match_substring_regex(text, r"^\s|\s$"), False)
    open_t = pc.if_else(space, pa.scalar('<t xml:space="preserve">'), pa.scalar("<t>"))
    return _join(open_t, text, "</t>")


def _quote_style(text: pa.Array) -> pa.Array:
    """The style attribute of each (cleaned) text cell: the quote prefix where the text starts
    like a formula, nothing otherwise."""
    flags = pc.fill_null(pc.match_substring_regex(text, _FORMULA_START_RE), False)
    return pc.if_else(flags, pa.scalar(f' s="{_XF_QUOTED}"'), pa.scalar(""))


def _clean_text_array(array: pa.Array) -> pa.Array:
    """Control characters out (vectorised); the rare cells over Excel's limit cut in Python."""
    array = pc.replace_substring_regex(array.cast(_STR), _CONTROL_RE, "")
    long = pc.fill_null(pc.greater(pc.utf8_length(array), EXCEL_MAX_CHARS // 2), False)
    if pc.any(long).as_py():
        idx = np.flatnonzero(np.asarray(long))
        cut = [clean_cell(v) for v in pc.take(array, pa.array(idx)).to_pylist()]
        array = pc.replace_with_mask(array, long, pa.array(cut, _STR))
    return array


def _string_tail(array: pa.Array) -> pa.Array:
    """Everything of a text cell after its reference: ` t="inlineStr"...</c>`."""
    text = _clean_text_array(array)
    return _join('" t="inlineStr"', _quote_style(text), "><is>", _xml_text_array(text), "</is></c>")


def _shared_tail(array: pa.Array, shared: SharedStrings) -> pa.Array:
    """Everything of a shared-string cell after its reference: ` t="s"><v>INDEX</v></c>`; the
    same cleaning and quote prefix as an inline one (the prefix is the cell's, not the text's)."""
    text = _clean_text_array(array)
    index = shared.indices(text).cast(_STR)
    return _join('" t="s"', _quote_style(text), "><v>", index, "</v></c>")


def _cell_tails(array: pa.Array) -> pa.Array:
    """One column (not dictionary-encoded) as the tails of its cells (null: empty cell)."""
    if pa.types.is_timestamp(array.type):
        array = pc.strftime(array, format="%Y-%m-%dT%H:%M:%S%z")
    if pa.types.is_boolean(array.type):
        value = pc.if_else(array, pa.scalar("1"), pa.scalar("0"))
        return _join('" t="b"><v>', value, "</v></c>")
    if pa.types.is_integer(array.type) or pa.types.is_floating(array.type):
        if pa.types.is_floating(array.type):
            finite = pc.is_finite(array)
            array = pc.if_else(finite, array, pa.scalar(None, array.type))
        return _join('"><v>', array.cast(_STR), "</v></c>")
    if pa.types.is_null(array.type):
        return pa.nulls(len(array), _STR)
    return _string_tail(array)


def _batch_xml(stream: Any, batch: pa.RecordBatch, first_row: int, shared: SharedStrings) -> None:
    """Write the `<row>` elements of a batch whose first row has 0-based index `first_row`."""
    columns: list[tuple[pa.Array, pa.Array | None]] = []
    for c in range(batch.num_columns):
        array = batch.column(c)
        if pa.types.is_dictionary(array.type):
            # Long texts repeated along the column: each distinct value goes to the shared
            # strings once, its cells refer to it; gathered by index slice by slice.
            shared.count += len(array) - array.null_count
            columns.append((_shared_tail(array.dictionary, shared), array.indices))
        else:
            columns.append((_cell_tails(array), None))
    for start, n in _xml_slices(columns, batch.num_rows):
        row0 = first_row + start + 1  # Excel rows count from 1
        numbers = pa.array(np.arange(row0, row0 + n)).cast(_STR)
        cells = []
        for c, (tails, indices) in enumerate(columns):
            part = (
                pc.take(tails, indices.slice(start, n))
                if indices is not None
                else tails.slice(start, n)
            )
            cells.append(pc.fill_null(_join(f'<c r="{_col_letter(c)}', numbers, part), ""))
        _write_xml(stream, _join('<row r="', numbers, '">', *cells, "</row>"))


def _xml_slices(
    columns: list[tuple[pa.Array, pa.Array | None]], num_rows: int
) -> Iterator[tuple[int, int]]:
    """(start, length) of the slices a batch is turned into XML by: at most _XML_ROWS rows and
    about _XML_BYTES of cell text each. Rows carrying several long texts (~6 KB in the POLLUX
    dataset's wide sheet): 5,000 of them made ~30 MB of XML, held several times over while the
    cells were joined; narrow rows (~600 B) keep their 5,000-row slices."""
    sizes = np.zeros(num_rows, dtype=np.int64)
    for tails, indices in columns:
        lengths = pc.binary_length(tails)
        if indices is not None:
            lengths = pc.take(lengths, indices)
        sizes += np.asarray(pc.fill_null(lengths, 0).to_numpy(zero_copy_only=False))
    ends = np.cumsum(sizes)
    start = 0
    while start < num_rows:
        before = int(ends[start - 1]) if start else 0
        stop = int(np.searchsorted(ends, before + _XML_BYTES, side="right"))
        stop = min(max(stop, start + 1), start + _XML_ROWS, num_rows)
        yield start, stop - start
        start = stop


def _write_xml(stream: Any, rows: pa.Array) -> None:
    """Write the concatenated values of a string array (no nulls): its data buffer, as is."""
    if len(rows) == 0:
        return
    width = 8 if pa.types.is_large_string(rows.type) else 4
    offsets = np.frombuffer(
        rows.buffers()[1],
        dtype=np.int64 if width == 8 else np.int32,
        count=len(rows) + 1,
        offset=rows.offset * width,
    )
    data = rows.buffers()[2]
    stream.write(memoryview(data)[int(offsets[0]) : int(offsets[-1])])


def clean_cell(text: str) -> str:
    """One text cell as Excel can hold it: no control characters, at most 32,767 characters."""
    text = re.sub(_CONTROL_RE, "", text)
    if len(text) > EXCEL_MAX_CHARS // 2 and _utf16_len(text) > EXCEL_MAX_CHARS:
        text = _utf16_cut(text, EXCEL_MAX_CHARS - len(TRUNCATION_MARKER)) + TRUNCATION_MARKER
    return text


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _utf16_cut(text: str, units: int) -> str:
    cut = text.encode("utf-16-le")[: units * 2]
    return cut.decode("utf-16-le", errors="ignore")


def workbook_bytes(
    tables: dict[str, pa.Table], notes: list[tuple[str, str]] | None = None
) -> bytes:
    """Small tables (built in a request) as the sheets of one .xlsx, after a README sheet of
    `notes` when given; text cells are never formulas, as in every sheet this module writes."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "tables.xlsx"
        writer = XlsxWriter(path)
        try:
            if notes:
                writer.write_notes(notes)
            for name, table in tables.items():
                writer.write_table(name, table.schema, iter(table.to_batches()))
        finally:
            writer.close()
        return path.read_bytes()
