"""Span-markup classifiers: class → type code → optional subtype with its standard comment,
each type with the subjects it applies to and the criterion it affects.

Classifiers are versioned data files in `protocol/data/<name>_classifier_<version>.json`
(the rules change by year): `prochtenie` 2020 is the ПРО//ЧТЕНИЕ «Грамматика» classifier
(Appendix 3, sections 3.1–3.4), `repa` 2025 the ten REPA error types as span codes for LLM
answers. Codes are looked up normalised (`protocol.spans.normalize_code`: case-insensitive,
Latin look-alikes such as P read as the Cyrillic Р).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from protocol.spans import normalize_code

# The predefined code of an off-profile fix: never scored, always with a correction.
FIX_CODE = "ИСП"
GROUPS = ("error", "meaning")


@dataclass(frozen=True)
class Subtype:
    code: str
    comment_ru: str
    comment_en: str = ""


@dataclass(frozen=True)
class ErrorType:
    """One type code of a classifier (an error type or a meaning block)."""

    code: str
    klass: str
    group: str
    name_ru: str
    name_en: str = ""
    number: str = ""  # the FIPI number (Г1, Р5, …) where the regulations give one
    comment_ru: str = ""  # the standard comment of a type without subtypes
    comment_en: str = ""
    subtypes: tuple[Subtype, ...] = ()
    subjects: tuple[str, ...] = ()
    criteria: Mapping[str, str] = field(default_factory=dict)  # subject → criterion
    scored: bool = True
    needs_correction: bool = False

    def subtype(self, code: str) -> Subtype | None:
        key = normalize_code(code)
        return next((s for s in self.subtypes if normalize_code(s.code) == key), None)

    def standard_comment(self, subtype: str = "", lang: str = "ru") -> str:
        """The subtype's standard comment, or the type's own where it has no subtypes."""
        found = self.subtype(subtype) if subtype else None
        if found is not None:
            return found.comment_en if lang == "en" and found.comment_en else found.comment_ru
        return self.comment_en if lang == "en" and self.comment_en else self.comment_ru


@dataclass(frozen=True)
class Classifier:
    name: str
    version: str
    title_ru: str
    title_en: str
    types: tuple[ErrorType, ...]
    classes: tuple[Mapping[str, str], ...] = ()
    subjects: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    _by_code: dict[str, ErrorType] = field(init=False, repr=False, compare=False)
    _subject_alias: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_code = {normalize_code(t.code): t for t in self.types}
        if len(by_code) != len(self.types):
            raise ValueError(f"classifier {self.name} {self.version}: duplicate type codes")
        aliases: dict[str, str] = {}
        for key, info in self.subjects.items():
            aliases[key.casefold()] = key
            for alias in info.get("aliases", ()):
                aliases[str(alias).casefold()] = key
        object.__setattr__(self, "_by_code", by_code)
        object.__setattr__(self, "_subject_alias", aliases)

    def get(self, code: str) -> ErrorType | None:
        """The type of a code, looked up normalised; None when unknown."""
        return self._by_code.get(normalize_code(code))

    def __contains__(self, code: object) -> bool:
        return isinstance(code, str) and self.get(code) is not None

    def subject_key(self, subject: str) -> str | None:
        """A subject as the JSON format names it (rus, lit, …) from either spelling
        (the inline header writes «русский», «литература»); None when unknown."""
        return self._subject_alias.get(" ".join(subject.split()).casefold())

    def allowed(self, code: str, subject: str) -> bool:
        """Whether a code may be used in a text of this subject."""
        found = self.get(code)
        key = self.subject_key(subject)
        return found is not None and key is not None and key in found.subjects

    def criterion(self, code: str, subject: str) -> str | None:
        """The criterion a code affects in a text of this subject (К9, К10, К5, …)."""
        found, key = self.get(code), self.subject_key(subject)
        if found is None or key is None:
            return None
        return found.criteria.get(key)

    def group(self, code: str) -> str | None:
        found = self.get(code)
        return None if found is None else found.group

    def for_subject(self, subject: str) -> list[ErrorType]:
        """The codes allowed for a subject, in the classifier's order (the markup page's list)."""
        key = self.subject_key(subject)
        return [t for t in self.types if key is not None and key in t.subjects]


def _type_from(raw: Mapping[str, Any]) -> ErrorType:
    group = str(raw["group"])
    if group not in GROUPS:
        raise ValueError(f"type {raw['code']}: group {group!r} is not one of {GROUPS}")
    return ErrorType(
        code=str(raw["code"]),
        klass=str(raw["class"]),
        group=group,
        name_ru=str(raw["name_ru"]),
        name_en=str(raw.get("name_en", "")),
        number=str(raw.get("number", "")),
        comment_ru=str(raw.get("comment_ru", "")),
        comment_en=str(raw.get("comment_en", "")),
        subtypes=tuple(
            Subtype(str(s["code"]), str(s["comment_ru"]), str(s.get("comment_en", "")))
            for s in raw.get("subtypes", ())
        ),
        subjects=tuple(str(s) for s in raw.get("subjects", ())),
        criteria={str(k): str(v) for k, v in dict(raw.get("criteria", {})).items()},
        scored=bool(raw.get("scored", True)),
        needs_correction=bool(raw.get("needs_correction", False)),
    )


def classifier_from_dict(raw: Mapping[str, Any]) -> Classifier:
    """A classifier from its data (the JSON file's object)."""
    return Classifier(
        name=str(raw["name"]),
        version=str(raw["version"]),
        title_ru=str(raw.get("title_ru", "")),
        title_en=str(raw.get("title_en", "")),
        types=tuple(_type_from(t) for t in raw["types"]),
        classes=tuple(raw.get("classes", ())),
        subjects=dict(raw.get("subjects", {})),
    )


def available_classifiers() -> list[tuple[str, str]]:
    """(name, version) of every classifier shipped in protocol/data."""
    found = []
    for entry in resources.files("protocol.data").iterdir():
        stem, _, ext = entry.name.rpartition(".")
        if ext == "json" and "_classifier_" in stem:
            name, _, version = stem.partition("_classifier_")
            found.append((name, version))
    return sorted(found)


@lru_cache(maxsize=16)
def load_classifier(name: str = "prochtenie", version: str = "2020") -> Classifier:
    """A shipped classifier by name and version (`prochtenie` 2020, `repa` 2025)."""
    path = resources.files("protocol.data") / f"{name}_classifier_{version}.json"
    if not path.is_file():
        raise LookupError(
            f"no classifier {name!r} version {version!r}; shipped: {available_classifiers()}"
        )
    return classifier_from_dict(json.loads(path.read_text(encoding="utf-8")))
