"""Span markup as expert work: assigning texts to a panel's experts, their drafts and
submissions, and the third markup when two independent markups diverge (ПРО//ЧТЕНИЕ: two experts
mark every text, a third one a text they disagree on).

An assignment is a DRAFT `Markup` of the text with the expert, the panel and a role
(independent or third); the expert's page saves drafts into it and submits it once. Work that
belongs to no answer of the material (a school essay is not an LLM answer) therefore lives here
rather than in work.Assignment; docs/spans.md says what this kind shares with the core and what
it does not yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from markup.models import Markup, MarkupRole, MarkupSource, MarkupStatus, MarkupText
from markup.services import markup_document
from panels.models import Expert, Panel
from panels.selectors import eligible_memberships
from protocol.markup_classifier import load_classifier
from protocol.markup_criteria import ESSAY_CRITERIA, EssayCriterion
from protocol.markup_format import MarkupDocument, MarkupFormatError
from protocol.markup_json import MAX_FIELD_CHARS, read_selections, to_json, unstorable
from protocol.markup_scores import (
    ENTERED_CRITERIA,
    ComputedScores,
    computed_scores,
    disagreements,
    third_check_reasons,
)
from protocol.markup_validation import ValidationIssue, validate
from quality.markup import markup_agreement

INDEPENDENT_OVERLAP = 2
# Bounds of what a page may send: a long essay has a few hundred fragments at most.
MAX_TIME_MS = 24 * 3600 * 1000


class MarkupRefused(ValueError):
    """A draft or submission refused: `field` names where (`selections[3].type`, `time_ms`);
    `issues` are the validation issues of a markup that parsed but breaks the rules."""

    def __init__(self, field: str, message: str, issues: Sequence[ValidationIssue] = ()) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.issues = list(issues)


def divergence_threshold() -> float:
    """M(X, Y) in percent below which two independent markups call for a third expert
    (settings.POLLUX["MARKUP_DIVERGENCE"]; the regulations leave the value to the organisers)."""
    return float(settings.POLLUX["MARKUP_DIVERGENCE"])


def _members(panel: Panel) -> list[int]:
    """The experts who may get the panel's texts: qualified, not paused, with an account."""
    return list(
        eligible_memberships()
        .filter(panel=panel)
        .order_by("expert_id")
        .values_list("expert_id", flat=True)
    )


def _open_load(expert_ids: Iterable[int]) -> dict[int, int]:
    counts = (
        Markup.objects.filter(expert_id__in=list(expert_ids), status=MarkupStatus.DRAFT)
        .values("expert_id")
        .annotate(n=Count("pk"))
    )
    return {row["expert_id"]: row["n"] for row in counts}


@dataclass(frozen=True)
class AssignResult:
    created: int
    texts: int
    short: int  # assignments that could not be made: too few experts left for a text


@transaction.atomic
def markup_assign(
    panel: Panel, *, text_ids: Iterable[int] | None = None, overlap: int = INDEPENDENT_OVERLAP
) -> AssignResult:
    """Give each text (default: every text) `overlap` independent expert markups from the
    panel's members, least-loaded expert first (ties by id, so a rerun is deterministic).
    A text's existing expert markups of the independent role count towards the overlap, from any
    panel, and their experts are not asked again; rerunning assigns only what is missing."""
    if not 1 <= overlap <= 5:
        raise MarkupRefused("overlap", f"{overlap} is not between 1 and 5")
    members = _members(panel)
    texts = MarkupText.objects.order_by("pk")
    if text_ids is not None:
        texts = texts.filter(pk__in=list(text_ids))
    # Lock the texts so two concurrent runs cannot both fill the same gap.
    text_list = list(texts.select_for_update())
    load = _open_load(members)
    taken: dict[int, set[int]] = {}
    independent: dict[int, int] = {}
    for text_id, expert_id, role in Markup.objects.filter(
        text__in=text_list, expert__isnull=False
    ).values_list("text_id", "expert_id", "role"):
        taken.setdefault(text_id, set()).add(expert_id)
        if role in (MarkupRole.INDEPENDENT, ""):
            independent[text_id] = independent.get(text_id, 0) + 1
    created: list[Markup] = []
    short = 0
    for text in text_list:
        missing = overlap - independent.get(text.pk, 0)
        if missing <= 0:
            continue
        free = [e for e in members if e not in taken.get(text.pk, set())]
        free.sort(key=lambda e: (load.get(e, 0), e))
        chosen = free[:missing]
        short += missing - len(chosen)
        for expert_id in chosen:
            load[expert_id] = load.get(expert_id, 0) + 1
            created.append(_draft(text, expert_id, panel, MarkupRole.INDEPENDENT))
    Markup.objects.bulk_create(created)
    return AssignResult(created=len(created), texts=len(text_list), short=short)


