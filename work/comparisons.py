"""Side-by-side work (the REPA pairwise kind): its triples, assignments and submissions.

A pair of answers to one instruction is compared on every criterion of a comparison set (REPA:
ten error types and Overall). The unit is the triple (pair, comparison criterion), routed to one
panel with an overlap (REPA: 3); an expert gets one Assignment per pair holding a slot of each
of its triples, so the core's reservation, expiry, queue, locking and the overlap constraints of
`Estimate` serve this kind unchanged.

Placement: each assignment draws `swapped` from the build's seeded generator and keeps it. The
page shows B on the left when it is set, and the submission puts the labels back into the pair's
own orientation (`protocol.pairwise.unplace`), so what is stored never depends on the side shown.
"""

from __future__ import annotations

import random
import secrets
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from material.models import AnswerPair
from panels.selectors import eligible_memberships
from protocol.overlap import MAX_OVERLAP, MIN_OVERLAP
from protocol.pairwise import Label, unplace
from taxonomy.services import comparison_criteria
from work import hooks, kinds
from work.assignments import OPEN_STATUSES, assignment_release, build_lock
from work.models import (
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    Estimate,
    EstimateRevision,
    EstimateStatus,
    Triple,
    TripleKind,
)
from work.services import ScoringClosed, closed_reason

Progress = Callable[[int, int], None]
REPA_OVERLAP = 3
# The free comment of a pair: long enough for a paragraph per error, bounded like a rationale.
MAX_COMMENT_CHARS = 5000


def comparison_triples_build(
    *, panel_id: int, pair_ids: Iterable[int] | None = None, overlap: int = REPA_OVERLAP
) -> int:
    """Route the given pairs (by default every pair not routed yet) to a panel: one triple per
    criterion of the comparison set. Returns how many triples were created.

    A pair that has triples already keeps its panel: a triple is unique per (pair, criterion),
    so the first panel that takes a pair owns its comparison.
    """
    if not MIN_OVERLAP <= overlap <= MAX_OVERLAP:
        raise ValueError(
            _("overlap: must be between %(lo)s and %(hi)s") % {"lo": MIN_OVERLAP, "hi": MAX_OVERLAP}
        )
    criteria = comparison_criteria()
    # Frozen copies (exam and control pairs: their answers are reserved) are never work.
    pairs = AnswerPair.objects.exclude(answer_a__reserved__isnull=False)
    if pair_ids is not None:
        pairs = pairs.filter(pk__in=list(pair_ids))
    with transaction.atomic():
        build_lock()
        routed = set(
            Triple.objects.filter(kind=TripleKind.PAIRWISE, pair__in=pairs).values_list(
                "pair_id", flat=True
            )
        )
        new = [
            Triple(
                kind=TripleKind.PAIRWISE,
                answer_id=answer_a,
                pair_id=pair_id,
                comparison_criterion=criterion,
                group="",
                panel_id=panel_id,
                required_overlap=overlap,
                position=criterion.position,
            )
            for pair_id, answer_a in pairs.values_list("pk", "answer_a_id")
            if pair_id not in routed
            for criterion in criteria
        ]
        Triple.objects.bulk_create(new, batch_size=5000)
    return len(new)


def _eligible(panel_id: int) -> list[int]:
    return list(
        eligible_memberships()
        .filter(panel_id=panel_id)
        .order_by("expert_id")
        .values_list("expert_id", flat=True)
    )


