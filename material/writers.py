"""Writers of the material import: bulk inserts in one transaction, finding what exists first.

Re-importing a file finds what it already wrote (by external id, or by the natural keys:
instruction text + task, answer instruction + model + text hash) and creates nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

from django.db import connection
from django.db.models.functions import MD5
from django.utils import timezone
from django.utils.translation import gettext as _

from lib.pgcopy import copy_model_rows
from material.import_common import (
    BATCH_SIZE,
    PROGRESS_TOTAL,
    READ_SHARE,
    Errors,
    ImportReport,
    Throttle,
    chunks,
    sha256_hex,
    write_all_or_nothing,
)
from material.models import Answer, Instruction, LanguageModel
from material.validation import AnswerRow, InstructionRow, Validator


def _stored_by_external_id(
    model: type[Instruction] | type[Answer], rows: Sequence[Any], *fields: str
) -> Iterator[tuple[Any, tuple[Any, ...]]]:
    """The file's rows whose external id is already stored, each with (external id, *fields) of
    the stored row, read in chunks: what a later file may not silently rewrite."""
    by_id = {r.external_id: r for r in rows if r.external_id}
    for chunk in chunks(list(by_id)):
        for values in model.objects.filter(external_id__in=chunk).values_list(
            "external_id", *fields
        ):
            yield by_id[values[0] or ""], values


def write_material(
    validator: Validator, errors: Errors, report: ImportReport, notify: Throttle
) -> None:
    """Find what exists, check it agrees, bulk-insert the rest: all in one transaction."""
    write_all_or_nothing(lambda: _write_locked(validator, errors, report, notify), errors)


def _write_locked(
    validator: Validator, errors: Errors, report: ImportReport, notify: Throttle
) -> None:
    model_pk, new_models = _existing_models(validator)
    report.existing["models"] = len(validator.models) - len(new_models)
    instructions = list(validator.instructions.values())
    _existing_instructions(validator, instructions, errors)
    report.existing["instructions"] = sum(1 for i in instructions if i.pk is not None)
    answers = list(validator.answers.values())
    existing_answers = _existing_answers(validator, answers, model_pk, errors)
    report.existing["answers"] = len(existing_answers)
    if errors:
        return
    notify(READ_SHARE + 30, force=True)

    # The writes: models, then instructions, then answers pointing at both.
    LanguageModel.objects.bulk_create(new_models, batch_size=BATCH_SIZE)
    model_pk.update({(m.name, m.version): m.pk for m in new_models})
    report.created["models"] = len(new_models)

    new_instructions = [i for i in instructions if i.pk is None]
    for chunk in chunks(new_instructions):
        objs = [
            Instruction(
                external_id=i.external_id,
                text=i.text,
                reference_answer=i.reference_answer,
                task_id=i.task_id,
                style_id=i.style_id,
                complexity=i.complexity,
                ethics_flag=i.ethics_flag,
                author=i.author,
                source=i.source,
            )
            for i in chunk
        ]
        Instruction.objects.bulk_create(objs)
        for item, obj in zip(chunk, objs, strict=True):
            item.pk = obj.pk
    report.created["instructions"] = len(new_instructions)
    notify(READ_SHARE + 50, force=True)

    ipk: dict[tuple[str, str], int] = {i.key: i.pk for i in instructions if i.pk is not None}
    new_answers = [a for a in answers if a.key not in existing_answers]
    share = PROGRESS_TOTAL - READ_SHARE - 50
    insert = _copy_answers if connection.vendor == "postgresql" else _bulk_create_answers
    for n, chunk in enumerate(chunks(new_answers), start=1):
        insert(chunk, ipk, model_pk)
        done = min(n * BATCH_SIZE, len(new_answers))
        notify(READ_SHARE + 50 + int(share * done / len(new_answers)))
    report.created["answers"] = len(new_answers)


def _bulk_create_answers(
    chunk: list[AnswerRow],
    ipk: dict[tuple[str, str], int],
    model_pk: dict[tuple[str, str], int],
) -> None:
    Answer.objects.bulk_create(
        [
            Answer(
                external_id=a.external_id,
                instruction_id=ipk[a.instruction_key],
                model_id=model_pk[a.model_key],
                text=a.text,
                text_hash=a.text_hash,
                generation_meta=a.generation_meta,
            )
            for a in chunk
        ]
    )


def _copy_answers(
    chunk: list[AnswerRow],
    ipk: dict[tuple[str, str], int],
    model_pk: dict[tuple[str, str], int],
) -> None:
    """COPY the answers in: their texts are most of the bytes of an import, and an INSERT
    makes the driver quote every one of them in Python; answer pks are not needed back.

    The columns come from Answer's `_meta` (lib.pgcopy), so a new field gets its default or
    fails the first import in a test. psycopg's row encoding ("rows"), not the numpy layout:
    answer texts differ widely in length (numpy pads each to the longest), external ids may be
    NULL and generation_meta is a JSON value per row, none of which the numpy layout carries.
    """
    with connection.cursor() as cursor:
        copy_model_rows(
            cursor.cursor,
            Answer,
            len(chunk),
            {
                "external_id": [a.external_id for a in chunk],
                "instruction_id": [ipk[a.instruction_key] for a in chunk],
                "model_id": [model_pk[a.model_key] for a in chunk],
                "text": [a.text for a in chunk],
                "text_hash": [a.text_hash for a in chunk],
                "generation_meta": [a.generation_meta for a in chunk],
            },
            now=timezone.now(),
            method="rows",
        )


def _existing_models(
    validator: Validator,
) -> tuple[dict[tuple[str, str], int], list[LanguageModel]]:
    """The pks of the file's models that exist (one query), and the unsaved new ones."""
    names = {name for name, _version in validator.models}
    model_pk: dict[tuple[str, str], int] = {
        (m.name, m.version): m.pk for m in LanguageModel.objects.filter(name__in=names)
    }
    new_models = [
        LanguageModel(name=name, version=version, provider=provider)
        for (name, version), provider in validator.models.items()
        if (name, version) not in model_pk
    ]
    return model_pk, new_models


