"""Control (gold) items: settings, reference scores, distribution, grading and automatic pauses."""

from __future__ import annotations

import secrets
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.translation import gettext as _

from material.models import Answer
from panels.models import Expert, Membership, Panel, SupervisorAction, SupervisorNotice
from panels.services import actor_or_none, audit
from quality import kinds as gold_kinds
from quality.copies import (
    ScoringSpec,
    answers_copy,
    scores_match,
    scoring_material_create,
)
from quality.exams import (
    ExamError,
    ReferenceInput,
    references_check,
)
from quality.models import (
    ControlDelivery,
    ControlItem,
    ControlSettings,
    ControlStanding,
    ReferenceScore,
)
from taxonomy.models import Criterion, CriterionGroup, Rubric
from taxonomy.services import criteria_for
from work.assignments import OPEN_STATUSES, assignment_release
from work.models import (
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    Estimate,
    ReservedAnswer,
)
from work.routing import RoutingTable


def control_settings_for(panel: Panel | int) -> ControlSettings:
    panel_id = panel if isinstance(panel, int) else panel.pk
    obj, _created = ControlSettings.objects.get_or_create(panel_id=panel_id)
    return obj


@transaction.atomic
def control_settings_update(*, panel: Panel, user: Any, **values: Any) -> ControlSettings:
    obj = ControlSettings.objects.select_for_update().get(pk=control_settings_for(panel).pk)
    for name, value in values.items():
        setattr(obj, name, value)
    obj.full_clean()
    obj.save()
    audit(action="control_settings", actor=user, panel=panel, data={k: values[k] for k in values})
    return obj


def control_reference_criteria(*, panel: Panel, answer: Any) -> list[Criterion]:
    """The criteria this panel's experts score on the answer: routed to it, plus critical gates.

    Those are the criteria a control item of the panel is checked against, so those are the ones
    a supervisor of the panel writes references for. Empty when the answer is not routed to the
    panel (the critical gates every panel scores do not route an answer to it) or is a reserved
    copy (exam or control material).
    """

    if ReservedAnswer.objects.filter(answer_id=answer.pk).exists():
        return []
    table = RoutingTable.load()
    instruction = answer.instruction
    criteria = criteria_for(instruction)
    routed = {
        c.pk
        for c in criteria
        if table.panel_for(c, instruction.task_id, instruction.style_id) == panel.pk
    }
    if not routed:
        return []
    return [c for c in criteria if c.group == CriterionGroup.CRITICAL or c.pk in routed]


def answer_routed_to_panel(*, panel: Panel, answer: Any) -> bool:
    """Whether the panel scores the answer as real work (the rule behind panels/rules.py's
    `quality.manage_panel_answer`): only such answers have references or become gold of it."""
    return bool(control_reference_criteria(panel=panel, answer=answer))


@transaction.atomic
def control_references_set(
    *, panel: Panel, answer: Any, rows: Sequence[ReferenceInput], user: Any = None
) -> int:
    """Write the answer's reference scores for the panel's criteria (all rows, or none)."""

    allowed = {c.pk: c for c in control_reference_criteria(panel=panel, answer=answer)}
    references_check(
        allowed, rows, unknown=_("This panel does not score that criterion on this answer.")
    )
    for row in rows:
        ReferenceScore.objects.update_or_create(
            answer=answer,
            criterion_id=row.criterion_id,
            panel=panel,
            defaults={
                "score": None if row.is_na else row.score,
                "is_na": row.is_na,
                "comment": row.comment.strip(),
                "author": actor_or_none(user),
            },
        )
    audit(
        action=SupervisorAction.Kind.CONTROL_REFERENCES,
        actor=user,
        panel=panel,
        data={"answer": answer.pk, "criteria": [r.criterion_id for r in rows]},
    )
    return len(rows)


@transaction.atomic
def control_item_add(*, panel: Panel, answer: Any, user: Any = None) -> ControlItem:
    """Make an answer routed to the panel, with the panel's references, a gold item of it.

    The answer stays real work for every other panel (their work, triples and statistics are
    untouched). In this panel it becomes gold only: the builder gives the panel no new work on
    it, and the panel's open (unsubmitted) work on it is released now, drafts kept, as a
    reservation that ended; submitted estimates stay as evidence. Experts who held the answer
    as work of the panel never receive it as a control item (they would recognise it).
    """

    if not answer_routed_to_panel(panel=panel, answer=answer):
        raise ExamError(_("This answer is not scored by the panel."))
    if not ReferenceScore.objects.filter(answer=answer, panel=panel).exists():
        raise ExamError(_("The answer has no reference scores."))
    item, _created = ControlItem.objects.get_or_create(
        panel=panel, answer=answer, defaults={"created_by": actor_or_none(user)}
    )
    if not item.is_active:
        ControlItem.objects.filter(pk=item.pk).update(is_active=True)
    # Rubric work only: gold is scored on the rubric; a side-by-side pair with this answer as
    # its A is other work, which the rubric builder could not hand out again once released.
    open_work = list(
        Assignment.objects.select_for_update().filter(
            answer=answer,
            panel=panel,
            kind=AssignmentKind.WORK,
            status__in=OPEN_STATUSES,
            pair__isnull=True,
        )
    )
    for assignment in open_work:
        assignment_release(assignment=assignment, reason="control")
    audit(
        action="control_item_add",
        actor=user,
        panel=panel,
        data={"answer": answer.pk, "released": len(open_work)},
    )
    return item


