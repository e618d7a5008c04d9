"""Storing span markups: a protocol document, validated against its classifier, becomes a
MarkupText (found again by its external id) and a Markup, or nothing at all."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import transaction

from markup.models import Markup, MarkupSource, MarkupStatus, MarkupText
from panels.models import Expert
from protocol.markup_classifier import load_classifier
from protocol.markup_format import MarkupDocument
from protocol.markup_json import read_json, to_json
from protocol.markup_validation import validate


class MarkupInvalid(ValueError):
    """A markup refused: `field` names where (`meta.subject`, `selections[2]`, `text`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def text_external_id(document: MarkupDocument) -> str:
    """The text's id: the document's uuid or id, else a hash of the text (the same text
    imported twice is one text)."""
    for key in ("uuid", "id"):
        value = str(document.meta.get(key) or "").strip()
        if value:
            return value
    return "sha256:" + hashlib.sha256(document.text.encode()).hexdigest()[:32]


def _refuse_invalid(document: MarkupDocument, classifier_name: str, version: str) -> None:
    issues = validate(document, load_classifier(classifier_name, version))
    if not issues:
        return
    first = issues[0]
    field = "meta.subject" if first.kind == "unknown_subject" else "(document)"
    if first.fragment is not None:
        field = f"selections[{first.fragment}]"
    more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
    raise MarkupInvalid(field, f"{first.kind}: {first.message}{more}")


@transaction.atomic
def markup_store(
    document: MarkupDocument,
    *,
    source: str = MarkupSource.EXPERT,
    author: str = "",
    expert: Expert | None = None,
    external_id: str | None = None,
    status: str = MarkupStatus.SUBMITTED,
    classifier_name: str = "prochtenie",
    classifier_version: str = "2020",
) -> Markup:
    """Store one markup of `document`'s text. Invalid (by protocol.markup_validation, or a text
    that differs from the stored one of the same id) raises MarkupInvalid and writes nothing."""
    if source not in MarkupSource.values:
        raise MarkupInvalid("source", f"{source!r} is not one of {', '.join(MarkupSource.values)}")
    if status not in MarkupStatus.values:
        raise MarkupInvalid("status", f"{status!r} is not one of {', '.join(MarkupStatus.values)}")
    _refuse_invalid(document, classifier_name, classifier_version)
    label = author or str(document.meta.get("expert") or "").strip()
    if expert is not None and not label:
        label = expert.pseudonym
    if not label:
        raise MarkupInvalid("author", "an expert's or a system's name is needed")
    key = external_id or text_external_id(document)
    subject = str(document.meta.get("subject") or "")
    text, created = MarkupText.objects.get_or_create(
        external_id=key,
        defaults={
            "text": document.text,
            "subject": subject,
            "meta": {k: v for k, v in document.meta.items() if v not in ("", None)},
            "classifier_name": classifier_name,
            "classifier_version": classifier_version,
        },
    )
    if not created:
        if text.text != document.text:
            raise MarkupInvalid("text", f"differs from the stored text {key!r}")
        if (text.classifier_name, text.classifier_version) != (classifier_name, classifier_version):
            raise MarkupInvalid(
                "classifier",
                f"text {key!r} is marked up with {text.classifier_name} {text.classifier_version}",
            )
    return Markup.objects.create(
        text=text,
        source=source,
        expert=expert,
        author=label,
        selections=to_json(document)["selections"],
        criteria=dict(document.criteria),
        status=status,
    )


def markup_document(markup: Markup) -> MarkupDocument:
    """A stored markup as a protocol document (read back through the strict JSON reader)."""
    text = markup.text
    data: dict[str, Any] = {
        "meta": {**text.meta, "subject": text.subject, "expert": markup.author},
        "criteria": [{"name": k, "score": v} for k, v in markup.criteria.items()],
        "selections": markup.selections,
        "text": text.text,
    }
    return read_json(data)
