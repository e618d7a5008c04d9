"""Validation of the material import: every row checked in memory against the catalogue.

The catalogue is loaded once (never a query per row); POLLUX rows repeat the same instruction
and answer per criterion, and the validator merges them into one of each.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from lib import bounded_json
from material.import_common import (
    COLUMNS,
    COMPLEXITY_ALIASES,
    FALSE_WORDS,
    MAX_JSON_DEPTH,
    MAX_LENGTHS,
    REQUIRED,
    SIGNATURE_FIELDS,
    TRUE_WORDS,
    Errors,
    cell,
    norm,
    sha256_hex,
)
from material.readers import json_nonfinite, json_too_deep, too_deep_message
from taxonomy.models import Criterion, FunctionalStyle, Task


class Catalogue:
    """Everything a row is checked against, loaded with a handful of queries."""

    def __init__(self) -> None:
        leaves = list(
            Task.objects.filter(is_leaf=True).select_related("group", "parent", "parent__parent")
        )
        self.leaf_style: dict[int, int | None] = {t.pk: t.style_id for t in leaves}
        self.leaf_path: dict[int, str] = {t.pk: t.path for t in leaves}
        self.by_leaf_name: dict[str, set[int]] = {}
        for t in leaves:
            for name in {norm(t.name_en), norm(t.name_ru)} - {""}:
                self.by_leaf_name.setdefault(name, set()).add(t.pk)
        self.by_names: dict[tuple[str, ...], set[int]] = {}
        self.by_path: dict[str, set[int]] = {}
        for leaf in leaves:
            lineage = leaf.lineage()  # the parents are loaded above: no query
            # Every combination of English and Russian names per level (at most 2**3).
            combos: list[tuple[str, ...]] = [()]
            for node in lineage:
                names = {norm(node.name_en), norm(node.name_ru)} - {""}
                combos = [(*c, n) for c in combos for n in names]
            for combo in combos:
                self.by_names.setdefault(combo, set()).add(leaf.pk)
            for lang in ("en", "ru"):
                parts = [getattr(leaf.group, f"name_{lang}")] + [
                    getattr(n, f"name_{lang}") for n in lineage
                ]
                for i in range(len(parts)):
                    suffix = norm(" / ".join(p for p in parts[i:] if p))
                    if suffix:
                        self.by_path.setdefault(suffix, set()).add(leaf.pk)
            self.by_path.setdefault(norm(leaf.path), set()).add(leaf.pk)

        self.styles: dict[str, int] = {}
        for style in FunctionalStyle.objects.all():
            for alias in _style_aliases(style):
                self.styles.setdefault(alias, style.pk)
        self.criteria: set[str] = set()
        for key, name_en, name_ru in Criterion.objects.values_list("key", "name_en", "name_ru"):
            self.criteria.update(norm(n) for n in (key, name_en, name_ru) if n)
        self.complexity = {
            norm(alias): level for level, aliases in COMPLEXITY_ALIASES.items() for alias in aliases
        }

    def task_by_path(self, value: str) -> tuple[int | None, str | None]:
        found = self.by_path.get(norm(value), set())
        if len(found) == 1:
            return next(iter(found)), None
        return None, ("ambiguous" if found else "unknown")

    def task_by_names(self, parts: list[str]) -> tuple[int | None, str | None]:
        """The leaf named by (task, subtask, subsubtask).

        POLLUX's own taxonomy is finer than the catalogue's 152 leaves in places, so when the
        whole path names no leaf, the longest leading part that does is taken (the extra level
        is a finer split of that leaf).
        """
        key = tuple(norm(p) for p in parts)
        for n in range(len(key), 0, -1):
            found = self.by_names.get(key[:n], set())
            if len(found) == 1:
                return next(iter(found)), None
            if found:
                return None, "ambiguous"
        return None, "unknown"

    def suggestions(self, parts: list[str], limit: int = 3) -> list[str]:
        """Catalogue paths an unknown task may mean: the whole text read as a path (the group's
        name given as the task's, "Text Transformation / Editing"), else the leaves named like
        its last part."""
        whole = self.by_path.get(norm(" / ".join(parts)), set())
        found = whole or self.by_leaf_name.get(norm(parts[-1]), set())
        return sorted(self.leaf_path[pk] for pk in found)[:limit]


def _style_aliases(style: FunctionalStyle) -> set[str]:
    names = {style.key, style.name_en, style.name_ru}
    # POLLUX writes the domain as "Научный текст", "Написать научный текст" or "Научный".
    for name in list(names):
        short = re.sub(r"(?i)^написать\s+", "", name)
        names.add(short)
        names.add(re.sub(r"(?i)\s+(text|текст)$", "", short))
    return {norm(n) for n in names if n}


@dataclass
class InstructionRow:
    row: int
    key: tuple[str, str]
    external_id: str | None
    text: str
    reference_answer: str
    task_id: int
    style_id: int | None
    complexity: str
    ethics_flag: bool
    author: str
    source: str
    pk: int | None = None

    def content(self) -> tuple[Any, ...]:
        return (
            self.text,
            self.reference_answer,
            self.task_id,
            self.style_id,
            self.complexity,
            self.ethics_flag,
            self.author,
            self.source,
        )


@dataclass
class AnswerRow:
    row: int
    key: tuple[Any, ...]
    external_id: str | None
    instruction_key: tuple[str, str]
    model_key: tuple[str, str]
    text: str
    text_hash: str
    generation_meta: dict[str, Any]

    def content(self) -> tuple[Any, ...]:
        return (
            self.instruction_key,
            self.model_key,
            self.text_hash,
            json.dumps(self.generation_meta, sort_keys=True),
        )


# Which column a difference in InstructionRow.content() is reported under.
_INSTRUCTION_FIELDS = (
    "instruction",
    "reference_answer",
    "task",
    "style",
    "complexity",
    "ethics_flag",
    "author",
    "source",
)


class FieldReader:
    """Reads a row's fields by their accepted column names and checks text and short values:
    the rules every import applies to a cell (required text not empty, the length limits, no
    NUL). The cells' kinds (text, not a number or a JSON list) were checked by the reader
    (material.readers.open_table)."""

    def __init__(
        self,
        columns: Iterable[str],
        aliases: dict[str, tuple[str, ...]],
        max_lengths: dict[str, int],
        max_text: int,
        errors: Errors,
        dynamic: bool = False,
    ) -> None:
        present = set(columns)
        self.aliases = aliases
        self.max_lengths = max_lengths
        self.dynamic = dynamic
        # field -> the column name actually used in this file
        self.col: dict[str, str] = {}
        for name, names_of in aliases.items():
            for alias in names_of:
                if alias in present:
                    self.col[name] = alias
                    break
        self.max_text = max_text
        self.errors = errors

    def _get(self, row: dict[str, Any], name: str) -> Any:
        if self.dynamic:
            for alias in self.aliases[name]:
                if alias in row:
                    return row[alias]
            return None
        column = self.col.get(name)
        return row.get(column) if column else None

    def _name(self, name: str) -> str:
        return self.col.get(name, self.aliases[name][0])

    def _short(self, number: int, row: dict[str, Any], name: str) -> str | None:
        value = cell(self._get(row, name)).strip()
        limit = self.max_lengths[name]
        if len(value) > limit:
            self.errors.add(
                number,
                self._name(name),
                "too_long",
                _("At most %(n)s characters.") % {"n": limit},
            )
            return None
        return value

    def _text(self, number: int, row: dict[str, Any], name: str, required: bool) -> str | None:
        value = cell(self._get(row, name))
        column = self._name(name)
        if required and not value.strip():
            self.errors.add(number, column, "empty_text", _("The text is empty."))
            return None
        if len(value) > self.max_text:
            self.errors.add(
                number,
                column,
                "text_too_long",
                _("The text has %(n)s characters; at most %(max)s are allowed.")
                % {"n": len(value), "max": self.max_text},
            )
            return None
        if "\x00" in value:
            self.errors.add(number, column, "bad_text", _("The text contains a NUL character."))
            return None
        return value


class Validator(FieldReader):
    """Turns rows into unique instructions, models and answers, collecting errors."""

    def __init__(
        self,
        columns: Iterable[str],
        catalogue: Catalogue,
        max_text: int,
        errors: Errors,
        dynamic: bool = False,
    ) -> None:
        super().__init__(columns, COLUMNS, MAX_LENGTHS, max_text, errors, dynamic)
        self.catalogue = catalogue
        self.instructions: dict[tuple[str, str], InstructionRow] = {}
        self.models: dict[tuple[str, str], str] = {}
        self.answers: dict[tuple[Any, ...], AnswerRow] = {}
        self.answer_natural: dict[tuple[Any, ...], AnswerRow] = {}
        self.last_signature: tuple[Any, ...] | None = None
        self.signature_columns = [self.col[f] for f in SIGNATURE_FIELDS if f in self.col]

    def missing_columns(self) -> list[str]:
        missing = [COLUMNS[f][0] for f in REQUIRED if f not in self.col]
        if "task_path" not in self.col and "task_type" not in self.col:
            missing.append("task_path")
        return missing

    def _task(self, number: int, row: dict[str, Any]) -> int | None:
        path = cell(self._get(row, "task_path")).strip()
        if path:
            task_id, problem = self.catalogue.task_by_path(path)
            column, shown = self._name("task_path"), path
        else:
            parts = [
                cell(self._get(row, name)).strip()
                for name in ("task_type", "task_subtype", "task_subsubtype")
            ]
            while parts and not parts[-1]:
                parts.pop()
            if not parts or not all(parts):
                column = self._name("task_path" if "task_type" not in self.col else "task_type")
                self.errors.add(number, column, "unknown_task", _("The task is not given."))
                return None
            task_id, problem = self.catalogue.task_by_names(parts)
            column, shown = self._name("task_type"), " / ".join(parts)
        if task_id is None:
            if problem == "ambiguous":
                message = _("The task “%s” matches several catalogue tasks; give task_path.")
            else:
                message = _("Unknown task “%s”.")
            message %= shown
            parts = [p for p in shown.split(" / ") if p.strip()]
            near = self.catalogue.suggestions(parts) if parts and problem != "ambiguous" else []
            if near:
                # Name what matches, in the column that takes it: task_type names the task
                # without its group; task_path takes the catalogue's whole path.
                message += " " + _("The catalogue has: %(paths)s — give it in task_path.") % {
                    "paths": "; ".join(f"“{p}”" for p in near)
                }
            self.errors.add(number, column, "unknown_task", message)
        return task_id

    def _criterion(self, number: int, row: dict[str, Any]) -> None:
        criterion = cell(self._get(row, "criteria_name")).strip()
        if criterion and norm(criterion) not in self.catalogue.criteria:
            self.errors.add(
                number,
                self._name("criteria_name"),
                "unknown_criterion",
                _("Unknown criterion “%s”.") % criterion,
            )

    def add(self, number: int, row: dict[str, Any]) -> None:
        # POLLUX repeats one answer on consecutive rows, one per criterion: a row equal to the
        # previous clean one but for the criterion needs only its criterion checked.
        if self.dynamic:
            signature = tuple(self._get(row, name) for name in SIGNATURE_FIELDS)
        else:
            signature = tuple(row.get(column) for column in self.signature_columns)
        if signature == self.last_signature:
            self._criterion(number, row)
            return
        self.last_signature = None
        before = len(self.errors.items)
        text = self._text(number, row, "instruction", required=True)
        reference = self._text(number, row, "reference_answer", required=False)
        answer_text = self._text(number, row, "answer", required=True)
        instruction_id = self._short(number, row, "instruction_id")
        answer_id = self._short(number, row, "answer_id")
        model_name = self._short(number, row, "model_name")
        model_version = self._short(number, row, "model_version")
        model_provider = self._short(number, row, "model_provider")
        author = self._short(number, row, "author")
        source = self._short(number, row, "source")
        if model_name == "":
            self.errors.add(number, self._name("model_name"), "empty_text", _("No model named."))
        task_id = self._task(number, row)

        style_id: int | None = None
        style = cell(self._get(row, "style")).strip()
        if style:
            style_id = self.catalogue.styles.get(norm(style))
            if style_id is None:
                self.errors.add(
                    number, self._name("style"), "unknown_style", _("Unknown style “%s”.") % style
                )
        elif task_id is not None:
            # No style given: the leaf's own functional style, as the catalogue defines it.
            style_id = self.catalogue.leaf_style[task_id]

        complexity = cell(self._get(row, "complexity")).strip()
        if complexity:
            level = self.catalogue.complexity.get(norm(complexity))
            if level is None:
                self.errors.add(
                    number,
                    self._name("complexity"),
                    "unknown_complexity",
                    _("Unknown complexity “%s”: use easy, medium or hard.") % complexity,
                )
            complexity = level or ""

        flag_value = self._get(row, "ethics_flag")
        ethics_flag = False
        if isinstance(flag_value, bool):
            ethics_flag = flag_value
        else:
            word = norm(cell(flag_value))
            if word in TRUE_WORDS:
                ethics_flag = True
            elif word not in FALSE_WORDS:
                self.errors.add(
                    number,
                    self._name("ethics_flag"),
                    "bad_value",
                    _("Not a yes/no value: “%s”.") % cell(flag_value),
                )

        meta = self._get(row, "generation_meta")
        generation_meta: dict[str, Any] = {}
        if isinstance(meta, dict):
            # A JSON line's object or a Parquet struct: read already, checked here.
            generation_meta = meta
            nonfinite = json_nonfinite(meta)
            if json_too_deep(meta):
                self.errors.add(
                    number, self._name("generation_meta"), "bad_value", too_deep_message()
                )
            elif nonfinite:
                # PostgreSQL's jsonb has no NaN or Infinity: stored, it stopped the import.
                self.errors.add(
                    number,
                    self._name("generation_meta"),
                    "bad_value",
                    _("%(name)s is not a JSON number.") % {"name": nonfinite},
                )
        elif cell(meta).strip():
            try:
                # A cell's text: the bounded reader (depth before json.loads recurses, digits,
                # NaN/Infinity, syntax with its position), no longer than the longest text a
                # row may hold (a character is at most 4 bytes).
                parsed = bounded_json.loads(
                    cell(meta), max_bytes=4 * self.max_text, max_depth=MAX_JSON_DEPTH
                )
            except bounded_json.JSONLimitError as exc:
                self.errors.add(number, self._name("generation_meta"), "bad_value", str(exc))
            else:
                if isinstance(parsed, dict):
                    generation_meta = parsed
                else:
                    self.errors.add(
                        number,
                        self._name("generation_meta"),
                        "bad_value",
                        _("generation_meta must be a JSON object."),
                    )

        self._criterion(number, row)
        if len(self.errors.items) > before:
            return
        # An identical next row would end the same way (merged, or the same error again).
        self.last_signature = signature
        # Everything below is only reached by a clean row; the asserts narrow the types.
        assert text is not None and answer_text is not None and task_id is not None
        assert model_name and model_version is not None and model_provider is not None

        ikey = (
            ("id", instruction_id)
            if instruction_id
            else ("hash", sha256_hex(f"{task_id}\x1f{text}"))
        )
        instruction = InstructionRow(
            row=number,
            key=ikey,
            external_id=instruction_id or None,
            text=text,
            reference_answer=reference or "",
            task_id=task_id,
            style_id=style_id,
            complexity=complexity,
            ethics_flag=ethics_flag,
            author=author or "",
            source=source or "",
        )
        seen = self.instructions.get(ikey)
        if seen is None:
            self.instructions[ikey] = instruction
        elif seen.content() != instruction.content():
            self._conflict(number, seen, instruction, instruction_id)
            return

        mkey = (model_name, model_version)
        if not self.models.get(mkey):
            self.models[mkey] = model_provider

        text_hash = sha256_hex(answer_text)
        natural = (ikey, mkey, text_hash)
        akey: tuple[Any, ...] = ("id", answer_id) if answer_id else ("nat", *natural)
        answer = AnswerRow(
            row=number,
            key=akey,
            external_id=answer_id or None,
            instruction_key=ikey,
            model_key=mkey,
            text=answer_text,
            text_hash=text_hash,
            generation_meta=generation_meta,
        )
        seen_answer = self.answers.get(akey)
        if seen_answer is not None:
            if seen_answer.content() != answer.content():
                column = self._name("answer_id") if answer_id else self._name("generation_meta")
                self.errors.add(
                    number,
                    column,
                    "duplicate_id",
                    _("The answer of row %(row)s is given again with a different content.")
                    % {"row": seen_answer.row},
                )
            return
        twin = self.answer_natural.get(natural)
        if twin is not None:
            if twin.external_id and answer_id:
                # Two ids for one (instruction, model, text): the database keeps only one.
                self.errors.add(
                    number,
                    self._name("answer_id"),
                    "duplicate_id",
                    _("Same instruction, model and answer text as row %(row)s under another id.")
                    % {"row": twin.row},
                )
            return
        self.answers[akey] = answer
        self.answer_natural[natural] = answer

    def _conflict(
        self,
        number: int,
        seen: InstructionRow,
        new: InstructionRow,
        instruction_id: str | None,
    ) -> None:
        differs = next(
            name
            for name, a, b in zip(_INSTRUCTION_FIELDS, seen.content(), new.content(), strict=True)
            if a != b
        )
        column = {
            "instruction": self._name("instruction"),
            "reference_answer": self._name("reference_answer"),
            "task": self._name("task_path" if "task_path" in self.col else "task_type"),
        }.get(differs, self._name(differs) if differs in COLUMNS else differs)
        if instruction_id:
            message = _(
                "instruction_id “%(id)s” was given on row %(row)s with a different %(field)s."
            ) % {"id": instruction_id, "row": seen.row, "field": differs}
        else:
            message = _(
                "The same instruction (text and task) is on row %(row)s with a different %(field)s."
            ) % {"row": seen.row, "field": differs}
        self.errors.add(number, column, "duplicate_id", message)