def control_items_distribute(*, panel_id: int) -> int:
    """Mix control items into the panel's queues at the configured rate (idempotent).

    An expert with W live work assignments should hold floor(W * rate) control items; the
    missing ones are drawn at random from the gold items they have not seen. Answers and
    side-by-side pairs are counted apart: a gold answer stands in for rubric work, a gold pair
    for pair work, so each kind of gold goes at the rate of its own kind of work. Returns how
    many were delivered.
    """

    conf = control_settings_for(panel_id)
    if not conf.enabled or conf.rate <= 0:
        return 0
    items = list(ControlItem.objects.filter(panel_id=panel_id, is_active=True))
    if not items:
        return 0
    panel = Panel.objects.get(pk=panel_id)
    experts = list(
        Membership.objects.filter(
            panel_id=panel_id, qualified=True, is_paused=False, expert__user__is_active=True
        ).values_list("expert_id", flat=True)
    )
    delivered = 0
    # Each kind delivers its own items (quality.kinds), in the kinds' order.
    for kind in gold_kinds.kinds:
        own = [i for i in items if i.task_kind == kind.key]
        if own:
            delivered += kind.control_deliver(panel, conf, own, experts)
    return delivered


def seen_items(panel_id: int, experts: Sequence[int], *, pairs: bool) -> dict[int, set[int]]:
    """Per expert, the control items of one kind (answers or pairs) already delivered."""
    seen: dict[int, set[int]] = defaultdict(set)
    for expert_id, item_id in ControlDelivery.objects.filter(
        item__panel_id=panel_id, expert_id__in=experts, item__pair__isnull=not pairs
    ).values_list("expert_id", "item_id"):
        seen[expert_id].add(item_id)
    return seen


def answers_deliver(
    panel: Panel, conf: ControlSettings, items: Sequence[ControlItem], experts: Sequence[int]
) -> int:
    panel_id = panel.pk
    with_refs = set(
        ReferenceScore.objects.filter(
            answer_id__in=[i.answer_id for i in items], panel_id=panel_id
        ).values_list("answer_id", flat=True)
    )
    # A control copy is scored on every criterion the panel scores on such an answer as work
    # (not only the referenced ones): a shorter list of criteria would tell it apart. Grading
    # counts the referenced criteria only.
    refs: dict[int, list[tuple[Criterion, Rubric]]] = {}
    sources = Answer.objects.select_related("instruction").filter(pk__in=with_refs)
    for source in sources:
        refs[source.pk] = [
            (c, c.rubric)
            for c in control_reference_criteria(panel=panel, answer=source)
            if c.rubric is not None
        ]
    # The rate is of rubric work: a control item is a rubric item and must pass for one, so an
    # expert's side-by-side pairs do not call for more of them.
    work = dict(
        Assignment.objects.filter(
            panel_id=panel_id, kind="work", expert_id__in=experts, pair__isnull=True
        )
        .exclude(status=AssignmentStatus.RELEASED)
        .values_list("expert_id")
        .annotate(n=Count("id"))
        .values_list("expert_id", "n")
    )
    seen = seen_items(panel_id, experts, pairs=False)
    # Who held a gold answer as work of the panel would recognise it: never theirs to check.
    item_of_answer = {i.gold_answer_id: i.pk for i in items}
    for expert_id, answer_id in Assignment.objects.filter(
        panel_id=panel_id, kind="work", answer_id__in=list(item_of_answer)
    ).values_list("expert_id", "answer_id"):
        seen[expert_id].add(item_of_answer[answer_id])
    rng = secrets.SystemRandom()
    delivered = 0
    for expert_id in experts:
        target = int(work.get(expert_id, 0) * conf.rate)
        missing = target - len(seen[expert_id])
        pool = [i for i in items if i.pk not in seen[expert_id] and refs.get(i.gold_answer_id)]
        if missing <= 0 or not pool:
            continue
        chosen = rng.sample(pool, min(missing, len(pool)))
        delivered += _control_deliver(panel, Expert(pk=expert_id), chosen, refs)
    return delivered


@transaction.atomic
def _control_deliver(
    panel: Panel,
    expert: Expert,
    items: Sequence[ControlItem],
    refs: dict[int, list[tuple[Criterion, Rubric]]],
) -> int:
    sources = {a.pk: a for a in Answer.objects.filter(pk__in=[i.answer_id for i in items])}
    copies = answers_copy(
        sources=[sources[i.gold_answer_id] for i in items], purpose=ReservedAnswer.Purpose.CONTROL
    )
    assignments = scoring_material_create(
        expert=expert,
        panel=panel,
        kind="control",
        copies=copies,
        specs=[ScoringSpec(criteria=refs[i.gold_answer_id]) for i in items],
    )
    ControlDelivery.objects.bulk_create(
        [
            ControlDelivery(item=i, expert_id=expert.pk, answer=c, assignment=a)
            for i, c, a in zip(items, copies, assignments, strict=True)
        ]
    )
    return len(items)


