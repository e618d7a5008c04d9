"""Building triples and assignments: the POLLUX routing with overlap, balanced over experts.

The builder works on whole answers: one Assignment per (expert, answer, panel) holding every
estimate slot of that answer the panel is responsible for, plus the critical gates while they
still need votes. It is idempotent (it only fills what is missing) and runs in bulk: everything
is computed in memory from a handful of queries and written with COPY on PostgreSQL.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotation.models import (
    Answer,
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    Estimate,
    EstimateStatus,
    Triple,
)
from annotation.routing import RoutingTable, overlap_for
from panels.models import Membership
from taxonomy.models import CriterionGroup
from taxonomy.services import CriteriaIndex

Progress = Callable[[int, int], None]
# Serialises builders: two concurrent builds would otherwise race for the same free slots.
BUILD_LOCK_ID = 0x504F4C4C  # "POLL"
OPEN_STATUSES = (AssignmentStatus.ASSIGNED, AssignmentStatus.IN_PROGRESS)
# Above this many rows, PostgreSQL gets COPY instead of INSERT (bench/assignments.py compares).
COPY_THRESHOLD = 1000


def triples_build(*, answer_ids: Iterable[int] | None = None) -> int:
    """Create the missing triples of the given answers (all answers by default)."""
    table = RoutingTable.load()
    # Exam and control material are frozen copies that never become real work.
    answers = Answer.objects.filter(reserved__isnull=True)
    if answer_ids is not None:
        answers = answers.filter(pk__in=list(answer_ids))
    rows = answers.values_list("pk", "instruction__task_id", "instruction__style_id")
    index = CriteriaIndex()
    existing: set[tuple[int, int]] = set()
    answer_pks = [pk for pk, _t, _s in rows]
    for chunk_start in range(0, len(answer_pks), 20000):
        chunk = answer_pks[chunk_start : chunk_start + 20000]
        existing.update(
            Triple.objects.filter(answer_id__in=chunk).values_list("answer_id", "criterion_id")
        )
    new: list[Triple] = []
    for answer_id, task_id, style_id in rows:
        for position, criterion in enumerate(index.for_task(task_id, style_id)):
            if (answer_id, criterion.pk) in existing or criterion.rubric_id is None:
                continue
            new.append(
                Triple(
                    answer_id=answer_id,
                    criterion_id=criterion.pk,
                    rubric_id=criterion.rubric_id,
                    group=criterion.group,
                    panel_id=table.panel_for(criterion, task_id, style_id),
                    required_overlap=overlap_for(criterion),
                    position=position,
                )
            )
    Triple.objects.bulk_create(new, batch_size=5000, ignore_conflicts=True)
    return len(new)


def _eligible_experts() -> dict[int, list[tuple[int, list[str]]]]:
    """panel id -> [(expert id, qualified groups or [] for all)] of active qualified experts."""
    result: dict[int, list[tuple[int, list[str]]]] = defaultdict(list)
    for panel_id, expert_id, groups in Membership.objects.filter(
        qualified=True, expert__is_paused=False, expert__user__is_active=True
    ).values_list("panel_id", "expert_id", "qualified_groups"):
        result[panel_id].append((expert_id, list(groups or [])))
    return result


def assignments_build(
    *,
    answer_ids: Iterable[int] | None = None,
    job_id: int | None = None,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Build triples and fill every open slot with qualified experts (idempotent)."""
    answer_list = list(answer_ids) if answer_ids is not None else None
    new_triples = triples_build(answer_ids=answer_list)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [BUILD_LOCK_ID])
        report = _fill_slots(answer_list, progress)
    report["triples_created"] = new_triples
    return report