def _draft(text: MarkupText, expert_id: int, panel: Panel, role: str) -> Markup:
    return Markup(
        text=text,
        source=MarkupSource.EXPERT,
        expert_id=expert_id,
        author=_pseudonym(expert_id),
        selections=[],
        status=MarkupStatus.DRAFT,
        panel=panel,
        role=role,
    )


def _pseudonym(expert_id: int) -> str:
    return str(Expert.objects.filter(pk=expert_id).values_list("pseudonym", flat=True).first())


def _document(markup: Markup, selections: Any) -> MarkupDocument:
    """The page's selections read strictly against the stored text (the kind's reader)."""
    try:
        document: MarkupDocument = read_selections(
            selections, text=markup.text.text, subject=markup.text.subject
        )
    except MarkupFormatError as error:
        raise MarkupRefused(error.field, error.message) from error
    return document


def essay_criteria(text: MarkupText) -> dict[str, int]:
    """The criteria an expert scores beside this text's markup, with their maxima (none for a
    type the regulations give no criteria for)."""
    classifier = load_classifier(text.classifier_name, text.classifier_version)
    return ENTERED_CRITERIA.get(classifier.subject_key(text.subject) or "", {})


def essay_criteria_described(text: MarkupText) -> tuple[EssayCriterion, ...]:
    """The same criteria with their names and descriptions, in the regulations' order."""
    classifier = load_classifier(text.classifier_name, text.classifier_version)
    return ESSAY_CRITERIA.get(classifier.subject_key(text.subject) or "", ())


def _scores(
    text: MarkupText, criteria: Any, rationales: Any
) -> tuple[dict[str, int], dict[str, str]]:
    """The page's criterion scores and rationales, read strictly: only the essay type's
    criteria, integer scores (their range is checked on submission), bounded texts."""
    allowed = essay_criteria(text)
    criteria = {} if criteria is None else criteria
    rationales = {} if rationales is None else rationales
    if not isinstance(criteria, dict):
        raise MarkupRefused("criteria", "an object expected")
    if not isinstance(rationales, dict):
        raise MarkupRefused("rationales", "an object expected")
    scores: dict[str, int] = {}
    for name, value in criteria.items():
        if name not in allowed:
            raise MarkupRefused(f"criteria.{name}", f"not a criterion of {text.subject} essays")
        if value is None or value == "":
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise MarkupRefused(f"criteria.{name}", "an integer expected")
        scores[name] = value
    notes: dict[str, str] = {}
    for name, value in rationales.items():
        if name not in allowed:
            raise MarkupRefused(f"rationales.{name}", f"not a criterion of {text.subject} essays")
        if not isinstance(value, str):
            raise MarkupRefused(f"rationales.{name}", "a string expected")
        if len(value) > MAX_FIELD_CHARS:
            raise MarkupRefused(f"rationales.{name}", f"longer than {MAX_FIELD_CHARS} characters")
        if unstorable(value):
            raise MarkupRefused(f"rationales.{name}", "contains a NUL or a lone surrogate")
        if value.strip():
            notes[name] = value.strip()
    return scores, notes


def _score_issues(
    text: MarkupText, scores: Mapping[str, int], notes: Mapping[str, str]
) -> list[ValidationIssue]:
    """On submission: every criterion of the essay type scored within its range, each with a
    rationale (every score needs one, as everywhere on the platform)."""
    issues = []
    for name, top in essay_criteria(text).items():
        if name not in scores:
            issues.append(ValidationIssue("criterion_missing", f"{name}: no score"))
        elif not 0 <= scores[name] <= top:
            issues.append(
                ValidationIssue("criterion_range", f"{name}: {scores[name]} is not 0…{top}")
            )
        if name not in notes:
            issues.append(ValidationIssue("rationale_missing", f"{name}: no rationale"))
    return issues


def score_check(markup: Markup) -> tuple[ComputedScores | None, dict[str, int]]:
    """The criteria the essay type's formula computes from the markup, and those the expert
    entered differently (criterion → computed value): flagged on the page and the list."""
    text = markup.text
    try:
        document = markup_document(markup)
    except MarkupFormatError:
        return None, {}
    computed = computed_scores(
        document, load_classifier(text.classifier_name, text.classifier_version)
    )
    if computed is None:
        return None, {}
    return computed, disagreements(markup.criteria, computed)


