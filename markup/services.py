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


# The contest JSON's meta fields kept on the text itself (MarkupText.uuid, .test, .year).
CONTEST_META = ("uuid", "test", "year")
_MAX_YEAR = 9999


def _contest_meta(document: MarkupDocument) -> dict[str, Any]:
    """The document's uuid, test and year where given, checked to fit the text's fields
    (MarkupInvalid naming the field otherwise); missing ones are the text's defaults."""
    kept: dict[str, Any] = {}
    for key in ("uuid", "test"):
        value = str(document.meta.get(key) or "").strip()
        if len(value) > 200:
            raise MarkupInvalid(f"meta.{key}", "longer than 200 characters")
        if value:
            kept[key] = value
    year = document.meta.get("year")
    if year is not None:
        if not 1 <= year <= _MAX_YEAR:
            raise MarkupInvalid("meta.year", f"{year} is not a year (1–{_MAX_YEAR})")
        kept["year"] = year
    return kept


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
    kept = _contest_meta(document)
    # The uuid is the text's own (the contest JSON's technical id): our export imported again
    # finds its text by it, whatever the external id.
    text = MarkupText.objects.filter(uuid=kept["uuid"]).first() if "uuid" in kept else None
    created = False
    if text is None:
        text, created = MarkupText.objects.get_or_create(
            external_id=key,
            defaults={
                "text": document.text,
                "subject": subject,
                "meta": {
                    k: v
                    for k, v in document.meta.items()
                    if v not in ("", None) and k not in CONTEST_META
                },
                "classifier_name": classifier_name,
                "classifier_version": classifier_version,
                **kept,
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
    # The subject as the JSON names it (rus, lit, …), whichever spelling came in.
    classifier = load_classifier(text.classifier_name, text.classifier_version)
    meta = {
        **text.meta,
        "uuid": text.uuid,
        "test": text.test,
        "year": text.year,
        "subject": classifier.subject_key(text.subject) or text.subject,
        "expert": markup.author,
    }
    data: dict[str, Any] = {
        "meta": meta,
        "criteria": [{"name": k, "score": v} for k, v in markup.criteria.items()],
        "selections": markup.selections,
        "text": text.text,
    }
    return read_json(data)