def _fill_slots(answer_ids: list[int] | None, progress: Progress | None) -> dict[str, int]:
    triples = Triple.objects.filter(answer__reserved__isnull=True)
    if answer_ids is not None:
        triples = triples.filter(answer_id__in=answer_ids)
    triple_rows = list(
        triples.order_by("answer_id", "position").values_list(
            "pk", "answer_id", "panel_id", "group", "required_overlap"
        )
    )
    triple_ids = [row[0] for row in triple_rows]
    # Slots already taken (by anyone), and which experts already hold each answer.
    taken_slots: dict[int, set[int]] = defaultdict(set)
    experts_on_triple: dict[int, set[int]] = defaultdict(set)
    estimates = Estimate.objects.all()
    if answer_ids is not None:
        estimates = estimates.filter(triple__answer_id__in=answer_ids)
    for triple_id, slot, expert_id in estimates.values_list("triple_id", "slot", "expert_id"):
        taken_slots[triple_id].add(slot)
        experts_on_triple[triple_id].add(expert_id)
    existing_assignments: dict[tuple[int, int], set[int]] = defaultdict(set)  # (answer, panel)
    experts_on_answer: dict[int, set[int]] = defaultdict(set)
    assignments = Assignment.objects.filter(kind=AssignmentKind.WORK)
    if answer_ids is not None:
        assignments = assignments.filter(answer_id__in=answer_ids)
    for answer_id, panel_id, expert_id in assignments.exclude(
        status=AssignmentStatus.RELEASED
    ).values_list("answer_id", "panel_id", "expert_id"):
        existing_assignments[(answer_id, panel_id)].add(expert_id)
        experts_on_answer[answer_id].add(expert_id)
    released: set[tuple[int, int, int]] = set(
        assignments.filter(status=AssignmentStatus.RELEASED).values_list(
            "expert_id", "answer_id", "panel_id"
        )
    )
    released_by: dict[tuple[int, int], set[int]] = defaultdict(set)  # (answer, panel) -> experts
    for expert_id, answer_id, panel_id in released:
        released_by[(answer_id, panel_id)].add(expert_id)

    eligible = _eligible_experts()
    load: dict[int, int] = defaultdict(int)
    for expert_id, n in (
        Estimate.objects.filter(status__in=[EstimateStatus.PENDING, EstimateStatus.DRAFT])
        .values_list("expert_id")
        .annotate(n=Count("id"))
        .values_list("expert_id", "n")
    ):
        load[expert_id] = n

    by_answer: dict[int, list[tuple[int, int, str, int]]] = defaultdict(list)
    for pk, answer_id, panel_id, group, overlap in triple_rows:
        by_answer[answer_id].append((pk, panel_id, group, overlap))

    new_assignments: list[tuple[int, int, int]] = []  # (expert, answer, panel)
    new_estimates: list[tuple[int, int, int, int]] = []  # (assignment index, triple, expert, slot)
    reopened: list[tuple[int, int, int]] = []  # released assignments that get work again
    total = len(by_answer)
    for done, (answer_id, items) in enumerate(by_answer.items(), start=1):
        panels_here = sorted(
            {panel for _pk, panel, group, _o in items if group != CriterionGroup.CRITICAL}
        ) + sorted({panel for _pk, panel, group, _o in items if group == CriterionGroup.CRITICAL})
        seen_panels: set[int] = set()
        for panel_id in panels_here:
            if panel_id in seen_panels:
                continue
            seen_panels.add(panel_id)
            own = [it for it in items if it[1] == panel_id]
            gates = [it for it in items if it[2] == CriterionGroup.CRITICAL and it[1] != panel_id]
            need = max(
                (it[3] - len(taken_slots[it[0]]) for it in own),
                default=0,
            )
            if need <= 0:
                continue
            taken_here = existing_assignments[(answer_id, panel_id)]
            on_answer = experts_on_answer[answer_id]
            gone = released_by[(answer_id, panel_id)]
            # Who abandoned this answer goes last; then fresh eyes (experts not yet on this
            # answer for another panel); then the least loaded. Decorated tuples sort without a
            # key call per candidate: this loop runs for every (answer, panel) at POLLUX scale.
            ranked = sorted(
                (e in gone, e in on_answer, load[e], e, groups)
                for e, groups in eligible.get(panel_id, [])
                if e not in taken_here
            )
            candidates = [(e, groups) for _g, _s, _l, e, groups in ranked]
            own_ids = {it[0] for it in own}
            for expert_id, groups in candidates:
                if need <= 0:
                    break
                slots: list[tuple[int, int]] = []
                for pk, _panel, group, overlap in own + gates:
                    if groups and group not in groups:
                        continue
                    if expert_id in experts_on_triple[pk] or len(taken_slots[pk]) >= overlap:
                        continue
                    slot = next(s for s in range(1, overlap + 1) if s not in taken_slots[pk])
                    slots.append((pk, slot))
                if not any(pk in own_ids for pk, _slot in slots):
                    continue
                index = len(new_assignments)
                key = (expert_id, answer_id, panel_id)
                if key in released:
                    reopened.append(key)
                new_assignments.append(key)
                for pk, slot in slots:
                    taken_slots[pk].add(slot)
                    experts_on_triple[pk].add(expert_id)
                    new_estimates.append((index, pk, expert_id, slot))
                existing_assignments[(answer_id, panel_id)].add(expert_id)
                experts_on_answer[answer_id].add(expert_id)
                load[expert_id] += len(slots)
                need = max((it[3] - len(taken_slots[it[0]]) for it in own), default=0)
        if progress and (done % 500 == 0 or done == total):
            progress(done, total)

    assignment_ids = _write_assignments(new_assignments, set(reopened))
    _write_estimates([(assignment_ids[i], t, e, s) for i, t, e, s in new_estimates])
    return {
        "answers": total,
        "triples": len(triple_ids),
        "assignments_created": len(new_assignments),
        "estimates_created": len(new_estimates),
    }


def _reservation_deadline() -> Any:
    return timezone.now() + timedelta(hours=settings.POLLUX["ASSIGNMENT_RESERVATION_HOURS"])


