"""The ПРО//ЧТЕНИЕ markup formats (Appendix 3): the inline text markup with its metadata header
(sections 1.2–1.6) and the contest's JSON (section 2), readers and writers of both, and the
validation of a markup against a classifier.

A markup is a `MarkupDocument`: the metadata (the JSON `meta` keys), the criterion scores, the
immutable plain text and its fragments (`protocol.spans.Fragment`, 0-based end-exclusive
character offsets; `None` offsets for a whole-text error).

Inline markup, as section 1.3 defines it::

    (* Коды \\ ТекстФрагмента \\ Комментарий :: Пояснение >> Исправление # Тег *)

with the brackets «(\\ … \\)» or «(* … *)» (the regulations' markdown-escaped «(\\* … \\*)» is
read as «(* … *)»). `parse_markup` applies the eight error-handling rules of section 1.6 and
returns warnings rather than failing; the JSON reader is strict and names the malformed field.
The choices where the regulations are silent are listed in docs/spans.md ("Markup formats").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from protocol.markup_classifier import FIX_CODE, Classifier, load_classifier
from protocol.spans import Fragment, normalize_code

META_STRING_KEYS = (
    "id",
    "uuid",
    "theme",
    "class",
    "subject",
    "taskText",
    "category",
    "expert",
    "test",
)
META_KEYS = (
    "id",
    "uuid",
    "theme",
    "class",
    "year",
    "subject",
    "taskText",
    "category",
    "expert",
    "test",
)

# Inline header field → JSON meta key (section 1.5). «Id» and «UUID» are not in the
# regulations' list: they carry meta.id and meta.uuid so that JSON → inline loses nothing.
HEADER_FIELDS: Mapping[str, str] = {
    "тема": "theme",
    "исходный текст": "taskText",
    "предмет": "subject",
    "линия": "category",
    "класс": "class",
    "год": "year",
    "тест": "test",
    "эксперт": "expert",
    "id": "id",
    "uuid": "uuid",
}
_HEADER_NAMES = {
    "theme": "Тема",
    "taskText": "Исходный текст",
    "subject": "Предмет",
    "category": "Линия",
    "class": "Класс",
    "year": "Год",
    "test": "Тест",
    "expert": "Эксперт",
    "id": "Id",
    "uuid": "UUID",
}
_HEADER_ORDER = (
    "theme",
    "taskText",
    "subject",
    "category",
    "class",
    "year",
    "test",
    "expert",
    "id",
    "uuid",
)

# Longest first: the markdown-escaped «(\*» is the star bracket, not «(\» followed by «*».
_OPEN = ("(\\*", "(*", "(\\")
_CLOSE = ("\\*)", "*)", "\\)")
# Start characters of the parts after the fragment's text (section 1.3).
_MARKERS = (("::", "explanation"), (">>", "correction"), ("#", "tag"), ("\\", "comment"))
_SECTIONS = ("comment", "explanation", "correction", "tag")

_FIELD = re.compile(r"[ \t]*([^\W\d_][^:\n]{0,39}?)[ \t]*:(.*)")
_CRITERION = re.compile(r"[кk]\s*/?\s*(\d+)")
_NUMBER = re.compile(r"-?\d+(\.\d+)?")
TAG_PATTERN = re.compile(r"\w+")


class MarkupFormatError(ValueError):
    """Malformed input that cannot be read (JSON) or written: `field` names the offending
    field as a path (`selections[3].startSelection`, `meta.year`, `text`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def default_meta() -> dict[str, Any]:
    meta: dict[str, Any] = dict.fromkeys(META_STRING_KEYS, "")
    meta["year"] = None
    return {key: meta[key] for key in META_KEYS}


@dataclass
class MarkupDocument:
    """One marked-up text: metadata (the JSON `meta` keys; strings, `year` an int or None),
    criterion scores by name (К9 → 2), the plain text and its fragments."""

    text: str
    fragments: list[Fragment] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=default_meta)
    criteria: dict[str, int | float] = field(default_factory=dict)


@dataclass(frozen=True)
class MarkupWarning:
    """A syntax error the parser recovered from: `rule` is its number in section 1.6 (0 for a
    malformed header value the regulations do not list); `position`, `line`, `column` point
    into the marked-up source, except for rule 8, where they point into the plain text."""

    rule: int
    message: str
    position: int
    line: int
    column: int


