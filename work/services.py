"""Writes of the scoring flow: opening an assignment, drafts, submission (idempotent)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone
from django.utils.translation import gettext as _

from panels.models import Membership
from protocol.critical import is_violation
from protocol.rationale import MAX_LENGTH, RationaleRule, rationale_errors
from taxonomy.models import Criterion, CriterionGroup, Rubric
from work import hooks, kinds, review
from work.entries import EntryPart, split_items, time_shares
from work.models import (
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    Estimate,
    EstimateRevision,
    EstimateStatus,
)


class ScoringClosed(Exception):
    """The assignment can no longer be changed (released, locked); the message says why."""


class DraftRefused(ValueError):
    """A draft that could never be submitted (a score off the scale, a too long rationale).

    `field` names the offending input ("score" or "rationale"); the message says why.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass
class ScoreInput:
    triple_id: int
    score: int | None = None
    is_na: bool = False
    rationale: str = ""
    time_spent_ms: int = 0


@dataclass
class SubmitResult:
    ok: bool
    errors: dict[int, list[str]] = field(default_factory=dict)
    form_errors: list[str] = field(default_factory=list)
    already_submitted: bool = False
    critical_stop: bool = False
    # The assignment's kind on success: the page routes an exam item's "next" within the exam.
    kind: str = ""


def _extend_reservation(assignment: Assignment) -> None:
    hours = settings.POLLUX["ASSIGNMENT_RESERVATION_HOURS"]
    assignment.reserved_until = timezone.now() + timedelta(hours=hours)


def closed_reason(assignment: Assignment) -> str:
    """Why the assignment cannot be changed any more ("" while it is open)."""
    if assignment.status == AssignmentStatus.RELEASED:
        if (assignment.drafts_backup or {}).get("_reason") in ("skipped", "flagged"):
            return _("You skipped this answer: it goes to another expert.")
        return _(
            "Your reservation of this answer expired and it went back to the pool. "
            "Your text is kept below; copy it if you need it."
        )
    if assignment.locked:
        return _("The supervisor has locked this batch: scores can no longer change.")
    # A pause is per panel: the expert's work of that panel waits until the supervisor resumes
    # it (exams are their own flow and stay open).
    if assignment.kind != AssignmentKind.EXAM and _membership_paused(assignment):
        return _("Your work in this panel is paused by its supervisor.")
    return ""


def membership_paused() -> Exists:
    """Annotation: is the assignment's expert paused in its panel (read with the row itself)."""

    return Exists(
        Membership.objects.filter(
            expert_id=OuterRef("expert_id"), panel_id=OuterRef("panel_id"), is_paused=True
        )
    )


def assignment_paused(assignment: Assignment) -> bool:
    """Whether the assignment's expert is paused in its panel (then its work is not opened)."""
    return assignment.kind != AssignmentKind.EXAM and _membership_paused(assignment)


def _membership_paused(assignment: Assignment) -> bool:
    paused = getattr(assignment, "membership_paused", None)
    if paused is None:
        paused = Membership.objects.filter(
            expert_id=assignment.expert_id, panel_id=assignment.panel_id, is_paused=True
        ).exists()
    return bool(paused)


def not_rubric_work_reason(assignment: Assignment) -> str:
    """Why the rubric scoring flow (this module, its page and the scoring API) refuses the
    assignment: "" for rubric work. A side-by-side assignment (one per pair, `pair` set) is
    labelled through work.comparisons; its triples have no criterion or rubric to score."""
    return kinds.of(assignment).rubric_refusal(assignment.pk)


def _ensure_open(assignment: Assignment) -> None:
    reason = not_rubric_work_reason(assignment) or closed_reason(assignment)
    if reason:
        raise ScoringClosed(reason)