def _time(time_ms: Any) -> int:
    if isinstance(time_ms, bool) or not isinstance(time_ms, int) or time_ms < 0:
        raise MarkupRefused("time_ms", "a non-negative integer expected")
    return min(time_ms, MAX_TIME_MS)


def _locked_draft(markup_id: int) -> Markup:
    return Markup.objects.select_for_update().select_related("text").get(pk=markup_id)


@transaction.atomic
def markup_save_draft(
    markup: Markup,
    selections: Any,
    *,
    time_ms: Any = 0,
    criteria: Any = None,
    rationales: Any = None,
) -> Markup:
    """Keep the page's work in progress. A draft may break the classifier's rules (the expert
    is still choosing a code, a score is still missing), but it must be readable: a malformed
    one is refused whole."""
    document = _document(markup, selections)
    scores, notes = _scores(markup.text, criteria, rationales)
    spent = _time(time_ms)
    locked = _locked_draft(markup.pk)
    if locked.status != MarkupStatus.DRAFT:
        raise MarkupRefused("status", "this markup is submitted; a draft is no longer kept")
    locked.selections = to_json(document)["selections"]
    locked.criteria = scores
    locked.rationales = notes
    locked.time_spent_ms = max(locked.time_spent_ms, spent)
    locked.save(
        update_fields=["selections", "criteria", "rationales", "time_spent_ms", "updated_at"]
    )
    return locked


@dataclass(frozen=True)
class SubmitResult:
    markup: Markup
    repeated: bool  # the same submission key again (a retried request): nothing changed
    third: Markup | None  # the third markup asked for, when this one completed a divergent pair


def markup_submit(
    markup: Markup,
    selections: Any,
    *,
    time_ms: Any = 0,
    key: str = "",
    criteria: Any = None,
    rationales: Any = None,
) -> SubmitResult:
    """Submit an assigned markup: validated by the classifier's rules and, for an essay type
    with criteria, every criterion scored with a rationale (every issue reported, nothing stored
    on refusal); once. A retry with the same key answers as the first did. Scores that differ
    from the formula's are accepted and flagged (score_check), not refused: the expert may know
    better than the formula, and the disagreement is what a supervisor looks at."""
    if len(key) > 64 or unstorable(key):
        raise MarkupRefused("key", "at most 64 characters of text")
    document = _document(markup, selections)
    scores, notes = _scores(markup.text, criteria, rationales)
    spent = _time(time_ms)
    text = markup.text
    issues: list[ValidationIssue] = validate(
        document, load_classifier(text.classifier_name, text.classifier_version)
    )
    issues += _score_issues(text, scores, notes)
    if issues:
        first = issues[0]
        field = "(document)" if first.fragment is None else f"selections[{first.fragment}]"
        if first.kind.startswith(("criterion", "rationale")):
            field = "criteria"
        raise MarkupRefused(field, f"{first.kind}: {first.message}", issues)
    with transaction.atomic():
        # The text first: two experts submitting the text's last two independent markups at once
        # must not each see only one submitted markup and both skip the third-expert check.
        MarkupText.objects.select_for_update().filter(pk=markup.text_id).first()
        locked = _locked_draft(markup.pk)
        if locked.status == MarkupStatus.SUBMITTED:
            if key and locked.submission_key == key:
                return SubmitResult(locked, repeated=True, third=None)
            raise MarkupRefused("status", "this markup is already submitted")
        locked.selections = to_json(document)["selections"]
        locked.criteria = scores
        locked.rationales = notes
        locked.time_spent_ms = max(locked.time_spent_ms, spent)
        locked.status = MarkupStatus.SUBMITTED
        locked.submitted_at = timezone.now()
        locked.submission_key = key
        locked.save()
        third = third_if_divergent(locked.text) if locked.role == MarkupRole.INDEPENDENT else None
    return SubmitResult(locked, repeated=False, third=third)


def independent_pair(text: MarkupText) -> list[Markup]:
    """The text's first two submitted independent expert markups (fewer until submitted)."""
    return list(
        text.markups.filter(
            source=MarkupSource.EXPERT, role=MarkupRole.INDEPENDENT, status=MarkupStatus.SUBMITTED
        ).order_by("submitted_at", "pk")[:2]
    )


