"""Writing guidelines: every save by a supervisor is a new immutable version."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from guidelines.models import ExampleKind, Guideline, GuidelineExample, GuidelineVersion
from panels.models import Panel
from taxonomy.models import Criterion


@dataclass(frozen=True)
class ExampleInput:
    kind: str
    text: str
    explanation: str = ""
    score: int | None = None


def _content(body: str, hard_cases: str, examples: Sequence[ExampleInput]) -> tuple[Any, ...]:
    return (
        body.strip(),
        hard_cases.strip(),
        tuple((e.kind, e.text.strip(), e.explanation.strip(), e.score) for e in examples),
    )


def version_content(version: GuidelineVersion) -> tuple[Any, ...]:
    """What a version says (its text, hard cases and examples), to compare with a new save."""
    examples = [
        ExampleInput(kind=e.kind, text=e.text, explanation=e.explanation, score=e.score)
        for e in version.examples.all()
    ]
    return _content(version.body, version.hard_cases, examples)


def _guideline_locked(panel: Panel, criterion: Criterion | None) -> Guideline:
    """The guideline of (panel, criterion), created if absent, locked for numbering."""
    guideline = Guideline.objects.filter(panel=panel, criterion=criterion).first()
    if guideline is None:
        try:
            with transaction.atomic():
                guideline = Guideline.objects.create(panel=panel, criterion=criterion)
        except IntegrityError:
            # Two supervisors wrote the first version at once: the other one created it.
            guideline = Guideline.objects.get(panel=panel, criterion=criterion)
    # of=self: the current version is read by an outer join, which PostgreSQL does not lock.
    locked = Guideline.objects.select_for_update(of=("self",)).select_related("current")
    return locked.get(pk=guideline.pk)


@transaction.atomic
def guideline_save(
    *,
    panel: Panel,
    criterion: Criterion | None,
    body: str,
    hard_cases: str = "",
    examples: Sequence[ExampleInput] = (),
    change_note: str = "",
    user: Any = None,
) -> tuple[GuidelineVersion, bool]:
    """A new version of the guideline of (panel, criterion); (version, whether one was made).

    Nothing changed since the current version: no version is made and the current one is
    returned, so the history lists real changes only. Old versions are never touched.
    """
    for example in examples:
        if example.kind not in ExampleKind.values:
            raise ValueError(f"unknown example kind: {example.kind!r}")
    guideline = _guideline_locked(panel, criterion)
    current = guideline.current
    if current is not None and version_content(current) == _content(body, hard_cases, examples):
        return current, False
    version = GuidelineVersion.objects.create(
        guideline=guideline,
        number=(current.number if current else 0) + 1,
        body=body.strip(),
        hard_cases=hard_cases.strip(),
        change_note=change_note.strip(),
        author=user if user is not None and user.is_authenticated else None,
    )
    GuidelineExample.objects.bulk_create(
        GuidelineExample(
            version=version,
            position=position,
            kind=example.kind,
            text=example.text.strip(),
            explanation=example.explanation.strip(),
            score=example.score,
        )
        for position, example in enumerate(examples)
    )
    guideline.current = version
    guideline.save(update_fields=["current"])
    return version, True