@dataclass
class ParsedMarkup:
    document: MarkupDocument
    warnings: list[MarkupWarning]

    @property
    def meta(self) -> dict[str, Any]:
        return self.document.meta

    @property
    def text(self) -> str:
        return self.document.text

    @property
    def fragments(self) -> list[Fragment]:
        return self.document.fragments


def canonical_order(fragments: Iterable[Fragment]) -> list[Fragment]:
    """Fragments in the order the inline markup writes them (and the parser returns them):
    located ones by start, longer first (an outer bracket opens first), ties kept in their
    order; whole-text errors last."""
    items = list(fragments)
    located = sorted(
        (f for f in items if f.located),
        key=lambda f: (f.start, -(f.end or 0)),
    )
    return located + [f for f in items if not f.located]


# ---------------------------------------------------------------------------------------------
# Inline markup: parser


def _starts(src: str, i: int, tokens: Sequence[str]) -> str | None:
    for token in tokens:
        if src.startswith(token, i):
            return token
    return None


def _style(bracket: str) -> str:
    return "*" if "*" in bracket else "\\"


def _line_col(src: str, pos: int) -> tuple[int, int]:
    return src.count("\n", 0, pos) + 1, pos - (src.rfind("\n", 0, pos) + 1) + 1


def _number(value: str) -> int | float:
    return int(value) if "." not in value else float(value)


@dataclass
class _Header:
    meta: dict[str, Any]
    criteria: dict[str, int | float]
    body_start: int


def _header_lines(src: str) -> list[tuple[str, str, int]] | None:
    """The header's (field, value, position) lines, closed by a ("", "", body start) entry,
    or None when the source has no header: the first block (up to the first blank line) is a
    header when each of its lines is `Field: value` (a value in brackets may span lines) and one
    field is known."""
    lines: list[tuple[str, str, int]] = []
    pos = 0
    while True:
        if pos >= len(src):
            return None  # no blank line: there is no body, so this is no header
        eol = src.find("\n", pos)
        eol = len(src) if eol < 0 else eol
        line = src[pos:eol]
        if not line.strip():
            lines.append(("", "", eol + 1))  # the body's start
            break
        m = _FIELD.fullmatch(line)
        if m is None:
            return None
        name, rest = m.group(1), m.group(2)
        value_at = pos + m.start(2)
        stripped = rest.lstrip()
        opener = _starts(stripped, 0, _OPEN)
        if opener:
            begin = value_at + (len(rest) - len(stripped)) + len(opener)
            ends = [(src.find(c, begin), c) for c in _CLOSE]
            found = [(at, c) for at, c in ends if at >= 0]
            if not found:
                lines.append((name, src[begin:], pos))
                lines.append(("", "", len(src)))
                break
            at, close = min(found)
            lines.append((name, src[begin:at].strip(), pos))
            pos = at + len(close)
            eol = src.find("\n", pos)
            pos = len(src) if eol < 0 else eol + 1
            continue
        lines.append((name, rest.strip(), pos))
        pos = eol + 1
    fields = [name for name, _v, _p in lines[:-1]]
    if not any(_field_key(name) is not None for name in fields):
        return None
    return lines


def criterion_name(name: str) -> str | None:
    """К9 from «К9», «K9» (Latin), «к 9» or «К/9»; None for anything else."""
    m = _CRITERION.fullmatch(" ".join(name.split()).casefold())
    return f"К{m.group(1)}" if m else None


def _field_key(name: str) -> str | None:
    """A header field's meta key, or its criterion name (К9); None when unknown."""
    return HEADER_FIELDS.get(" ".join(name.split()).casefold()) or criterion_name(name)


def _parse_header(src: str, warn: Any) -> _Header:
    meta = default_meta()
    criteria: dict[str, int | float] = {}
    lines = _header_lines(src)
    if lines is None:
        return _Header(meta, criteria, 0)
    for name, value, pos in lines[:-1]:
        key = _field_key(name)
        if key is None:
            warn(1, f"unknown header field {name!r} ignored", pos)
        elif key == "year":
            if _NUMBER.fullmatch(value) and "." not in value:
                meta["year"] = int(value)
            elif value:
                warn(0, f"year {value!r} is not a number: ignored", pos)
        elif key in meta:
            meta[key] = value
        elif value:
            if _NUMBER.fullmatch(value):
                criteria[key] = _number(value)
            else:
                warn(0, f"score {value!r} of {name} is not a number: ignored", pos)
    return _Header(meta, criteria, lines[-1][2])