def assignment_open(*, assignment: Assignment) -> Assignment:
    """Mark an assignment as started and extend its reservation (the expert is active).

    One conditional UPDATE: it changes the row only while it is still assigned (PostgreSQL
    re-checks the condition on the newest row version after waiting for a concurrent writer),
    so it needs no row lock or transaction of its own. The given instance is updated in place
    and returned, keeping the related objects the page already loaded.
    """
    now = timezone.now()
    until = now + timedelta(hours=settings.POLLUX["ASSIGNMENT_RESERVATION_HOURS"])
    started = Assignment.objects.filter(pk=assignment.pk, status=AssignmentStatus.ASSIGNED).update(
        status=AssignmentStatus.IN_PROGRESS, started_at=now, reserved_until=until
    )
    if started:
        assignment.status = AssignmentStatus.IN_PROGRESS
        assignment.started_at = now
        assignment.reserved_until = until
    else:
        # Someone changed it meanwhile (a draft, a release): show what is stored now.
        assignment.refresh_from_db()
    return assignment


@transaction.atomic
def estimate_save_draft(
    *, assignment: Assignment, item: ScoreInput, onto_submitted: bool = True
) -> Estimate:
    """Store what the expert typed so far: nothing is lost on reload, crash or timeout.

    The page edits a submitted assignment in place, so its drafts of an edit are kept aside
    (`drafts_backup`) until the next submission. A caller with no such edit (the API, whose
    only change of a submitted assignment is a new submission) passes `onto_submitted=False`:
    its draft onto a submitted assignment is refused (ScoringClosed), nothing stored.
    """
    assignment = (
        Assignment.objects.select_for_update()
        .annotate(membership_paused=membership_paused())
        .get(pk=assignment.pk)
    )
    _ensure_open(assignment)
    if not onto_submitted and assignment.status == AssignmentStatus.SUBMITTED:
        raise ScoringClosed(
            _("This assignment is submitted: a draft is not stored; submit it again to change it.")
        )
    estimate = (
        assignment.estimates.select_for_update(of=("self",))
        .select_related("triple__rubric", "triple__criterion")
        .get(triple_id=item.triple_id)
    )
    _check_draft(estimate, item)
    if estimate.status in (EstimateStatus.PENDING, EstimateStatus.DRAFT):
        estimate.status = EstimateStatus.DRAFT
    estimate.score = item.score
    estimate.is_na = item.is_na
    estimate.rationale = item.rationale
    estimate.time_spent_ms = max(estimate.time_spent_ms, item.time_spent_ms)
    if estimate.status == EstimateStatus.SUBMITTED:
        # A submitted score is only changed by a new submission (which keeps history); a draft
        # of an edit is remembered separately.
        backup = dict(assignment.drafts_backup or {})
        backup[str(item.triple_id)] = {
            "score": item.score,
            "is_na": item.is_na,
            "rationale": item.rationale,
        }
        assignment.drafts_backup = backup
        _extend_reservation(assignment)
        assignment.save(update_fields=["drafts_backup", "reserved_until"])
        return Estimate.objects.get(pk=estimate.pk)
    estimate.save(update_fields=["status", "score", "is_na", "rationale", "time_spent_ms"])
    if assignment.status == AssignmentStatus.ASSIGNED:
        assignment.status = AssignmentStatus.IN_PROGRESS
        assignment.started_at = timezone.now()
    _extend_reservation(assignment)
    assignment.save(update_fields=["status", "started_at", "reserved_until"])
    return estimate


def _criterion(estimate: Estimate) -> Criterion:
    criterion = estimate.triple.criterion
    # Only rubric work reaches this module (_ensure_open refuses a pair assignment; exam and
    # control copies are rubric work), and a pointwise triple always has its criterion and
    # rubric (the check constraint triple_fields_of_kind).
    assert criterion is not None, f"triple {estimate.triple_id} is not rubric work"
    return criterion


def _rubric(estimate: Estimate) -> Rubric:
    rubric = estimate.triple.rubric
    assert rubric is not None, f"triple {estimate.triple_id} is not rubric work"  # see _criterion
    return rubric


def _score_errors(estimate: Estimate, item: ScoreInput) -> list[str]:
    """A score that is not on the criterion's scale (or NA where the criterion has none)."""
    if item.is_na:
        if not _criterion(estimate).allows_na:
            return [_("This criterion cannot be marked as not applicable.")]
        return []
    values = _rubric(estimate).values
    if item.score is not None and item.score not in values:
        return [_("The score must be one of %(values)s.") % {"values": ", ".join(map(str, values))}]
    return []


