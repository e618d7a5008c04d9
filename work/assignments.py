"""Building triples and assignments: the POLLUX routing with overlap, balanced over experts.

The builder works on whole answers: one Assignment per (expert, answer, panel) holding every
estimate slot of that answer the panel is responsible for, plus the critical gates while they
still need votes. It is idempotent (it only fills what is missing) and runs in bulk: everything
is computed in memory from a handful of queries and written with COPY on PostgreSQL.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Count
from django.utils import timezone

from lib.pgcopy import ThreadedCopyWriter, copy_model_rows, next_ids
from material.models import Answer
from panels.selectors import eligible_memberships
from taxonomy.models import CriterionGroup
from taxonomy.services import CriteriaIndex
from work import hooks
from work.models import (
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    Estimate,
    EstimateStatus,
    Flag,
    Triple,
    TripleKind,
)
from work.routing import RoutingTable, overlap_for

Progress = Callable[[int, int], None]
# Serialises builders: two concurrent builds would otherwise race for the same free slots.
BUILD_LOCK_ID = 0x504F4C4C  # "POLL"
OPEN_STATUSES = (AssignmentStatus.ASSIGNED, AssignmentStatus.IN_PROGRESS)
# Above this many open slots (or new triples), PostgreSQL gets COPY instead of INSERT
# (bench/assignments.py compares both).
COPY_THRESHOLD = 1000
# On the COPY path the slots are written in chunks of about this many estimates while the slot
# loop goes on computing the next ones (see _CopyWriter).
COPY_CHUNK_ROWS = 40_000


# (answer, criterion, rubric, group, panel, required overlap, position) of a triple to create.
TripleRow = tuple[int, int, int, str, int, int, int]


def triples_build(
    *,
    answer_ids: Iterable[int] | None = None,
    panel_id: int | None = None,
    reserved: bool = False,
) -> int:
    """Create the missing triples of the given answers (all answers by default).

    With `reserved`, the given answers are built even when reserved: a participant's
    submission, whose triples a judge scores while no expert is assigned them.

    With `panel_id`, only the triples routed to that panel, and the critical gates of the
    answers it scores (its experts score those gates too); other panels' triples are theirs.

    Runs under the build lock (see assignments_build): the existing triples are read after any
    concurrent builder committed its own, so the new ones never collide with theirs and can be
    written with a plain COPY. The only other writer of triples, exam and control material
    (panels.services), makes them for reserved copies this function never touches. The ORM path
    keeps ignore_conflicts all the same.
    """
    with transaction.atomic():
        build_lock()
        rows = _missing_triples(answer_ids, reserved=reserved)
        if panel_id is not None:
            rows = _rows_of_panel(rows, panel_id)
        if connection.vendor == "postgresql" and len(rows) > COPY_THRESHOLD:
            _copy_triples(rows)
        else:
            Triple.objects.bulk_create(
                [
                    Triple(
                        answer_id=answer,
                        criterion_id=criterion,
                        rubric_id=rubric,
                        group=group,
                        panel_id=panel,
                        required_overlap=overlap,
                        position=position,
                    )
                    for answer, criterion, rubric, group, panel, overlap, position in rows
                ],
                batch_size=5000,
                ignore_conflicts=True,
            )
    return len(rows)


def _rows_of_panel(rows: list[TripleRow], panel_id: int) -> list[TripleRow]:
    """The rows routed to the panel, and the critical gates of the answers the panel scores."""
    answers_here = {row[0] for row in rows if row[4] == panel_id}
    others = {row[0] for row in rows} - answers_here
    if others:
        # Rubric triples only: comparing an answer in a pair is no rubric scoring of it.
        answers_here |= set(
            Triple.objects.filter(
                panel_id=panel_id, answer_id__in=others, kind=TripleKind.POINTWISE
            ).values_list("answer_id", flat=True)
        )
    return [
        row
        for row in rows
        if row[4] == panel_id or (row[3] == CriterionGroup.CRITICAL and row[0] in answers_here)
    ]


def build_lock() -> None:
    """Take the build lock until the end of the current transaction (re-entrant); every
    builder of any kind of work takes it, so two builds never race for a slot."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [BUILD_LOCK_ID])