@dataclass
class _Open:
    order: int
    position: int
    style: str
    codes: list[list[str]] = field(default_factory=list)  # [type, subtype]
    section: str = "codes"
    lead: bool = False  # skipping the whitespace before the fragment's text
    start: int = 0
    end: int = 0
    last_child_end: int = 0
    children: int = 0
    parts: dict[str, list[str]] = field(default_factory=lambda: {s: [] for s in _SECTIONS})


def parse_markup(
    source: str,
    classifier: Classifier | None = None,
    *,
    original: str | None = None,
) -> ParsedMarkup:
    """Parse an inline markup (header and marked-up text) into a document and warnings.

    `classifier` (the ПРО//ЧТЕНИЕ 2020 one by default) tells codes from text (rule 2);
    `original`, the unmarked text when known, lets rule 8 warn about an altered text."""
    classifier = classifier or load_classifier()
    warnings: list[MarkupWarning] = []

    def warn(rule: int, message: str, pos: int) -> None:
        line, col = _line_col(source, pos)
        warnings.append(MarkupWarning(rule, message, pos, line, col))

    header = _parse_header(source, warn)
    src, n = source, len(source)
    plain: list[str] = []
    stack: list[_Open] = []
    found: list[tuple[int, int, Fragment]] = []
    order = 0

    def end_text(top: _Open) -> None:
        floor = max(top.start, top.last_child_end)
        while len(plain) > floor and plain[-1].isspace():
            plain.pop()
        top.end = len(plain)

    def finish(top: _Open, close: str | None, pos: int) -> None:
        if top.section == "codes":
            top.start = top.end = len(plain)
            if not top.codes:
                warn(3, "fragment without a code: its code is empty", top.position)
        elif top.section == "text":
            end_text(top)
        if close is not None and _style(close) != top.style:
            warn(6, f"closing bracket «{close}» does not match the opening one: taken as it", pos)
        stack.pop()
        if stack:
            stack[-1].last_child_end = len(plain)
        parts = {s: "".join(top.parts[s]).strip() for s in _SECTIONS}
        located = top.end > top.start
        for k, (code, subtype) in enumerate(top.codes or [["", ""]]):
            if normalize_code(code) == normalize_code(FIX_CODE) and not parts["correction"]:
                warn(7, f"{code} without «>> correction»: the fix is ignored", top.position)
                continue
            fragment = Fragment(
                start=top.start if located else None,
                end=top.end if located else None,
                code=code,
                subtype=subtype,
                comment=parts["comment"],
                correction=parts["correction"],
                group=classifier.group(code) or "error",
                explanation=parts["explanation"],
                tag=parts["tag"],
            )
            found.append((top.order, k, fragment))

    def begin_text(top: _Open, skip_space: bool) -> None:
        if not top.codes:
            warn(3, "fragment without a code: its code is empty", top.position)
        top.section, top.lead, top.start = "text", skip_space, len(plain)

    i = header.body_start
    while i < n:
        top = stack[-1] if stack else None
        section = top.section if top else "text"
        ch = src[i]
        if top is not None and section == "codes":
            if ch.isspace():
                i += 1
                continue
            close = _starts(src, i, _CLOSE)
            if close:
                finish(top, close, i)
                i += len(close)
                continue
            if _starts(src, i, _OPEN):
                begin_text(top, skip_space=False)
                continue
            marker = next(((m, s) for m, s in _MARKERS if src.startswith(m, i)), None)
            if marker is not None:
                begin_text(top, skip_space=True)
                i += len(marker[0])
                if marker[1] != "comment":  # no text at all: straight to a later part
                    end_text(top)
                    top.section = marker[1]
                continue
            j = i
            while (
                j < n
                and not src[j].isspace()
                and src[j] != "\\"
                and not _starts(src, j, ("*)", "::", ">>", "#"))
            ):
                j += 1
            token = src[i:j]
            kind = classifier.get(token)
            if kind is not None:
                top.codes.append([token, ""])
                i = j
                continue
            last = classifier.get(top.codes[-1][0]) if top.codes else None
            if last is not None and not top.codes[-1][1] and last.subtype(token) is not None:
                top.codes[-1][1] = token
                i = j
                continue
            # Rule 2: an unknown code, or a forgotten «\»: the fragment's text starts here.
            warn(2, f"unknown code {token!r}: taken as the start of the fragment's text", i)
            begin_text(top, skip_space=False)
            continue
        if top is not None and section == "text" and top.lead:
            if ch.isspace():
                i += 1
                continue
            top.lead = False
            top.start = len(plain)
        if section == "text":
            opener = _starts(src, i, _OPEN)
            if opener:
                if top is not None:
                    top.children += 1
                stack.append(_Open(order, i, _style(opener)))
                order += 1
                i += len(opener)
                continue
            close = _starts(src, i, _CLOSE)
            if close:
                if top is None:
                    warn(5, f"closing bracket «{close}» without an opening one: ignored", i)
                else:
                    finish(top, close, i)
                i += len(close)
                continue
            if top is not None:
                marker = next(((m, s) for m, s in _MARKERS if src.startswith(m, i)), None)
                if marker is not None:
                    end_text(top)
                    i += len(marker[0])
                    text = "".join(plain[top.start : top.end])
                    last = classifier.get(top.codes[-1][0]) if top.codes else None
                    if (
                        marker[1] == "comment"
                        and last is not None
                        and not top.codes[-1][1]
                        and not top.children
                        and last.subtype(text) is not None
                    ):
                        # «(\Г.слов\ глаг\ движает >>движет\)», as the classifier's own
                        # examples write it: a subtype between two «\» before the text.
                        top.codes[-1][1] = text
                        del plain[top.start :]
                        top.lead = True
                        continue
                    top.section = marker[1]
                    continue
            plain.append(ch)
            i += 1
            continue
        assert top is not None
        close = _starts(src, i, _CLOSE)
        if close:
            finish(top, close, i)
            i += len(close)
            continue
        marker = next(((m, s) for m, s in _MARKERS if src.startswith(m, i)), None)
        if marker is not None:
            top.section = marker[1]
            i += len(marker[0])
            continue
        top.parts[section].append(ch)
        i += 1
    while stack:
        warn(4, "opening bracket without a closing one: closed at the end", stack[-1].position)
        finish(stack[-1], None, n)

    raw = "".join(plain)
    lead = len(raw) - len(raw.lstrip())
    text = raw.strip()

    def shift(offset: int | None) -> int | None:
        return None if offset is None else min(max(offset - lead, 0), len(text))

    fragments = [
        _replace_span(f, shift(f.start), shift(f.end))
        for _o, _k, f in sorted(found, key=lambda item: (item[0], item[1]))
    ]
    if original is not None and text != original.strip():
        expected = original.strip()
        at = next(
            (p for p, (a, b) in enumerate(zip(text, expected, strict=False)) if a != b),
            min(len(text), len(expected)),
        )
        line, col = _line_col(text, at)
        warnings.append(
            MarkupWarning(8, f"the text differs from the original at character {at}", at, line, col)
        )
    document = MarkupDocument(text, fragments, header.meta, header.criteria)
    return ParsedMarkup(document, sorted(warnings, key=lambda w: (w.position, w.rule)))