def _write_assignments(
    rows: list[tuple[int, int, int]], reopened: set[tuple[int, int, int]]
) -> list[int]:
    """Insert assignments (reviving released ones) and return their ids in the order given."""
    if not rows:
        return []
    deadline = _reservation_deadline()
    ids: dict[tuple[int, int, int], int] = {}
    if reopened:
        q = Q()
        for expert_id, answer_id, panel_id in reopened:
            q |= Q(expert_id=expert_id, answer_id=answer_id, panel_id=panel_id)
        revived = Assignment.objects.filter(q, kind=AssignmentKind.WORK)
        revived.update(status=AssignmentStatus.ASSIGNED, reserved_until=deadline)
        ids.update({(a.expert_id, a.answer_id, a.panel_id): a.pk for a in revived})
    fresh = [row for row in rows if row not in ids]
    if connection.vendor == "postgresql" and len(fresh) > COPY_THRESHOLD:
        table = Assignment._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
                [table, len(fresh)],
            )
            new_ids = [r[0] for r in cursor.fetchall()]
            now = timezone.now()
            buffer = io.StringIO()
            for pk, (expert_id, answer_id, panel_id) in zip(new_ids, fresh, strict=True):
                buffer.write(
                    f"{pk}\t{expert_id}\t{answer_id}\t{panel_id}\twork\tassigned\t"
                    f"{deadline.isoformat()}\t{now.isoformat()}\t0\tf\tf\t{{}}\t\n"
                )
            columns = (
                "id, expert_id, answer_id, panel_id, kind, status, reserved_until, created_at, "
                "time_spent_ms, critical_stop, locked, drafts_backup, submission_key"
            )
            _copy(cursor, f"COPY {table} ({columns}) FROM STDIN", buffer.getvalue())
        ids.update(dict(zip(fresh, new_ids, strict=True)))
    else:
        created = Assignment.objects.bulk_create(
            [
                Assignment(expert_id=e, answer_id=a, panel_id=p, reserved_until=deadline)
                for e, a, p in fresh
            ],
            batch_size=2000,
        )
        ids.update({(x.expert_id, x.answer_id, x.panel_id): x.pk for x in created})
    return [ids[row] for row in rows]


def _write_estimates(rows: Sequence[tuple[int, int, int, int]]) -> None:
    if not rows:
        return
    if connection.vendor == "postgresql" and len(rows) > COPY_THRESHOLD:
        table = Estimate._meta.db_table
        buffer = io.StringIO()
        now = timezone.now().isoformat()
        for assignment_id, triple_id, expert_id, slot in rows:
            buffer.write(
                f"{triple_id}\t{assignment_id}\t{expert_id}\t{slot}\tpending\tf\t\t0\t0\t{now}\n"
            )
        columns = (
            "triple_id, assignment_id, expert_id, slot, status, is_na, rationale, "
            "time_spent_ms, revision, updated_at"
        )
        with connection.cursor() as cursor:
            _copy(cursor, f"COPY {table} ({columns}) FROM STDIN", buffer.getvalue())
        return
    Estimate.objects.bulk_create(
        [Estimate(assignment_id=a, triple_id=t, expert_id=e, slot=s) for a, t, e, s in rows],
        batch_size=5000,
    )


def _copy(cursor: Any, sql: str, data: str) -> None:
    """COPY through psycopg 3 (Django's cursor wraps the raw one)."""
    raw = cursor.cursor if hasattr(cursor, "cursor") else cursor
    with raw.copy(sql) as copy:
        copy.write(data)


@transaction.atomic
def assignments_release_expired(*, now: Any = None) -> int:
    """Return abandoned reservations to the pool; drafts are kept on the assignment.

    Submitted estimates stay; unsubmitted slots are freed so the next build gives them to
    someone else. The expert who comes back sees their text and is told what happened.
    """
    now = now or timezone.now()
    expired = list(
        Assignment.objects.select_for_update(skip_locked=True).filter(
            status__in=OPEN_STATUSES, reserved_until__lt=now, kind=AssignmentKind.WORK
        )
    )
    for assignment in expired:
        assignment_release(assignment=assignment, reason="expired")
    return len(expired)


def assignment_release(*, assignment: Assignment, reason: str) -> None:
    """Free the open slots of an assignment, keeping any typed drafts in drafts_backup."""
    open_estimates = assignment.estimates.filter(
        status__in=[EstimateStatus.PENDING, EstimateStatus.DRAFT]
    )
    backup = dict(assignment.drafts_backup or {})
    for estimate in open_estimates.filter(status=EstimateStatus.DRAFT):
        backup[str(estimate.triple_id)] = {
            "score": estimate.score,
            "is_na": estimate.is_na,
            "rationale": estimate.rationale,
        }
    open_estimates.delete()
    assignment.status = AssignmentStatus.RELEASED
    assignment.drafts_backup = backup | {"_reason": reason}
    assignment.save(update_fields=["status", "drafts_backup"])


def assignments_reassign(*, expert_id: int) -> dict[str, int]:
    """Release an expert's open work (a supervisor's action) and hand it to other experts."""
    with transaction.atomic():
        open_assignments = list(
            Assignment.objects.select_for_update().filter(
                expert_id=expert_id, status__in=OPEN_STATUSES, kind=AssignmentKind.WORK
            )
        )
        for assignment in open_assignments:
            assignment_release(assignment=assignment, reason="reassigned")
    answers = [a.answer_id for a in open_assignments]
    report = assignments_build(answer_ids=answers) if answers else {}
    return {"released": len(open_assignments), **report}
