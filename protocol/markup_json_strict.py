"""A strict reading of the contest's JSON: every field of the regulations' field table
(Appendix 3, section 2) present, of its type, and empty only where the table's "empty value"
column allows it. `protocol.markup_json.read_json` is the lenient reader the import uses (the
regulations' own example has no `id` or `uuid` and `category: null`); this one is the check that
our own export must pass (docs/spans.md, "Contest JSON, strictly").

Readings of the table where it is unclear or contradicts itself:

- `meta.id` is "not empty" in the column but "may be empty for non-public texts" in its
  description: present and a string, empty allowed.
- "Empty string" as the empty value (`class`, `taskText`, `category`, and the selections'
  `comment`, `explanation`, `correction`, `tag`, `subtype`): present and a string, `""` allowed,
  `null` not (the example's `category: null` is read by the lenient reader only).
- `meta.expert` "may be omitted or an empty string" and is required in a file of an expert's
  markup: `expert_markup=True` asks for it.
- `meta.subject` is one of the table's values (rus, eng, lit, social, hist, rus-free, eng-free),
  or of `subjects` for a classifier of our own (REPA's `llm`).
- `selections` may be absent (an unmarked text). A whole-text error (section 1.3: a fragment
  with an empty text) has both offsets `null`, the one way the JSON can carry it; otherwise both
  are integers with 0 ≤ start ≤ end ≤ the text's length. Fragment ids are distinct.
- The text is `text` (the example) or `Text` (the table), not empty, with no whitespace at its
  start or end and paragraphs separated by a Unix newline (no carriage return).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from protocol.markup_classifier import GROUPS
from protocol.markup_format import MarkupDocument, MarkupFormatError
from protocol.markup_json import parse_text, read_json

REGULATION_SUBJECTS = ("rus", "eng", "lit", "social", "hist", "rus-free", "eng-free")

# meta strings the table does not allow empty (`id`: see the module's note).
_META_REQUIRED = ("uuid", "theme", "subject", "test")
# meta strings whose empty value is the empty string.
_META_MAY_BE_EMPTY = ("id", "class", "taskText", "category")
_SELECTION_MAY_BE_EMPTY = ("comment", "explanation", "correction", "tag", "subtype")


@dataclass(frozen=True)
class FieldIssue:
    """One breach of the field table: `field` is its path (`meta.uuid`, `selections[2].id`)."""

    field: str
    message: str


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def contest_json_issues(
    data: str | bytes | Mapping[str, Any],
    *,
    subjects: Iterable[str] = REGULATION_SUBJECTS,
    expert_markup: bool = False,
) -> list[FieldIssue]:
    """Every breach of the field table in one contest JSON file, in field order."""
    if isinstance(data, str | bytes):
        try:
            data = parse_text(data)
        except MarkupFormatError as error:
            return [FieldIssue(error.field, error.message)]
    if not isinstance(data, Mapping):
        return [FieldIssue("(document)", "a JSON object expected")]
    issues: list[FieldIssue] = []

    def need_string(container: Mapping[str, Any], key: str, where: str, *, empty: bool) -> None:
        if key not in container:
            issues.append(FieldIssue(where, "missing"))
        elif not isinstance(container[key], str):
            issues.append(FieldIssue(where, "a string expected"))
        elif not empty and not container[key].strip():
            issues.append(FieldIssue(where, "empty, which the field table does not allow"))

    meta = data.get("meta")
    if not isinstance(meta, Mapping):
        issues.append(FieldIssue("meta", "an object expected" if "meta" in data else "missing"))
        meta = {}
    else:
        for key in _META_REQUIRED:
            need_string(meta, key, f"meta.{key}", empty=False)
        for key in _META_MAY_BE_EMPTY:
            need_string(meta, key, f"meta.{key}", empty=True)
        subject = meta.get("subject")
        allowed = tuple(subjects)
        if isinstance(subject, str) and subject.strip() and subject not in allowed:
            issues.append(FieldIssue("meta.subject", f"{subject!r} is not one of {allowed}"))
        year = meta.get("year")
        if "year" not in meta:
            issues.append(FieldIssue("meta.year", "missing"))
        elif not _is_int(year) or year <= 0:
            issues.append(FieldIssue("meta.year", "a positive integer expected"))
        if "expert" in meta or expert_markup:
            need_string(meta, "expert", "meta.expert", empty=not expert_markup)
    text_key = "text" if "text" in data else "Text"
    text = data.get(text_key)
    if text_key not in data:
        issues.append(FieldIssue("text", "missing"))
    elif not isinstance(text, str) or not text:
        issues.append(FieldIssue(text_key, "a non-empty string expected"))
    else:
        if text != text.strip():
            issues.append(FieldIssue(text_key, "whitespace at the start or end"))
        if "\r" in text:
            issues.append(FieldIssue(text_key, "a carriage return (paragraphs end with \\n)"))
    # Offsets are checked against a text only when it is one.
    length = len(text) if isinstance(text, str) and text else None
    if "criteria" in data and not isinstance(data["criteria"], list):
        issues.append(FieldIssue("criteria", "an array expected"))
    if "selections" in data:
        selections = data["selections"]
        if not isinstance(selections, list):
            issues.append(FieldIssue("selections", "an array expected"))
        else:
            ids: set[int] = set()
            for i, item in enumerate(selections):
                issues.extend(_selection_issues(item, f"selections[{i}]", length, ids))
    if not issues:
        # What the lenient reader checks besides (criteria's shape, value types).
        try:
            read_json(data)
        except MarkupFormatError as error:
            issues.append(FieldIssue(error.field, error.message))
    return issues


def _selection_issues(item: Any, where: str, length: int | None, ids: set[int]) -> list[FieldIssue]:
    if not isinstance(item, Mapping):
        return [FieldIssue(where, "an object expected")]
    issues: list[FieldIssue] = []
    number = item.get("id")
    if not _is_int(number):
        issues.append(FieldIssue(f"{where}.id", "an integer expected"))
    elif number in ids:
        issues.append(FieldIssue(f"{where}.id", f"{number} numbers another fragment too"))
    else:
        ids.add(number)
    start, end = item.get("startSelection"), item.get("endSelection")
    whole_text = "startSelection" in item and "endSelection" in item and start is end is None
    if not whole_text:
        for key, value in (("startSelection", start), ("endSelection", end)):
            if not _is_int(value):
                issues.append(FieldIssue(f"{where}.{key}", "an integer expected"))
        if _is_int(start) and _is_int(end):
            if start < 0:
                issues.append(FieldIssue(f"{where}.startSelection", "negative"))
            if end < start:
                issues.append(FieldIssue(f"{where}.endSelection", "before startSelection"))
            if length is not None and end > length:
                issues.append(FieldIssue(f"{where}.endSelection", "beyond the end of the text"))
    for key in ("group", "type"):
        value = item.get(key)
        if not isinstance(value, str) or not value.strip():
            issues.append(FieldIssue(f"{where}.{key}", "a non-empty string expected"))
    group = item.get("group")
    if isinstance(group, str) and group.strip() and group not in GROUPS:
        issues.append(FieldIssue(f"{where}.group", f"{group!r} is not one of {GROUPS}"))
    for key in _SELECTION_MAY_BE_EMPTY:
        if not isinstance(item.get(key), str):
            issues.append(
                FieldIssue(f"{where}.{key}", "missing" if key not in item else "a string expected")
            )
    return issues


def read_json_strict(
    data: str | bytes | Mapping[str, Any],
    *,
    subjects: Iterable[str] = REGULATION_SUBJECTS,
    expert_markup: bool = False,
) -> MarkupDocument:
    """A document from contest JSON that meets the field table, else MarkupFormatError naming
    the first breach (and how many more)."""
    if isinstance(data, str | bytes):
        data = parse_text(data)  # once: the checks and the reading share the value
    issues = contest_json_issues(data, subjects=subjects, expert_markup=expert_markup)
    if issues:
        first = issues[0]
        more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
        raise MarkupFormatError(first.field, first.message + more)
    return read_json(data)
