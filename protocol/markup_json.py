"""The contest's JSON format of a markup (Appendix 3, section 2): a strict reader that names the
malformed field, and the writer. The inline markup and the document live in
protocol.markup_format."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from protocol.markup_classifier import GROUPS
from protocol.markup_format import (
    META_KEYS,
    META_STRING_KEYS,
    MarkupDocument,
    MarkupFormatError,
    criterion_name,
    default_meta,
)
from protocol.spans import Fragment

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable(value: str) -> bool:
    """Whether a string holds a NUL or a lone surrogate (refused wherever text is stored)."""
    return _UNSTORABLE.search(value) is not None


def _string(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MarkupFormatError(where, f"a string expected, got {type(value).__name__}")
    if unstorable(value):
        # A NUL or a lone surrogate is not text: no JSON store (PostgreSQL's jsonb) keeps it.
        raise MarkupFormatError(where, "contains a NUL character or a lone surrogate")
    return value


def _integer(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MarkupFormatError(where, f"an integer expected, got {type(value).__name__}")
    return value


def _score(value: Any, where: str) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MarkupFormatError(where, f"a number expected, got {type(value).__name__}")
    return value


def parse_text(data: str | bytes) -> Any:
    """The value of a JSON text of our own (an export to check, a test's file), or
    MarkupFormatError on "(document)". A file people upload is read by the app with the bounded
    reader, lib.bounded_json (limits on size, depth and digits; the protocol imports no lib), and
    handed here as a mapping; this plain reading is only made total, never a 500."""
    try:
        return json.loads(data)
    except RecursionError as error:
        raise MarkupFormatError("(document)", "not JSON: nested too deeply") from error
    except ValueError as error:
        # JSONDecodeError, UnicodeDecodeError and int()'s 4,300-digit limit are ValueErrors.
        raise MarkupFormatError("(document)", f"not JSON: {error}") from error


def read_json(data: str | bytes | Mapping[str, Any]) -> MarkupDocument:
    """A document from the contest's JSON (section 2). Strict about types: a malformed field
    raises `MarkupFormatError` naming it. Offsets are checked against each other here and
    against the text by `validate`."""
    if isinstance(data, str | bytes):
        data = parse_text(data)
    if not isinstance(data, Mapping):
        raise MarkupFormatError("(document)", "a JSON object expected")
    if "text" in data:
        text = data["text"]
    elif "Text" in data:  # the field table spells it «Text», the example «text»
        text = data["Text"]
    else:
        raise MarkupFormatError("text", "missing")
    if not isinstance(text, str):
        raise MarkupFormatError("text", "a string expected")
    raw_meta = data.get("meta")
    if not isinstance(raw_meta, Mapping):
        raise MarkupFormatError("meta", "an object expected" if "meta" in data else "missing")
    meta = default_meta()
    for key in META_STRING_KEYS:
        meta[key] = _string(raw_meta.get(key), f"meta.{key}")
    year = raw_meta.get("year")
    meta["year"] = None if year is None else _integer(year, "meta.year")
    criteria: dict[str, int | float] = {}
    raw_criteria = data.get("criteria")
    if raw_criteria is not None:
        if not isinstance(raw_criteria, list):
            raise MarkupFormatError("criteria", "an array expected")
        for i, item in enumerate(raw_criteria):
            where = f"criteria[{i}]"
            if item is None:
                continue
            if isinstance(item, Mapping):
                name = _string(item.get("name"), f"{where}.name")
                criterion = criterion_name(name)
                if criterion is None:
                    raise MarkupFormatError(f"{where}.name", f"{name!r} is not К<number>")
                criteria[criterion] = _score(item.get("score"), f"{where}.score")
            else:
                # An array of plain numbers: element N − 1 is the score by criterion КN.
                criteria[f"К{i + 1}"] = _score(item, where)
    raw_selections = data.get("selections")
    fragments: list[Fragment] = []
    if raw_selections is not None:
        if not isinstance(raw_selections, list):
            raise MarkupFormatError("selections", "an array expected")
        for i, item in enumerate(raw_selections):
            fragments.append(_selection(item, f"selections[{i}]"))
    return MarkupDocument(text, fragments, meta, criteria)


def _selection(item: Any, where: str) -> Fragment:
    if not isinstance(item, Mapping):
        raise MarkupFormatError(where, "an object expected")
    if "id" in item and item["id"] is not None:
        _integer(item["id"], f"{where}.id")
    raw_start, raw_end = item.get("startSelection"), item.get("endSelection")
    start: int | None
    end: int | None
    if raw_start is None and raw_end is None:
        start = end = None  # a whole-text error
    else:
        start = _integer(raw_start, f"{where}.startSelection")
        end = _integer(raw_end, f"{where}.endSelection")
        if start < 0:
            raise MarkupFormatError(f"{where}.startSelection", "negative")
        if end < start:
            raise MarkupFormatError(f"{where}.endSelection", "before startSelection")
    if "type" not in item:
        raise MarkupFormatError(f"{where}.type", "missing")
    code = _string(item["type"], f"{where}.type")
    group = _string(item.get("group"), f"{where}.group")
    if group not in GROUPS:
        raise MarkupFormatError(f"{where}.group", f"{group!r} is not one of {', '.join(GROUPS)}")
    return Fragment(
        start=start,
        end=end,
        code=code,
        subtype=_string(item.get("subtype"), f"{where}.subtype"),
        comment=_string(item.get("comment"), f"{where}.comment"),
        correction=_string(item.get("correction"), f"{where}.correction"),
        group=group,
        explanation=_string(item.get("explanation"), f"{where}.explanation"),
        tag=_string(item.get("tag"), f"{where}.tag"),
    )


def to_json(document: MarkupDocument) -> dict[str, Any]:
    """The contest's JSON object of a document; selections numbered 1…n in their order."""
    return {
        "meta": {key: document.meta.get(key, default_meta()[key]) for key in META_KEYS},
        "criteria": [{"name": name, "score": score} for name, score in document.criteria.items()],
        "selections": [
            {
                "id": number,
                "startSelection": f.start,
                "endSelection": f.end,
                "comment": f.comment,
                "explanation": f.explanation,
                "correction": f.correction,
                "tag": f.tag,
                "group": f.group,
                "type": f.code,
                "subtype": f.subtype,
            }
            for number, f in enumerate(document.fragments, start=1)
        ],
        "text": document.text,
    }


def write_json(document: MarkupDocument) -> str:
    return json.dumps(to_json(document), ensure_ascii=False, indent=2)


# Bounds of one markup sent by a page or a participant's system: far above any essay (the
# contest's texts carry tens of fragments), low enough that a forged body costs little.
MAX_FRAGMENTS = 2000
MAX_FIELD_CHARS = 5000


def read_selections(selections: Any, *, text: str, subject: str) -> MarkupDocument:
    """The `selections` of a markup of a stored text (the markup page's and the participants'
    API's body), read strictly and bounded. Raises MarkupFormatError naming the field."""
    if not isinstance(selections, list):
        raise MarkupFormatError("selections", "an array expected")
    if len(selections) > MAX_FRAGMENTS:
        raise MarkupFormatError("selections", f"more than {MAX_FRAGMENTS} fragments")
    for i, item in enumerate(selections):
        if isinstance(item, Mapping):
            for key, value in item.items():
                if isinstance(value, str) and len(value) > MAX_FIELD_CHARS:
                    raise MarkupFormatError(
                        f"selections[{i}].{key}", f"longer than {MAX_FIELD_CHARS} characters"
                    )
    meta = default_meta()
    meta.update(subject=subject)
    return read_json({"meta": meta, "selections": selections, "text": text})