def _check_draft(estimate: Estimate, item: ScoreInput) -> None:
    """Drafts obey the rules a submission could never pass: the scale and the length.

    Short or non-Russian text is fine in a draft (the expert is still typing); a score off
    the scale or a text over the limit would only be refused later, so it is refused now.
    """
    problems = _score_errors(estimate, item)
    if problems:
        raise DraftRefused("score", problems[0])
    if len(item.rationale) > MAX_LENGTH:
        raise DraftRefused("rationale", RationaleRule.current().length_message())


def _is_violation(estimate: Estimate, item: ScoreInput) -> bool:
    """A critical-violation vote (protocol.critical) being sent stops the rest."""
    return is_violation(
        critical=estimate.triple.group == CriterionGroup.CRITICAL,
        is_na=item.is_na,
        score=item.score,
        top=_rubric(estimate).max_value,
    )


def _is_stored_violation(estimate: Estimate) -> bool:
    """A submitted estimate that is a critical-violation vote (same rule as `_is_violation`)."""
    return estimate.status == EstimateStatus.SUBMITTED and is_violation(
        critical=estimate.triple.group == CriterionGroup.CRITICAL,
        is_na=estimate.is_na,
        score=estimate.score,
        top=_rubric(estimate).max_value,
    )


def _same_answer_work(assignment: Assignment) -> Any:
    """The expert's other assignments on the same answer (other panels), of the same kind.

    Rubric work only: a side-by-side assignment whose pair has this answer as its A compares
    two answers, and a critical stop on one of them is no verdict on the comparison.
    """
    return Assignment.objects.filter(
        expert_id=assignment.expert_id,
        answer_id=assignment.answer_id,
        kind=assignment.kind,
        pair__isnull=True,
    ).exclude(pk=assignment.pk)


def _violation_elsewhere(assignment: Assignment) -> bool:
    """Has the expert voted a critical violation on this answer in another of their assignments?

    The critical gates of an answer sit in one of the expert's assignments on it (the builder
    gives each expert one estimate per triple), so an expert working on the answer for two
    panels answers the gates only once; the stop they trigger applies to all their work there.
    """
    flagged = Estimate.objects.filter(
        assignment__in=_same_answer_work(assignment),
        status=EstimateStatus.SUBMITTED,
        triple__group=CriterionGroup.CRITICAL,
        is_na=False,
        score__isnull=False,
    ).select_related("triple__rubric")
    return any(_is_stored_violation(e) for e in flagged)


def _skip_rest(estimate: Estimate, item: ScoreInput | None, own_stop: bool, stop: bool) -> bool:
    """Is this estimate skipped by a critical stop?

    Non-critical criteria are always skipped under a stop. A critical gate is skipped only when
    the stop came from the expert's other assignment on the answer and no score for it was
    sent: after a violation nothing more is asked of them on that answer.
    """
    if not stop:
        return False
    if estimate.triple.group != CriterionGroup.CRITICAL:
        return True
    return not own_stop and item is None


def item_errors(estimate: Estimate, item: ScoreInput | None, rule: RationaleRule) -> list[str]:
    """Why one submitted criterion is refused ([] when it is fine): score, scale, rationale."""
    if item is None or (item.score is None and not item.is_na):
        return [_("Choose a score.")]
    problems = _score_errors(estimate, item)
    if problems:
        return problems
    return rationale_errors(
        item.rationale,
        score=item.score,
        is_na=item.is_na,
        best_score=_rubric(estimate).best_value,
        rule=rule,
    )


def _same(estimate: Estimate, item: ScoreInput | None, skipped: bool) -> bool:
    if skipped:
        return estimate.status == EstimateStatus.SKIPPED
    return (
        item is not None
        and estimate.status == EstimateStatus.SUBMITTED
        and estimate.is_na == item.is_na
        and (None if item.is_na else item.score) == estimate.score
        and estimate.rationale == item.rationale.strip()
    )