def independent_agreement(text: MarkupText) -> float | None:
    """M between the text's first two submitted independent expert markups, the lower of
    M(X, Y) and M(Y, X) (M is not symmetric: M3–M6 divide by the first markup's fragments; the
    lower one is the conservative reading of "they diverge"); None until two are submitted."""
    return _agreement(text, independent_pair(text))


def _agreement(text: MarkupText, pair: list[Markup]) -> float | None:
    if len(pair) < 2:
        return None
    x, y = (markup_document(m).fragments for m in pair)
    return markup_agreement(x, y, text.text)


def divergence_reasons(text: MarkupText, threshold: float | None = None) -> list[str]:
    """Why the two independent markups call for a third: their agreement M below the threshold
    (the issue's rule), or the regulations' score conditions for the essay type (Appendix 3,
    protocol.markup_scores.third_check_reasons). Empty until both are submitted."""
    pair = independent_pair(text)
    if len(pair) < 2:
        return []
    agreement = _agreement(text, pair)  # the pair already read: not read and matched again
    limit = divergence_threshold() if threshold is None else threshold
    reasons = []
    if agreement is not None and agreement < limit:
        reasons.append(f"M = {agreement:.1f} % < {limit:g} %")
    classifier = load_classifier(text.classifier_name, text.classifier_version)
    subject = classifier.subject_key(text.subject) or ""
    reasons += third_check_reasons(subject, pair[0].criteria, pair[1].criteria)
    return reasons


def third_if_divergent(text: MarkupText, threshold: float | None = None) -> Markup | None:
    """Assign a third expert when the two independent markups diverge (divergence_reasons):
    from the panel of the independent markups, least loaded, not one who marked the text. None
    when they agree, when a third is already there, or when no expert is left (the text then
    shows as divergent in the list)."""
    reasons = divergence_reasons(text, threshold)
    if not reasons:
        return None
    if text.markups.filter(role=MarkupRole.THIRD).exists():
        return None
    first = (
        text.markups.filter(role=MarkupRole.INDEPENDENT, panel__isnull=False)
        .select_related("panel")
        .order_by("pk")
        .first()
    )
    if first is None or first.panel is None:
        return None
    taken = set(text.markups.filter(expert__isnull=False).values_list("expert_id", flat=True))
    members = [e for e in _members(first.panel) if e not in taken]
    if not members:
        return None
    load = _open_load(members)
    expert_id = min(members, key=lambda e: (load.get(e, 0), e))
    third = _draft(text, expert_id, first.panel, MarkupRole.THIRD)
    third.note = "; ".join(reasons)[:500]
    third.save()
    return third


def expert_queue(expert_id: int) -> list[Markup]:
    """An expert's markup work: open drafts first, then what he submitted (newest first)."""
    return list(
        Markup.objects.filter(expert_id=expert_id, panel__isnull=False)
        .select_related("text", "panel")
        .order_by(
            # Drafts ("draft" < "submitted") before submitted ones.
            "status",
            "-submitted_at",
            "pk",
        )
    )


def earlier_markups(markup: Markup) -> list[Markup]:
    """What a third expert sees: the text's submitted independent markups (their authors are
    shown as Expert 1 and 2, never by name)."""
    if markup.role != MarkupRole.THIRD:
        return []
    return list(
        markup.text.markups.filter(
            Q(role=MarkupRole.INDEPENDENT), status=MarkupStatus.SUBMITTED
        ).order_by("submitted_at", "pk")[:2]
    )


@dataclass(frozen=True)
class MarkupQueueSection:
    title: str
    open: int
    done: int
    url: str


def queue_section(expert_id: int) -> MarkupQueueSection | None:
    """The expert's markup work for his queue page (work.hooks.queue_sections); None without
    any. Paused panels' texts are not counted as open: they cannot be opened."""
    counts = dict(
        Markup.objects.filter(expert_id=expert_id, panel__isnull=False)
        .exclude(
            status=MarkupStatus.DRAFT,
            panel__memberships__expert_id=expert_id,
            panel__memberships__is_paused=True,
        )
        .values_list("status")
        .annotate(n=Count("pk"))
    )
    if not counts:
        return None
    return MarkupQueueSection(
        title=str(_("Span markup of texts")),
        open=counts.get(MarkupStatus.DRAFT, 0),
        done=counts.get(MarkupStatus.SUBMITTED, 0),
        url=reverse("markup_work"),
    )