def _replace_span(f: Fragment, start: int | None, end: int | None) -> Fragment:
    return replace(f, start=start, end=end)


# ---------------------------------------------------------------------------------------------
# Inline markup: writer

_UNSAFE_TEXT = _OPEN + _CLOSE
_UNSAFE_PART = (*_OPEN, *_CLOSE, "\\", "::", ">>", "#")


def _check(value: str, unsafe: Sequence[str], where: str) -> None:
    bad = next((token for token in unsafe if token in value), None)
    if bad is not None:
        raise MarkupFormatError(where, f"{bad!r} cannot be written in the inline markup")
    if value != value.strip():
        raise MarkupFormatError(where, "leading or trailing whitespace cannot be written inline")


def _header_text(document: MarkupDocument) -> list[str]:
    lines = []
    for key in _HEADER_ORDER:
        value = document.meta.get(key)
        if value is None or value == "":
            continue
        value = str(value)
        _check(value, _CLOSE, f"meta.{key}")
        single = "\n" not in value and not _starts(value, 0, _OPEN)
        lines.append(
            f"{_HEADER_NAMES[key]}: {value}" if single else f"{_HEADER_NAMES[key]}: (* {value} *)"
        )
    for name, score in document.criteria.items():
        criterion = criterion_name(name)
        if criterion is None:
            raise MarkupFormatError(f"criteria.{name}", "a criterion is named К<number>")
        lines.append(f"{criterion}: {score}")
    return lines