def _missing_triples(
    answer_ids: Iterable[int] | None, *, reserved: bool = False
) -> list[TripleRow]:
    table = RoutingTable.load()
    # Exam and control material are frozen copies that never become real work.
    answers = Answer.objects.all() if reserved else Answer.objects.filter(reserved__isnull=True)
    if reserved and answer_ids is None:
        raise ValueError("reserved answers are built only by id")
    if answer_ids is not None:
        answers = answers.filter(pk__in=list(answer_ids))
    rows = answers.values_list("pk", "instruction__task_id", "instruction__style_id")
    index = CriteriaIndex()
    existing: set[tuple[int, int]] = set()
    if answer_ids is None:
        # Every answer: one plain scan (pairs of reserved answers are never looked up) instead
        # of IN lists of every answer id.
        existing.update(Triple.objects.values_list("answer_id", "criterion_id"))
    else:
        answer_pks = [pk for pk, _t, _s in rows]
        for chunk_start in range(0, len(answer_pks), 20000):
            chunk = answer_pks[chunk_start : chunk_start + 20000]
            existing.update(
                Triple.objects.filter(answer_id__in=chunk).values_list("answer_id", "criterion_id")
            )
    new: list[TripleRow] = []
    for answer_id, task_id, style_id in rows:
        if task_id is None:
            continue  # a query only compared side by side: no POLLUX task, no rubric criteria
        for position, criterion in enumerate(index.for_task(task_id, style_id)):
            if (answer_id, criterion.id) in existing or criterion.rubric_id is None:
                continue
            new.append(
                (
                    answer_id,
                    criterion.pk,
                    criterion.rubric_id,
                    criterion.group,
                    table.panel_for(criterion, task_id, style_id),
                    overlap_for(criterion),
                    position,
                )
            )
    return new


def _copy_triples(rows: list[TripleRow]) -> None:
    """COPY BINARY the new triples: the same rows, in the same order, as bulk_create writes.

    The ids come from the column's default in row order, as with bulk_create, so both paths
    produce identical tables (tests/work/test_assignments.py compares them).
    """
    table = np.array(
        [(a, c, r, p, o, pos) for a, c, r, _g, p, o, pos in rows], dtype=np.int64
    ).reshape(-1, 6)
    with connection.wrap_database_errors, connection.cursor() as cursor:
        copy_model_rows(
            cursor,
            Triple,
            len(rows),
            {
                "answer": table[:, 0],
                "criterion": table[:, 1],
                "rubric": table[:, 2],
                "group": np.array([row[3].encode() for row in rows], dtype=bytes),
                "panel": table[:, 3],
                "required_overlap": table[:, 4],
                "position": table[:, 5],
                "reopened_note": "",
            },
        )


def _eligible_experts() -> dict[int, list[tuple[int, list[str]]]]:
    """panel id -> [(expert id, qualified groups or [] for all)] of active qualified experts."""
    result: dict[int, list[tuple[int, list[str]]]] = defaultdict(list)
    for panel_id, expert_id, groups in eligible_memberships().values_list(
        "panel_id", "expert_id", "qualified_groups"
    ):
        result[panel_id].append((expert_id, list(groups or [])))
    return result