# What a submission writes of each estimate.
SUBMITTED_FIELDS = (
    "status",
    "score",
    "is_na",
    "rationale",
    "time_spent_ms",
    "rubric",
    "submitted_at",
    "revision",
    # auto_now is applied by save() only: the bulk write must set "Last change" itself.
    "updated_at",
)


def _update_estimates(estimates: list[Estimate], fields: tuple[str, ...]) -> None:
    """Estimate.objects.bulk_update(estimates, fields); on PostgreSQL one UPDATE ... FROM VALUES.

    bulk_update builds a CASE WHEN expression per field and row through the ORM, which took
    more Python time (about 8 ms for 11 criteria) than the rest of a submission together. The
    statement below writes the same columns with the same values (each cast to its column type),
    so auto fields such as updated_at are left alone exactly as bulk_update leaves them.
    """
    if not estimates:
        return
    if connection.vendor != "postgresql":
        Estimate.objects.bulk_update(estimates, list(fields))
        return
    meta = Estimate._meta
    assert meta.pk is not None
    concrete = {field.name: field for field in meta.concrete_fields}
    columns = [concrete[meta.pk.name], *(concrete[name] for name in fields)]
    # Each value is cast to its column's type as Field.cast_db_type does (bigint for the key).
    casts = connection.ops.cast_data_types
    quote = connection.ops.quote_name
    types = [casts.get(field.get_internal_type()) or field.db_type(connection) for field in columns]
    row = "(" + ", ".join(f"%s::{db_type}" for db_type in types) + ")"
    params: list[Any] = []
    for estimate in estimates:
        params.extend(
            field.get_db_prep_save(getattr(estimate, field.attname), connection)
            for field in columns
        )
    names = [quote(field.column) for field in columns]
    sql = (
        f"UPDATE {quote(meta.db_table)} AS e SET "  # noqa: S608 (names from the model, values are parameters)
        + ", ".join(f"{name} = v.{name}" for name in names[1:])
        + f" FROM (VALUES {', '.join([row] * len(estimates))}) AS v({', '.join(names)})"
        + f" WHERE e.{names[0]} = v.{names[0]}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


@transaction.atomic
def assignment_submit(
    *,
    assignment: Assignment,
    items: list[ScoreInput],
    user: Any = None,
    submission_key: str = "",
    time_spent_ms: int = 0,
) -> SubmitResult:
    """Submit every score of an answer at once, or none of them.

    Idempotent: the row lock serialises double clicks and two tabs; a resubmission of the same
    content (or with the same submission key) changes nothing. A changed resubmission before the
    batch is locked edits the scores and keeps the previous values as revisions.
    """
    assignment = (
        Assignment.objects.select_for_update()
        .annotate(membership_paused=membership_paused())
        .get(pk=assignment.pk)
    )
    _ensure_open(assignment)
    if submission_key and assignment.submission_key == submission_key:
        return SubmitResult(
            ok=True,
            already_submitted=True,
            critical_stop=assignment.critical_stop,
            kind=assignment.kind,
        )
    # Only the estimate rows are locked (of "self"): the joined triple, criterion and rubric
    # rows are shared by every expert scoring those criteria, and locking them serialised all
    # concurrent submissions on the catalogue. The assignment row lock above already serialises
    # submissions of this assignment.
    estimates = list(
        assignment.estimates.select_for_update(of=("self",))
        .select_related("triple__rubric", "triple__criterion")
        .order_by("triple__position")
    )
    by_triple = {item.triple_id: item for item in items}
    unknown = set(by_triple) - {e.triple_id for e in estimates}
    if unknown:
        return SubmitResult(
            ok=False, form_errors=[_("Scores for criteria outside this assignment were sent.")]
        )
    rule = RationaleRule.current()
    own_stop = any(
        _is_violation(e, by_triple[e.triple_id])
        for e in estimates
        if e.triple.group == CriterionGroup.CRITICAL and e.triple_id in by_triple
    )
    # A violation the expert recorded on this answer for another panel stops this work too.
    critical_stop = own_stop or _violation_elsewhere(assignment)
    errors: dict[int, list[str]] = {}
    # The rubric's own rule of one item (the pointwise kind's `item_errors`).
    for estimate in estimates:
        item = by_triple.get(estimate.triple_id)
        if _skip_rest(estimate, item, own_stop, critical_stop):
            continue
        problems = item_errors(estimate, item, rule)
        if problems:
            errors[estimate.triple_id] = problems
    if errors:
        return SubmitResult(ok=False, errors=errors, critical_stop=critical_stop)

    was_submitted = assignment.status == AssignmentStatus.SUBMITTED
    if was_submitted and all(
        _same(
            e,
            by_triple.get(e.triple_id),
            _skip_rest(e, by_triple.get(e.triple_id), own_stop, critical_stop),
        )
        for e in estimates
    ):
        return SubmitResult(
            ok=True, already_submitted=True, critical_stop=critical_stop, kind=assignment.kind
        )

    now = timezone.now()
    revisions: list[EstimateRevision] = []
    for estimate in estimates:
        item = by_triple.get(estimate.triple_id)
        skipped = _skip_rest(estimate, item, own_stop, critical_stop)
        if _same(estimate, item, skipped):
            continue
        if estimate.status in (EstimateStatus.SUBMITTED, EstimateStatus.SKIPPED):
            revisions.append(
                EstimateRevision(
                    estimate=estimate,
                    revision=estimate.revision,
                    score=estimate.score,
                    is_na=estimate.is_na,
                    rationale=estimate.rationale,
                    changed_by=user if getattr(user, "is_authenticated", False) else None,
                )
            )
            estimate.revision += 1
        if skipped:
            estimate.status = EstimateStatus.SKIPPED
            estimate.score = None
            estimate.is_na = False
            # A draft typed before the gate was hit is kept as the rationale of the skip.
            estimate.rationale = (item.rationale.strip() if item else "") or estimate.rationale
        else:
            assert item is not None
            estimate.status = EstimateStatus.SUBMITTED
            estimate.is_na = item.is_na
            estimate.score = None if item.is_na else item.score
            estimate.rationale = item.rationale.strip()
        if item is not None:
            estimate.time_spent_ms = max(estimate.time_spent_ms, item.time_spent_ms)
        estimate.rubric_id = estimate.triple.rubric_id
        estimate.submitted_at = now
        estimate.updated_at = now
    EstimateRevision.objects.bulk_create(revisions)
    _update_estimates(estimates, SUBMITTED_FIELDS)
    had_stop = was_submitted and assignment.critical_stop
    assignment.status = AssignmentStatus.SUBMITTED
    assignment.submitted_at = now
    assignment.critical_stop = critical_stop
    assignment.time_spent_ms = max(assignment.time_spent_ms, time_spent_ms)
    assignment.submission_key = submission_key[:64]
    assignment.drafts_backup = {}
    assignment.save(
        update_fields=[
            "status",
            "submitted_at",
            "critical_stop",
            "time_spent_ms",
            "submission_key",
            "drafts_backup",
        ]
    )
    # A supervisor's return is answered by this submission (work.review); the estimates read
    # above say whether there is one, so a plain submission costs no query for it.
    if any(e.review_status == review.ReviewStatus.RETURNED for e in estimates):
        review.resubmitted(assignment)
    if own_stop:
        _carry_critical_stop(assignment, now)
    elif had_stop and not critical_stop:
        _lift_carried_stop(assignment)
    hook = hooks.on_submitted.get(assignment.kind)
    if hook is not None:
        # Exams are graded and control items scored (quality registers both) once the
        # submission is durable.
        pk = assignment.pk
        transaction.on_commit(lambda: hook(pk))
    return SubmitResult(ok=True, critical_stop=critical_stop, kind=assignment.kind)


def _carry_critical_stop(assignment: Assignment, now: Any) -> None:
    """Close the expert's other open assignments on the answer: a critical stop is per answer.

    Every estimate not yet submitted there is skipped (a draft's text is kept as the rationale
    of the skip, as on the assignment that triggered the stop) and the assignment is submitted
    with `critical_stop`, so it leaves the expert's queue. Work already submitted there is left
    as it was: its non-critical triples leave the dataset anyway (aggregation rule 2), and a
    finished submission is not rewritten behind the expert's back. Locked work never changes.
    """
    others = list(
        _same_answer_work(assignment)
        .select_for_update()
        .filter(status__in=(AssignmentStatus.ASSIGNED, AssignmentStatus.IN_PROGRESS), locked=False)
    )
    if not others:
        return
    Estimate.objects.filter(
        assignment__in=others,
        status__in=(EstimateStatus.PENDING, EstimateStatus.DRAFT),
    ).update(
        status=EstimateStatus.SKIPPED, score=None, is_na=False, submitted_at=now, updated_at=now
    )
    Assignment.objects.filter(pk__in=[a.pk for a in others]).update(
        status=AssignmentStatus.SUBMITTED, submitted_at=now, critical_stop=True
    )


def _lift_carried_stop(assignment: Assignment) -> None:
    """The expert withdrew their violation: reopen the work the stop had closed for them.

    Only assignments closed by a stop they did not record themselves are reopened (a violation
    voted there keeps its own stop); their skipped criteria become open again, a kept draft text
    as a draft.
    """
    if _violation_elsewhere(assignment):
        return
    now = timezone.now()
    for other in (
        _same_answer_work(assignment)
        .select_for_update()
        .filter(status=AssignmentStatus.SUBMITTED, critical_stop=True, locked=False)
    ):
        own = other.estimates.filter(triple__group=CriterionGroup.CRITICAL).select_related(
            "triple__rubric"
        )
        if any(_is_stored_violation(e) for e in own):
            continue
        skipped = other.estimates.filter(status=EstimateStatus.SKIPPED)
        skipped.exclude(rationale="").update(
            status=EstimateStatus.DRAFT, submitted_at=None, updated_at=now
        )
        skipped.filter(rationale="").update(
            status=EstimateStatus.PENDING, submitted_at=None, updated_at=now
        )
        other.status = AssignmentStatus.IN_PROGRESS
        other.critical_stop = False
        other.submitted_at = None
        other.submission_key = ""
        _extend_reservation(other)
        other.save(
            update_fields=[
                "status",
                "critical_stop",
                "submitted_at",
                "submission_key",
                "reserved_until",
            ]
        )


class _RollBack(Exception):
    """Raised inside the entry's transaction to undo the parts already written."""


def entry_submit(
    parts: list[EntryPart],
    items: list[ScoreInput],
    *,
    total_ms: int,
    user: Any,
    submission_key: str = "",
) -> SubmitResult:
    """Submit every assignment of an entry in one transaction, or none of them.

    Every part is checked (assignment_submit), so a refusal names all the
    criteria to fix at once; then any refusal rolls the whole entry back and the refusals are
    returned merged (triple ids are unique within an entry). On success: the lead's result,
    with the stop of any part.
    """
    shares = time_shares(parts, total_ms)
    if len(parts) == 1:
        # An entry of one (most answers): the service's own transaction is the entry's.
        return assignment_submit(
            assignment=Assignment(pk=parts[0].assignment_id),
            items=items,
            time_spent_ms=total_ms,
            user=user,
            submission_key=submission_key,
        )
    results: list[SubmitResult] = []
    try:
        with transaction.atomic():
            for part, own in split_items(parts, items):
                results.append(
                    assignment_submit(
                        assignment=Assignment(pk=part.assignment_id),
                        items=own,
                        time_spent_ms=shares[part.assignment_id],
                        user=user,
                        submission_key=submission_key,
                    )
                )
            if not all(r.ok for r in results):
                raise _RollBack
    except _RollBack:
        refused = [r for r in results if not r.ok]
        merged = replace(refused[0], errors={}, form_errors=[])
        for r in refused:
            merged.errors.update(r.errors)
            merged.form_errors.extend(e for e in r.form_errors if e not in merged.form_errors)
        return merged
    return replace(
        results[0],
        critical_stop=any(r.critical_stop for r in results),
        already_submitted=all(r.already_submitted for r in results),
    )