def comparisons_build(
    *,
    panel_id: int,
    route: bool = False,
    pair_ids: Iterable[int] | None = None,
    overlap: int = REPA_OVERLAP,
    seed: int | None = None,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Fill every open slot of the panel's pairs (idempotent); with `route`, first route the
    given pairs (or every pair not routed yet) to the panel with `overlap`.

    The panel's regular build (work.tasks) calls this without `route`, so the places freed by a
    refusal, an expiry or a reassign are handed out again. Each pair goes to `overlap`
    different qualified, active experts of the panel, the least loaded first; an expert who
    ever held the pair (a refusal, an expiry) does not get it again.
    The placement of each new assignment is drawn from a generator seeded with `seed` (a fresh
    random one when not given; the report returns it, so a build can be replayed).
    """
    seed = secrets.randbits(63) if seed is None else seed
    # Placement needs to be reproducible from the stored seed, not unpredictable.
    rng = random.Random(seed)  # noqa: S311
    pair_list = list(pair_ids) if pair_ids is not None else None
    with transaction.atomic():
        build_lock()
        created_triples = (
            comparison_triples_build(panel_id=panel_id, pair_ids=pair_list, overlap=overlap)
            if route
            else 0
        )
        triples = Triple.objects.filter(kind=TripleKind.PAIRWISE, panel_id=panel_id).exclude(
            answer__reserved__isnull=False
        )
        if pair_list is not None:
            triples = triples.filter(pair_id__in=pair_list)
        by_pair: dict[int, list[tuple[int, int]]] = defaultdict(list)
        answer_of: dict[int, int] = {}
        for triple_id, pair_id, answer_id, required in triples.order_by(
            "pair_id", "position"
        ).values_list("pk", "pair_id", "answer_id", "required_overlap"):
            by_pair[pair_id].append((triple_id, required))
            answer_of[pair_id] = answer_id
        taken: dict[int, set[int]] = defaultdict(set)
        for triple_id, slot in Estimate.objects.filter(
            triple__in=[t for rows in by_pair.values() for t, _r in rows]
        ).values_list("triple_id", "slot"):
            taken[triple_id].add(slot)
        held: dict[int, set[int]] = defaultdict(set)
        for pair_id, expert_id in Assignment.objects.filter(
            panel_id=panel_id, pair_id__in=list(by_pair)
        ).values_list("pair_id", "expert_id"):
            held[pair_id].add(expert_id)
        # Who wrote either answer of a pair (the human baseline) never compares it: as if he
        # had held it.
        sides = {
            pk: (a, b)
            for pk, a, b in AnswerPair.objects.filter(pk__in=list(by_pair)).values_list(
                "pk", "answer_a_id", "answer_b_id"
            )
        }
        pair_answers = [a for ab in sides.values() for a in ab]
        authors: dict[int, set[int]] = defaultdict(set)
        for provider in hooks.excluded_experts:
            for answer_id, expert_id in provider(pair_answers):
                authors[answer_id].add(expert_id)
        if authors:
            for pair_id, (a, b) in sides.items():
                held[pair_id] |= authors.get(a, set()) | authors.get(b, set())
        experts = _eligible(panel_id)
        load = dict.fromkeys(experts, 0)
        for expert_id, n in (
            Assignment.objects.filter(expert_id__in=experts, status__in=OPEN_STATUSES)
            .values_list("expert_id")
            .annotate(n=Count("id"))
        ):
            load[expert_id] = n
        deadline = timezone.now() + timedelta(hours=settings.POLLUX["ASSIGNMENT_RESERVATION_HOURS"])
        new_assignments: list[Assignment] = []
        slots_of: list[list[tuple[int, int]]] = []
        for done, (pair_id, rows) in enumerate(sorted(by_pair.items())):
            # Every triple of a pair is held by the same experts (one assignment covers the
            # pair), so the pair's open places are its least filled triple's.
            free = min(required - len(taken[t]) for t, required in rows)
            candidates = sorted(
                (e for e in experts if e not in held[pair_id]), key=lambda e: (load[e], e)
            )
            for expert_id in candidates[: max(free, 0)]:
                slots = []
                for triple_id, required in rows:
                    slot = next(s for s in range(1, required + 1) if s not in taken[triple_id])
                    taken[triple_id].add(slot)
                    slots.append((triple_id, slot))
                new_assignments.append(
                    Assignment(
                        expert_id=expert_id,
                        answer_id=answer_of[pair_id],
                        pair_id=pair_id,
                        panel_id=panel_id,
                        kind=AssignmentKind.WORK,
                        reserved_until=deadline,
                        swapped=rng.random() < 0.5,
                    )
                )
                slots_of.append(slots)
                held[pair_id].add(expert_id)
                load[expert_id] += 1
            if progress is not None and done % 200 == 0:
                progress(done, len(by_pair))
        Assignment.objects.bulk_create(new_assignments, batch_size=2000)
        Estimate.objects.bulk_create(
            [
                Estimate(
                    assignment_id=assignment.pk,
                    triple_id=triple_id,
                    expert_id=assignment.expert_id,
                    slot=slot,
                )
                for assignment, slots in zip(new_assignments, slots_of, strict=True)
                for triple_id, slot in slots
            ],
            batch_size=5000,
        )
    if progress is not None:
        progress(len(by_pair), len(by_pair))
    return {
        "triples_created": created_triples,
        "assignments_created": len(new_assignments),
        "estimates_created": sum(len(s) for s in slots_of),
        "seed": seed,
    }


# ---- the page's rows and the submission ------------------------------------------------------


# REPA's query categories (the No Robots taxonomy, REPA Table 1), as the pairs import carries
# them: shown translated; any other category is the material's own word and shown as it is.
CATEGORY_NAMES = {
    "generation": gettext_lazy("Generation"),
    "open qa": gettext_lazy("Open QA"),
    "brainstorm": gettext_lazy("Brainstorm"),
    "classify": gettext_lazy("Classify"),
    "rewrite": gettext_lazy("Rewrite"),
    "extract": gettext_lazy("Extract"),
    "closed qa": gettext_lazy("Closed QA"),
    "chat": gettext_lazy("Chat"),
    "summarize": gettext_lazy("Summarize"),
}


def category_name(category: str) -> str:
    """A pair's query category in the interface's language ("open_qa", "Open QA": one key)."""
    key = " ".join(category.replace("_", " ").split()).lower()
    return str(CATEGORY_NAMES.get(key, category))


@dataclass
class ComparisonInput:
    """What an expert posted for one pair: the side shown per criterion key, and a comment."""

    labels: dict[str, str] = field(default_factory=dict)
    comment: str = ""


@dataclass
class ComparisonResult:
    ok: bool
    errors: dict[str, list[str]] = field(default_factory=dict)
    form_errors: list[str] = field(default_factory=list)
    kind: str = ""


def comparison_rows(assignment: Assignment) -> list[dict[str, Any]]:
    """The criteria of a pair assignment in order, with the label as the expert sees it."""
    rows = []
    for estimate in (
        Estimate.objects.filter(assignment=assignment)
        .select_related("triple__comparison_criterion")
        .order_by("triple__position")
    ):
        criterion = estimate.triple.comparison_criterion
        assert criterion is not None, "a pair assignment holds pairwise triples only"
        shown = ""
        if estimate.label:
            # Stored in the pair's orientation: shown in this expert's placement.
            shown = unplace(estimate.label, swapped=assignment.swapped).value
        rows.append(
            {
                "key": criterion.key,
                "name": criterion.name,
                "question": criterion.question,
                "label": shown,
                "status": estimate.status,
            }
        )
    return rows


def comparison_item_errors(labels: Mapping[str, str], keys: Iterable[str]) -> dict[str, list[str]]:
    """Exactly one of the four labels for every criterion.

    REPA requires an answer to every criterion; there is no rationale rule (the free comment is
    optional), and a label outside the four options is refused, never mapped.
    """
    errors: dict[str, list[str]] = {}
    valid = {label.value for label in Label}
    for key in keys:
        value = labels.get(key, "")
        if not value:
            errors[key] = [_("Choose one of the four options.")]
        elif value not in valid:
            errors[key] = [_("Unknown option %(value)s.") % {"value": value[:40]}]
    return errors


def comparison_from_post(post: Mapping[str, Any]) -> ComparisonInput:
    """A comparison from the page's POST: fields `label_<key>` and `comment`."""
    labels = {
        name.removeprefix("label_"): str(value).strip()
        for name, value in post.items()
        if name.startswith("label_")
    }
    return ComparisonInput(labels=labels, comment=str(post.get("comment", "")).strip())


@transaction.atomic
def comparison_submit(
    *,
    assignment: Assignment,
    data: ComparisonInput,
    user: Any,
    submission_key: str = "",
    time_spent_ms: int = 0,
) -> ComparisonResult:
    """Store an expert's labels of one pair, put back into the pair's own orientation.

    All criteria or nothing, in one transaction; a retried request with the same submission key
    changes nothing; a later change of a submitted label keeps the old one as a revision.
    """
    locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if locked.task_kind != kinds.PAIRWISE:
        raise ValueError("not a side-by-side assignment")
    reason = closed_reason(locked)
    if reason:
        raise ScoringClosed(reason)
    if submission_key and locked.submission_key == submission_key:
        return ComparisonResult(ok=True, kind=locked.kind)
    estimates = list(
        Estimate.objects.select_for_update(of=("self",))
        .filter(assignment=locked)
        .select_related("triple__comparison_criterion")
    )
    keys = [e.triple.comparison_criterion.key for e in estimates]  # type: ignore[union-attr]
    # The kind's own rule of one item (the pairwise kind's `item_errors`).
    errors = comparison_item_errors(data.labels, keys)
    unknown = sorted(set(data.labels) - set(keys))
    form_errors = [_("Unknown criterion %(key)s.") % {"key": k[:40]} for k in unknown]
    if len(data.comment) > MAX_COMMENT_CHARS:
        form_errors.append(_("comment: at most %(n)s characters.") % {"n": MAX_COMMENT_CHARS})
    if errors or form_errors:
        return ComparisonResult(ok=False, errors=errors, form_errors=form_errors)
    now = timezone.now()
    changed: list[Estimate] = []
    for estimate in estimates:
        key = estimate.triple.comparison_criterion.key  # type: ignore[union-attr]
        label = unplace(data.labels[key], swapped=locked.swapped).value
        if estimate.status == EstimateStatus.SUBMITTED:
            if estimate.label == label:
                continue
            EstimateRevision.objects.create(
                estimate=estimate,
                revision=estimate.revision,
                label=estimate.label,
                changed_by=user if getattr(user, "pk", None) else None,
            )
            estimate.revision += 1
        else:
            estimate.submitted_at = now
        estimate.label = label
        estimate.status = EstimateStatus.SUBMITTED
        changed.append(estimate)
    Estimate.objects.bulk_update(
        changed, ["label", "status", "revision", "submitted_at", "updated_at"]
    )
    locked.status = AssignmentStatus.SUBMITTED
    locked.submitted_at = locked.submitted_at or now
    locked.comment = data.comment
    locked.submission_key = submission_key
    locked.time_spent_ms += max(time_spent_ms, 0)
    locked.save(
        update_fields=["status", "submitted_at", "comment", "submission_key", "time_spent_ms"]
    )
    hook = hooks.on_submitted.get(locked.kind)
    if hook is not None:
        # As the pointwise submission does: an exam pair is graded (quality registers it) once
        # the submission is durable.
        pk = locked.pk
        transaction.on_commit(lambda: hook(pk))
    return ComparisonResult(ok=True, kind=locked.kind)


def comparison_refuse(*, assignment: Assignment, reason: str = "refused") -> None:
    """The expert declines the pair (REPA's Refuse): its open slots go back to the pool and
    the builder never offers it to this expert again."""
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        reason_closed = closed_reason(locked)
        if reason_closed:
            raise ScoringClosed(reason_closed)
        if locked.status == AssignmentStatus.SUBMITTED:
            raise ScoringClosed(_("This pair is already submitted."))
        if locked.kind == AssignmentKind.EXAM:
            # A released exam item would leave its attempt open for ever (never graded).
            raise ScoringClosed(_("An exam pair cannot be refused."))
        assignment_release(assignment=locked, reason=reason)


@transaction.atomic
def comparison_save_draft(*, assignment: Assignment, key: str, shown: str) -> Estimate:
    """Keep one criterion's choice before the pair is saved (autosave): a draft, stored in the
    pair's orientation like a submitted label. A submitted label is changed only by a save.

    Raises KeyError for a criterion the assignment does not hold, ScoringClosed when closed.
    """
    locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
    reason = closed_reason(locked)
    if reason:
        raise ScoringClosed(reason)
    estimate = (
        Estimate.objects.select_for_update()
        .filter(assignment=locked, triple__comparison_criterion__key=key)
        .first()
    )
    if estimate is None:
        raise KeyError(key)
    if estimate.status == EstimateStatus.SUBMITTED:
        return estimate
    estimate.label = unplace(shown, swapped=locked.swapped).value
    estimate.status = EstimateStatus.DRAFT
    estimate.save(update_fields=["label", "status", "updated_at"])
    if locked.status == AssignmentStatus.ASSIGNED:
        locked.status = AssignmentStatus.IN_PROGRESS
        locked.started_at = timezone.now()
        locked.save(update_fields=["status", "started_at"])
    return estimate