def assignments_build(
    *,
    answer_ids: Iterable[int] | None = None,
    panel_id: int | None = None,
    job_id: int | None = None,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Build triples and fill every open slot with qualified experts (idempotent).

    `panel_id` scopes the build to one panel (a console build): only that panel's triples and
    assignments are made, with the critical gates its experts score along. Answers that are
    active control items of a panel get no new work of that panel (they are its gold).
    """
    answer_list = list(answer_ids) if answer_ids is not None else None
    # One transaction under the build lock: concurrent builders take turns, each seeing what
    # the previous one committed (triples and slots).
    with transaction.atomic():
        build_lock()
        new_triples = triples_build(answer_ids=answer_list, panel_id=panel_id)
        report = _fill_slots(answer_list, progress, panel_id)
    report["triples_created"] = new_triples
    return report


def _fill_slots(
    answer_ids: list[int] | None, progress: Progress | None, scope_panel: int | None = None
) -> dict[str, int]:
    # Side-by-side triples are placed by work.comparisons (one assignment per pair, not per
    # answer); this builder hands out rubric scoring only.
    triples = Triple.objects.filter(answer__reserved__isnull=True, kind=TripleKind.POINTWISE)
    if answer_ids is not None:
        triples = triples.filter(answer_id__in=answer_ids)
    if scope_panel is not None:
        triples = triples.filter(
            answer_id__in=Triple.objects.filter(
                panel_id=scope_panel, kind=TripleKind.POINTWISE
            ).values("answer_id")
        )
    # (answer, panel) pairs that are gold of the panel: no work of that panel on them
    # (quality registers its active control items in work.hooks).
    gold_pairs: set[tuple[int, int]] = set()
    for excluded in hooks.excluded_pairs:
        gold_pairs |= excluded(answer_ids)
    # Experts who wrote an answer (the human baseline) never score it.
    authored: dict[int, set[int]] = defaultdict(set)
    for provider in hooks.excluded_experts:
        for answer_id, expert_id in provider(answer_ids):
            authored[answer_id].add(expert_id)
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
    # Rubric work only: a side-by-side assignment sits on its pair's answer A with the same
    # (expert, answer, panel), but it is no rubric work on that answer (the expert still gets
    # that) and a released one is never revived as such.
    assignments = Assignment.objects.filter(kind=AssignmentKind.WORK, pair__isnull=True)
    if answer_ids is not None:
        assignments = assignments.filter(answer_id__in=answer_ids)
    for answer_id, panel_id, expert_id in assignments.exclude(
        status=AssignmentStatus.RELEASED
    ).values_list("answer_id", "panel_id", "expert_id"):
        existing_assignments[(answer_id, panel_id)].add(expert_id)
        experts_on_answer[answer_id].add(expert_id)
    # Released assignments of an expert are revived (same row, same id) if they get work again.
    released: dict[tuple[int, int, int], int] = {
        (expert_id, answer_id, panel_id): pk
        for pk, expert_id, answer_id, panel_id in assignments.filter(
            status=AssignmentStatus.RELEASED
        ).values_list("pk", "expert_id", "answer_id", "panel_id")
    }
    released_by: dict[tuple[int, int], set[int]] = defaultdict(set)  # (answer, panel) -> experts
    for expert_id, answer_id, panel_id in released:
        released_by[(answer_id, panel_id)].add(expert_id)
    # Who skipped or flagged an answer (work.flags) never gets it back, even when nobody else
    # is left: unlike an expired reservation, that expert said he will not score it.
    refused_by: dict[tuple[int, int], set[int]] = defaultdict(set)  # (answer, panel) -> experts
    flags = Flag.objects.filter(assignment__kind=AssignmentKind.WORK, assignment__pair__isnull=True)
    if answer_ids is not None:
        flags = flags.filter(assignment__answer_id__in=answer_ids)
    for expert_id, answer_id, panel_id in flags.values_list(
        "expert_id", "assignment__answer_id", "assignment__panel_id"
    ):
        refused_by[(answer_id, panel_id)].add(expert_id)

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

    # Roughly the slots still to fill: decides between COPY and bulk_create before the loop,
    # which streams to COPY as it goes.
    open_slots = sum(row[4] for row in triple_rows) - sum(map(len, taken_slots.values()))
    use_copy = connection.vendor == "postgresql" and open_slots > COPY_THRESHOLD
    # The writer starts with the checks of the triples this transaction created (triples_build):
    # the server is otherwise idle while the loop computes the first chunks.
    writer = _CopyWriter(_reservation_deadline(), check_first=Triple) if use_copy else None
    new_assignments: list[tuple[int, int, int]] = []  # (expert, answer, panel)
    new_estimates: list[tuple[int, int, int, int]] = []  # (assignment index, triple, expert, slot)
    reopened: dict[int, int] = {}  # assignment index -> id of the released assignment it revives
    written_assignments = written_estimates = 0
    total = len(by_answer)
    try:
        for done, (answer_id, items) in enumerate(by_answer.items(), start=1):
            panels_here = sorted(
                {panel for _pk, panel, group, _o in items if group != CriterionGroup.CRITICAL}
            ) + sorted(
                {panel for _pk, panel, group, _o in items if group == CriterionGroup.CRITICAL}
            )
            seen_panels: set[int] = set()
            for here in panels_here:
                if here in seen_panels or (answer_id, here) in gold_pairs:
                    continue
                if scope_panel is not None and here != scope_panel:
                    continue
                seen_panels.add(here)
                own = [it for it in items if it[1] == here]
                gates = [it for it in items if it[2] == CriterionGroup.CRITICAL and it[1] != here]
                need = max(
                    (it[3] - len(taken_slots[it[0]]) for it in own),
                    default=0,
                )
                if need <= 0:
                    continue
                taken_here = existing_assignments[(answer_id, here)]
                on_answer = experts_on_answer[answer_id]
                gone = released_by[(answer_id, here)]
                refused = refused_by.get((answer_id, here), set()) | authored.get(answer_id, set())
                # Who abandoned this answer goes last; then fresh eyes (experts not yet on this
                # answer for another panel); then the least loaded. Decorated tuples sort without
                # a key call per candidate: this loop runs for every (answer, panel) at POLLUX
                # scale.
                ranked = sorted(
                    (e in gone, e in on_answer, load[e], e, groups)
                    for e, groups in eligible.get(here, [])
                    if e not in taken_here and e not in refused
                )
                candidates = [(e, groups) for _g, _s, _l, e, groups in ranked]
                own_ids = {it[0] for it in own}
                todo = own + gates
                for expert_id, groups in candidates:
                    if need <= 0:
                        break
                    slots: list[tuple[int, int]] = []
                    for pk, _panel, group, overlap in todo:
                        if groups and group not in groups:
                            continue
                        taken = taken_slots[pk]
                        if expert_id in experts_on_triple[pk] or len(taken) >= overlap:
                            continue
                        # The lowest free slot: fewer than `overlap` are taken, so it is <= overlap.
                        slot = 1
                        while slot in taken:
                            slot += 1
                        slots.append((pk, slot))
                    if not any(pk in own_ids for pk, _slot in slots):
                        continue
                    index = len(new_assignments)
                    key = (expert_id, answer_id, here)
                    if key in released:
                        reopened[index] = released[key]
                    new_assignments.append(key)
                    for pk, slot in slots:
                        taken_slots[pk].add(slot)
                        experts_on_triple[pk].add(expert_id)
                        new_estimates.append((index, pk, expert_id, slot))
                    existing_assignments[(answer_id, here)].add(expert_id)
                    experts_on_answer[answer_id].add(expert_id)
                    load[expert_id] += len(slots)
                    need = max((it[3] - len(taken_slots[it[0]]) for it in own), default=0)
            # Hand finished answers to the writer thread: PostgreSQL stores them while this
            # loop computes the next ones.
            if writer and (
                len(new_estimates) - written_estimates >= COPY_CHUNK_ROWS or done == total
            ):
                writer.put(
                    (
                        new_assignments[written_assignments:],
                        new_estimates[written_estimates:],
                        {i: pk for i, pk in reopened.items() if i >= written_assignments},
                    )
                )
                written_assignments, written_estimates = len(new_assignments), len(new_estimates)
            if progress and (done % 500 == 0 or done == total):
                progress(done, total)
        if writer:
            writer.close()
            writer = None
    finally:
        if writer:  # the loop failed: stop the thread before the transaction is rolled back
            writer.abort()
    if not use_copy:
        assignment_ids = _write_assignments(new_assignments, reopened)
        _write_estimates([(assignment_ids[i], t, e, s) for i, t, e, s in new_estimates])
    return {
        "answers": total,
        "triples": len(triple_ids),
        "assignments_created": len(new_assignments),
        "estimates_created": len(new_estimates),
    }


def _reservation_deadline() -> Any:
    return timezone.now() + timedelta(hours=settings.POLLUX["ASSIGNMENT_RESERVATION_HOURS"])


def _write_assignments(rows: list[tuple[int, int, int]], reopened: dict[int, int]) -> list[int]:
    """Insert assignments (reviving released ones) and return their ids in the order given."""
    if not rows:
        return []
    deadline = _reservation_deadline()
    if reopened:
        Assignment.objects.filter(pk__in=reopened.values()).update(
            status=AssignmentStatus.ASSIGNED, reserved_until=deadline
        )
    created = iter(
        Assignment.objects.bulk_create(
            [
                Assignment(expert_id=e, answer_id=a, panel_id=p, reserved_until=deadline)
                for i, (e, a, p) in enumerate(rows)
                if i not in reopened
            ],
            batch_size=2000,
        )
    )
    return [reopened[i] if i in reopened else next(created).pk for i in range(len(rows))]


def _write_estimates(rows: Sequence[tuple[int, int, int, int]]) -> None:
    Estimate.objects.bulk_create(
        [Estimate(assignment_id=a, triple_id=t, expert_id=e, slot=s) for a, t, e, s in rows],
        batch_size=5000,
    )


# A chunk of the slot loop: new assignments (in index order, continuing the last chunk), their
# estimate slots (assignment index, triple, expert, slot), and the released assignments revived.
_Chunk = tuple[list[tuple[int, int, int]], list[tuple[int, int, int, int]], dict[int, int]]


class _CopyWriter(ThreadedCopyWriter[_Chunk]):
    """Writes the builder's chunks with COPY from a second thread, on the build's connection.

    The slot loop is pure Python while COPY, its index maintenance and the queuing of the
    deferred foreign-key checks run in PostgreSQL, so on two cores they overlap instead of
    following each other. The foreign keys of the rows it writes stay DEFERRED and are checked
    at COMMIT (checking each chunk early with SET CONSTRAINTS was measured: no faster, the
    server is then the busier side). Before the first chunk, though, the server has nothing to
    do while the loop computes it, so the thread first fires the pending checks of
    `check_first`'s table (the triples the build just created, ~1.8 s at POLLUX scale) with SET
    CONSTRAINTS ... IMMEDIATE, then sets them back to DEFERRED. An error in the thread aborts
    the build in the caller's thread.
    """

    thread_name = "assignments-copy"

    def __init__(
        self, deadline: datetime, *, check_first: type[models.Model] | None = None
    ) -> None:
        self._deadline = deadline
        constraints = ""
        if check_first is not None:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT string_agg(quote_ident(conname), ', ') FROM pg_constraint"
                    " WHERE conrelid = %s::regclass AND contype = 'f' AND condeferrable",
                    [check_first._meta.db_table],
                )
                constraints = (cursor.fetchone() or [None])[0] or ""
        self._now = timezone.now()
        self._ids: list[int] = []  # assignment index -> id

        def check(cursor: Any) -> None:
            cursor.execute(f"SET CONSTRAINTS {constraints} IMMEDIATE")
            cursor.execute(f"SET CONSTRAINTS {constraints} DEFERRED")

        super().__init__(first=check if constraints else None)

    def write(self, cursor: Any, chunk: _Chunk) -> None:
        assignments, estimates, reopened = chunk
        first = len(self._ids)
        revive = [reopened.get(first + i) for i in range(len(assignments))]
        fresh = [row for row, pk in zip(assignments, revive, strict=True) if pk is None]
        new_ids: list[int] = []
        if fresh:
            # The estimates reference these ids without a RETURNING.
            new_ids = next_ids(cursor, Assignment, len(fresh))
            self._copy_assignments(cursor, fresh, new_ids)
        revived = [pk for pk in revive if pk is not None]
        if revived:
            cursor.execute(
                f"UPDATE {Assignment._meta.db_table} SET status = %s, reserved_until = %s"  # noqa: S608 (model table name)
                " WHERE id = ANY(%s)",
                [AssignmentStatus.ASSIGNED.value, self._deadline, revived],
            )
        fresh_ids = iter(new_ids)
        self._ids.extend(pk if pk is not None else next(fresh_ids) for pk in revive)
        if estimates:
            self._copy_estimates(cursor, estimates)

    def _copy_assignments(
        self, cursor: Any, rows: list[tuple[int, int, int]], ids: list[int]
    ) -> None:
        table = np.array(rows, dtype=np.int64).reshape(-1, 3)
        copy_model_rows(
            cursor,
            Assignment,
            len(rows),
            {
                "id": np.array(ids, dtype=np.int64),
                "expert": table[:, 0],
                "answer": table[:, 1],
                "panel": table[:, 2],
                "kind": AssignmentKind.WORK.value,
                "status": AssignmentStatus.ASSIGNED.value,
                "reserved_until": self._deadline,
                "submission_key": "",
            },
            now=self._now,
        )

    def _copy_estimates(self, cursor: Any, rows: list[tuple[int, int, int, int]]) -> None:
        table = np.array(rows, dtype=np.int64).reshape(-1, 4)
        ids = np.array(self._ids, dtype=np.int64)
        copy_model_rows(
            cursor,
            Estimate,
            len(rows),
            {
                "triple": table[:, 1],
                "assignment": ids[table[:, 0]],
                "expert": table[:, 2],
                "slot": table[:, 3],
                "status": EstimateStatus.PENDING.value,
                "rationale": "",
            },
            now=self._now,
        )


@transaction.atomic
def assignments_release_expired(*, now: Any = None) -> int:
    """Return abandoned reservations to the pool; drafts are kept on the assignment.

    Submitted estimates stay; unsubmitted slots are freed so the next build gives them to
    someone else. The expert who comes back sees their text and is told what happened.
    """
    now = now or timezone.now()
    expired = list(
        Assignment.objects.select_for_update(skip_locked=True).filter(
            status__in=OPEN_STATUSES,
            reserved_until__lt=now,
            # Control items expire like work: one that never expired would be told apart.
            kind__in=[AssignmentKind.WORK, AssignmentKind.CONTROL],
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


@dataclass(frozen=True)
class Reassigned:
    """What a reassign released: how many assignments, and the answers whose work must go to
    other experts (the build that hands it out is the caller's: inline or a queued job)."""

    released: int
    answer_ids: list[int]


@transaction.atomic
def assignments_reassign(*, expert_id: int, panel_id: int | None = None) -> Reassigned:
    """Release an expert's open work (a supervisor's action), of one panel or of all.

    Control items go too: a queue left with gold only would tell the expert which items are
    gold. The console's reassign (console.services.expert_reassign) is this plus its audit
    and the panel's build job.
    """
    open_assignments = Assignment.objects.select_for_update().filter(
        expert_id=expert_id,
        status__in=OPEN_STATUSES,
        kind__in=[AssignmentKind.WORK, AssignmentKind.CONTROL],
    )
    if panel_id is not None:
        open_assignments = open_assignments.filter(panel_id=panel_id)
    released = list(open_assignments)
    for assignment in released:
        assignment_release(assignment=assignment, reason="reassigned")
    answers = sorted({a.answer_id for a in released if a.kind == AssignmentKind.WORK})
    return Reassigned(released=len(released), answer_ids=answers)
