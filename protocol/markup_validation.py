"""Validation of a markup against its classifier (Appendix 3, sections 1.2–1.3): codes allowed
for the subject, ИСП with a correction, fragments that nest but never cross, tags on at least
two fragments, offsets within the text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from protocol.markup_classifier import GROUPS, Classifier, load_classifier
from protocol.markup_format import TAG_PATTERN, MarkupDocument
from protocol.spans import Fragment


@dataclass(frozen=True)
class ValidationIssue:
    """One reason a markup cannot be saved: `kind` a stable key, `fragment` the index of the
    fragment concerned (None: the document)."""

    kind: str
    message: str
    fragment: int | None = None


def validate(
    document: MarkupDocument, classifier: Classifier | None = None
) -> list[ValidationIssue]:
    """The checks on saving a markup: codes known and allowed for the subject, group and
    subtype as the classifier says, ИСП with a correction, spans within the text (non-empty,
    without whitespace at an edge), fragments nested but never crossing, every tag on at least
    two fragments."""
    classifier = classifier or load_classifier()
    issues: list[ValidationIssue] = []
    subject = str(document.meta.get("subject") or "")
    subject_known = classifier.subject_key(subject) is not None
    if not subject_known:
        issues.append(ValidationIssue("unknown_subject", f"unknown subject {subject!r}"))
    text = document.text
    for i, f in enumerate(document.fragments):
        kind = classifier.get(f.code)
        if not f.code.strip():
            issues.append(ValidationIssue("missing_code", "a fragment without a code", i))
        elif kind is None:
            issues.append(ValidationIssue("unknown_code", f"unknown code {f.code!r}", i))
        else:
            if subject_known and not classifier.allowed(f.code, subject):
                issues.append(
                    ValidationIssue(
                        "code_not_allowed", f"{kind.code} is not used in {subject} texts", i
                    )
                )
            if f.group != kind.group:
                issues.append(
                    ValidationIssue("wrong_group", f"{kind.code} is in the group {kind.group}", i)
                )
            if f.subtype and kind.subtype(f.subtype) is None:
                issues.append(
                    ValidationIssue(
                        "unknown_subtype", f"{kind.code} has no subtype {f.subtype!r}", i
                    )
                )
            if kind.needs_correction and not f.correction.strip():
                issues.append(
                    ValidationIssue("correction_required", f"{kind.code} needs a correction", i)
                )
        if f.group not in GROUPS:
            issues.append(ValidationIssue("wrong_group", f"unknown group {f.group!r}", i))
        if (f.start is None) != (f.end is None):
            issues.append(ValidationIssue("bad_span", "a span needs both a start and an end", i))
        elif f.located:
            assert f.start is not None and f.end is not None
            if not 0 <= f.start < f.end <= len(text):
                issues.append(
                    ValidationIssue(
                        "span_outside_text",
                        f"span [{f.start}, {f.end}) is empty or outside the text ({len(text)})",
                        i,
                    )
                )
            elif text[f.start].isspace() or text[f.end - 1].isspace():
                issues.append(
                    ValidationIssue("span_whitespace", "a span begins or ends with whitespace", i)
                )
        if f.tag and not TAG_PATTERN.fullmatch(f.tag):
            issues.append(ValidationIssue("bad_tag", f"tag {f.tag!r} is not letters or digits", i))
    issues.extend(_crossings(document.fragments))
    uses: dict[str, list[int]] = {}
    for i, f in enumerate(document.fragments):
        if f.tag:
            uses.setdefault(f.tag, []).append(i)
    for tag, where in uses.items():
        if len(where) < 2:
            issues.append(
                ValidationIssue("tag_used_once", f"tag {tag!r} links no other fragment", where[0])
            )
    return issues


def _crossings(fragments: Sequence[Fragment]) -> list[ValidationIssue]:
    """Pairs of fragments that overlap without one containing the other (one issue per
    fragment that crosses an enclosing one, found with a stack in O(n log n))."""
    spans = sorted(
        (f.start, -f.end, i)
        for i, f in enumerate(fragments)
        if f.start is not None and f.end is not None and f.start < f.end
    )
    issues = []
    stack: list[tuple[int, int]] = []  # (end, index) of the open enclosing spans
    for start, neg_end, i in spans:
        end = -neg_end
        while stack and stack[-1][0] <= start:
            stack.pop()
        if stack and end > stack[-1][0]:
            other = stack[-1][1]
            issues.append(
                ValidationIssue(
                    "crossing", f"fragments {other} and {i} cross (nest or separate them)", i
                )
            )
            continue
        stack.append((end, i))
    return issues