def _existing_instructions(
    validator: Validator, instructions: list[InstructionRow], errors: Errors
) -> None:
    """Set .pk on the file's instructions that exist, by external id or by text and task."""
    for item, (external_id, pk, text, task_id) in _stored_by_external_id(
        Instruction, instructions, "pk", "text", "task_id"
    ):
        if text != item.text or task_id != item.task_id:
            # Material under evaluation is never silently rewritten by a later file.
            errors.add(
                item.row,
                validator._name("instruction" if text != item.text else "task_type"),
                "conflict",
                _("instruction_id “%s” already exists with a different text or task.")
                % external_id,
            )
        item.pk = pk
    by_hash = {i.key: i for i in instructions if not i.external_id}
    # The database compares MD5s of the texts (one scan per chunk), Python then checks the
    # exact text and task.
    wanted = {
        hashlib.md5(i.text.encode("utf-8"), usedforsecurity=False).hexdigest()
        for i in by_hash.values()
    }
    for chunk in chunks(sorted(wanted)):
        candidates = (
            Instruction.objects.annotate(text_md5=MD5("text"))
            .filter(text_md5__in=chunk)
            .order_by("pk")
            .values_list("pk", "text", "task_id")
        )
        for pk, text, task_id in candidates:
            match = by_hash.get(("hash", sha256_hex(f"{task_id}\x1f{text}")))
            if match is not None and match.pk is None:
                match.pk = pk


def _existing_answers(
    validator: Validator,
    answers: list[AnswerRow],
    model_pk: dict[tuple[str, str], int],
    errors: Errors,
) -> set[tuple[Any, ...]]:
    """Keys of the file's answers that exist: by external id, else by natural key."""
    ipk = {i.key: i.pk for i in validator.instructions.values()}
    existing: set[tuple[Any, ...]] = set()
    for item, (external_id, instruction_id, model_id, text_hash) in _stored_by_external_id(
        Answer, answers, "instruction_id", "model_id", "text_hash"
    ):
        same = (
            instruction_id == ipk[item.instruction_key]
            and model_id == model_pk.get(item.model_key)
            and text_hash == item.text_hash
        )
        if not same:
            errors.add(
                item.row,
                validator._name("answer_id"),
                "conflict",
                _("answer_id “%s” already exists with a different instruction, model or text.")
                % external_id,
            )
        existing.add(item.key)
    # Only answers whose instruction and model both exist can exist themselves.
    natural: dict[tuple[int, int, str], AnswerRow] = {}
    for a in answers:
        instruction_pk = ipk[a.instruction_key]
        if a.key in existing or instruction_pk is None or a.model_key not in model_pk:
            continue
        natural[(instruction_pk, model_pk[a.model_key], a.text_hash)] = a
    old_instructions = sorted({key[0] for key in natural})
    for chunk in chunks(sorted({key[2] for key in natural})):
        found_natural = Answer.objects.filter(
            instruction_id__in=old_instructions, text_hash__in=chunk
        ).values_list("instruction_id", "model_id", "text_hash", "external_id")
        for instruction_id, model_id, text_hash, external_id in found_natural:
            answer = natural.get((instruction_id, model_id, text_hash))
            if answer is None:
                continue
            if answer.external_id and external_id and external_id != answer.external_id:
                errors.add(
                    answer.row,
                    validator._name("answer_id"),
                    "conflict",
                    _("This answer already exists under answer_id “%s”.") % external_id,
                )
            existing.add(answer.key)
    return existing