def write_markup(document: MarkupDocument) -> str:
    """The inline markup of a document: its header, a blank line and the marked-up text.

    Brackets alternate by depth («(* … *)» outside, «(\\ … \\)» inside, as the regulations
    suggest), fragments are written in `canonical_order`, whole-text errors after the text.
    Raises `MarkupFormatError` for what the inline syntax cannot carry (crossing fragments,
    markup characters inside a value, a span with whitespace at an edge)."""
    text = document.text
    _check(text, _UNSAFE_TEXT, "text")
    order = canonical_order(document.fragments)
    index = {id(f): i for i, f in enumerate(document.fragments)}
    for f in order:
        where = f"selections[{index[id(f)]}]"
        for part in ("code", "subtype", "comment", "explanation", "correction", "tag"):
            value = getattr(f, part)
            _check(
                value,
                (*_UNSAFE_PART, " ") if part in ("code", "subtype") else _UNSAFE_PART,
                f"{where}.{part}",
            )
        if f.located:
            assert f.start is not None and f.end is not None
            if not 0 <= f.start < f.end <= len(text):
                raise MarkupFormatError(f"{where}.startSelection", "span outside the text or empty")
            _check(text[f.start : f.end], _UNSAFE_PART, f"{where}.text")

    out: list[str] = []
    pos = 0
    stack: list[Fragment] = []

    def opening(f: Fragment, depth: int) -> str:
        bracket = "(*" if depth % 2 == 0 else "(\\"
        codes = " ".join(c for c in (f.code, f.subtype) if c)
        return f"{bracket} {codes} \\ " if codes else f"{bracket} \\ "

    def tail(f: Fragment, depth: int) -> str:
        parts = [
            f" {marker} {value}"
            for marker, value in (
                ("\\", f.comment),
                ("::", f.explanation),
                (">>", f.correction),
                ("#", f.tag),
            )
            if value
        ]
        return "".join(parts) + (" *)" if depth % 2 == 0 else " \\)")

    def close_to(limit: int) -> None:
        nonlocal pos
        while stack and (stack[-1].end or 0) <= limit:
            f = stack.pop()
            out.append(text[pos : f.end])
            pos = f.end or 0
            out.append(tail(f, len(stack)))

    for f in order:
        if not f.located:
            continue
        assert f.start is not None and f.end is not None
        close_to(f.start)
        if stack and f.end > (stack[-1].end or 0):
            raise MarkupFormatError(
                f"selections[{index[id(f)]}]", "fragments cross: they may nest but not cross"
            )
        out.append(text[pos : f.start])
        pos = f.start
        out.append(opening(f, len(stack)))
        stack.append(f)
    close_to(len(text))
    out.append(text[pos:])
    whole = [opening(f, 0).rstrip(" \\").rstrip() + _whole_tail(f) for f in order if not f.located]
    if whole:
        out.append("\n" + " ".join(whole))
    body = "".join(out)
    lines = _header_text(document)
    if not lines and _header_lines(body) is not None:
        lines = ["Тема:"]  # the text's first paragraph would read as a header
    return "\n".join(lines) + "\n\n" + body if lines else body


def _whole_tail(f: Fragment) -> str:
    parts = [
        f" {marker} {value}"
        for marker, value in (("::", f.explanation), (">>", f.correction), ("#", f.tag))
        if value
    ]
    comment = f" \\ \\ {f.comment}" if f.comment else ""
    # With a comment the (empty) text needs its own «\»: «(* С.тема \ \ комментарий *)».
    return comment + "".join(parts) + " *)"