def answer_grade(delivery: ControlDelivery, conf: ControlSettings) -> tuple[int, int]:
    """(criteria graded, matched) of a gold answer: the panel's reference scores."""
    estimates = {
        e.triple.criterion_id: e
        for e in Estimate.objects.filter(assignment_id=delivery.assignment_id).select_related(
            "triple__rubric"
        )
    }
    total = matched = 0
    for ref in ReferenceScore.objects.filter(
        answer_id=delivery.item.gold_answer_id, panel_id=delivery.item.panel_id
    ):
        est = estimates.get(ref.criterion_id)
        if est is None:
            continue
        total += 1
        submitted = est.status == "submitted"
        rubric = est.triple.rubric
        # A control copy is rubric work (quality.copies makes its triples from criteria
        # with their rubrics), so each of its triples has one.
        assert rubric is not None, f"control triple {est.triple_id} has no rubric"
        matched += scores_match(
            ref_score=ref.score,
            ref_na=ref.is_na,
            score=est.score if submitted else None,
            is_na=est.is_na if submitted else False,
            scale=rubric.values,
            tolerance=conf.tolerance,
        )
    return total, matched


def control_on_assignment_submitted(assignment_id: int) -> None:
    """Hook after a successful submission (rubric or side by side): grade a control item,
    pause a failing expert."""

    with transaction.atomic():
        delivery = (
            ControlDelivery.objects.select_for_update()
            .select_related("item")
            .filter(assignment_id=assignment_id)
            .first()
        )
        # Only the first submission counts: a control item is not a practice round.
        if delivery is None or delivery.graded_at is not None:
            return
        conf = control_settings_for(delivery.item.panel_id)
        total, matched = gold_kinds.of(delivery.item).control_grade(delivery, conf)
        delivery.n_total, delivery.n_matched = total, matched
        delivery.graded_at = timezone.now()
        delivery.save(update_fields=["n_total", "n_matched", "graded_at"])
        standing, _created = ControlStanding.objects.select_for_update().get_or_create(
            expert_id=delivery.expert_id, panel_id=delivery.item.panel_id
        )
        standing.n_items += 1
        standing.n_total += total
        standing.n_matched += matched
        standing.save(update_fields=["n_items", "n_total", "n_matched", "updated_at"])
        accuracy = standing.accuracy
        if (
            standing.n_items >= conf.min_items
            and accuracy is not None
            and accuracy < conf.accuracy_threshold
        ):
            membership = (
                Membership.objects.select_for_update()
                .select_related("expert")
                .filter(expert_id=delivery.expert_id, panel_id=delivery.item.panel_id)
                .first()
            )
            if membership is not None and not membership.is_paused:
                _pause_automatically(membership, accuracy, standing.n_items)


def _pause_automatically(membership: Membership, accuracy: float, n_items: int) -> None:
    """Pause the expert in the panel whose control items they fail (only there)."""
    reason = _("Accuracy on control items %(acc).0f%% over %(n)d items is below the threshold.") % {
        "acc": accuracy * 100,
        "n": n_items,
    }
    membership.is_paused = True
    membership.paused_reason = reason[:300]
    membership.save(update_fields=["is_paused", "paused_reason"])
    expert = membership.expert
    panel = Panel.objects.get(pk=membership.panel_id)
    audit(
        action="auto_pause",
        panel=panel,
        expert=expert,
        note=reason,
        data={"accuracy": accuracy, "items": n_items},
    )
    SupervisorNotice.objects.create(
        panel=panel,
        expert=expert,
        message=(
            _("%(expert)s was paused automatically: %(reason)s")
            % {"expert": expert.pseudonym, "reason": reason}
        )[:500],
    )
    emails = [e for e in panel.supervisors.values_list("email", flat=True) if e]
    if emails:
        subject = _("Pollux Studio: an expert was paused")
        transaction.on_commit(
            lambda: send_mail(
                subject,
                f"{expert.pseudonym}: {reason}",
                settings.DEFAULT_FROM_EMAIL,
                emails,
                fail_silently=True,
            )
        )


def gold_pairs(answer_ids: Sequence[int] | None) -> set[tuple[int, int]]:
    """(answer, panel) pairs of active control items: the builder gives that panel no work on
    the answer (registered in work.hooks.excluded_pairs)."""
    # Gold pairs are not here: their labelling is complete, no builder would hand them out.
    gold = ControlItem.objects.filter(is_active=True, answer__isnull=False)
    if answer_ids is not None:
        gold = gold.filter(answer_id__in=answer_ids)
    return set(gold.values_list("answer_id", "panel_id"))


def standing_restart(expert_id: int, panel_id: int) -> None:
    """A resumed expert's control accuracy starts afresh, else the next item would pause again
    (registered in panels.hooks.on_resumed)."""
    ControlStanding.objects.filter(expert_id=expert_id, panel_id=panel_id).update(
        since=timezone.now(), n_items=0, n_total=0, n_matched=0
    )
