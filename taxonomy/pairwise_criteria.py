"""The pairwise (side-by-side) criteria sets: the versioned data file and its validating loader.

`taxonomy/data/repa_criteria_v1.json` is the REPA set (issue #13; REPA, Table 4 and Appendix
C, Figure 5): ten error types and Overall, each with a name, the annotator's question and the
judge's description, in Russian and English. A set is edited like the POLLUX catalogue: a
changed set is a new file with the next version, never an edit of a released one.

Pure: no model and no query (the app that stores the set comes later and will load through
`load_criteria_set`), so the file can be checked without a database.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "data"
REPA_CRITERIA_FILE = DATA_DIR / "repa_criteria_v1.json"

LANGUAGES = ("ru", "en")
TEXT_FIELDS = ("name", "question", "judge_description")
_KEY_RE = re.compile(r"^[a-z][a-z0-9_]*$")


class CriteriaSetError(ValueError):
    """A criteria set file that breaks the format; `errors` lists every problem found."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class PairwiseCriterion:
    """One criterion of a set; each text maps a language ("ru", "en") to the text."""

    key: str
    position: int
    name: dict[str, str]
    question: dict[str, str]
    judge_description: dict[str, str]

    def judge_error_type(self, language: str) -> str:
        """The "Error type:" text of the judge prompt, "<Name>: <description>" as REPA's
        `error_type_description` spells it (Appendix C, Figure 5)."""
        return f"{self.name[language]}: {self.judge_description[language]}"


@dataclass(frozen=True)
class PairwiseCriteriaSet:
    """A validated criteria set: its name, version and criteria in display order."""

    name: str
    version: int
    criteria: tuple[PairwiseCriterion, ...]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(criterion.key for criterion in self.criteria)

    def get(self, key: str) -> PairwiseCriterion:
        for criterion in self.criteria:
            if criterion.key == key:
                return criterion
        raise KeyError(key)


def _texts(value: Any, where: str, errors: list[str]) -> dict[str, str]:
    if not isinstance(value, dict):
        errors.append(f"{where}: expected an object with {' and '.join(LANGUAGES)}")
        return {}
    for language in sorted(set(value) - set(LANGUAGES)):
        errors.append(f"{where}: unknown language {language!r}")
    texts: dict[str, str] = {}
    for language in LANGUAGES:
        text = value.get(language)
        if not isinstance(text, str) or not text.strip():
            errors.append(f"{where}: missing {language} text")
        else:
            texts[language] = text
    return texts


def validate_criteria_set(data: Any) -> PairwiseCriteriaSet:
    """The set described by `data` (the parsed JSON), or CriteriaSetError listing every problem.

    Format: {"set": str, "version": int >= 1, "source": str (optional), "criteria": [{"key":
    snake_case and unique, "name" / "question" / "judge_description": {"ru": text, "en": text}},
    ...]}. Unknown fields are errors (a typo must not silently drop a text).
    """
    errors: list[str] = []
    if not isinstance(data, dict):
        raise CriteriaSetError(["the file must hold one JSON object"])
    for field in sorted(set(data) - {"set", "version", "source", "criteria"}):
        errors.append(f"unknown field {field!r}")
    name = data.get("set")
    if not isinstance(name, str) or not name.strip():
        errors.append("'set' must name the set")
    version = data.get("version")
    # bool is an int in Python; `true` is not a version.
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        errors.append("'version' must be an integer from 1")
    entries = data.get("criteria")
    if not isinstance(entries, list) or not entries:
        errors.append("'criteria' must be a non-empty list")
        entries = []
    criteria: list[PairwiseCriterion] = []
    seen: set[str] = set()
    for position, entry in enumerate(entries):
        where = f"criteria[{position}]"
        if not isinstance(entry, dict):
            errors.append(f"{where}: expected an object")
            continue
        key = entry.get("key")
        if not isinstance(key, str) or not _KEY_RE.match(key):
            errors.append(f"{where}: 'key' must be snake_case, got {key!r}")
            key = ""
        elif key in seen:
            errors.append(f"{where}: duplicate key {key!r}")
        else:
            seen.add(key)
            where = f"criterion {key!r}"
        for field in sorted(set(entry) - {"key", *TEXT_FIELDS}):
            errors.append(f"{where}: unknown field {field!r}")
        name_texts, question, description = (
            _texts(entry.get(field), f"{where} {field}", errors) for field in TEXT_FIELDS
        )
        criteria.append(PairwiseCriterion(key, position, name_texts, question, description))
    if errors:
        raise CriteriaSetError(errors)
    assert isinstance(name, str) and isinstance(version, int)  # checked above
    return PairwiseCriteriaSet(name=name, version=version, criteria=tuple(criteria))


def load_criteria_set(path: Path = REPA_CRITERIA_FILE) -> PairwiseCriteriaSet:
    """Read and validate a criteria set file (default: the REPA set, version 1)."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as error:
        raise CriteriaSetError([f"{path.name}: not JSON ({error})"]) from error
    return validate_criteria_set(data)
