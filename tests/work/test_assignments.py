from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from material.models import Answer
from panels.models import Expert, Panel
from quality.exams import (
    ReferenceInput,
    exam_attempt_start,
    exam_create,
    exam_item_add,
    exam_references_set,
)
from taxonomy.services import criteria_for
from tests.conftest import Personas, criterion_of, make_expert, rubric_of
from work import assignments
from work.assignments import (
    assignments_build,
    assignments_reassign,
    assignments_release_expired,
)
from work.models import Assignment, AssignmentStatus, Estimate, Triple
from work.services import ScoreInput, assignment_submit

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True, params=["bulk_create", "copy"])
def write_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on both write paths: small builds use bulk_create, POLLUX-scale ones
    stream COPY chunks from a second thread. Tiny chunks make the COPY path write several."""
    if request.param == "copy":
        monkeypatch.setattr(assignments, "COPY_THRESHOLD", 0)
        monkeypatch.setattr(assignments, "COPY_CHUNK_ROWS", 7)
    return str(request.param)


def staff(n: int = 5) -> dict[str, list[Expert]]:
    """Enough qualified experts in the panels a scientific answer touches."""
    keys = ["crowd", "editing", "science", "literature", "law", "code", "stem"]
    return {
        key: [make_expert(f"{key}_{i}", Panel.objects.get(key=key)) for i in range(n)]
        for key in keys
    }


def test_it_routes_each_criterion_group_to_its_panel(make_answer: Callable[..., Answer]) -> None:
    answer = make_answer("Text Transformation / Summarizing / Brief retelling / Scientific text")
    assignments_build(answer_ids=[answer.pk])
    panels = {criterion_of(t).key: t.panel.key for t in Triple.objects.filter(answer=answer)}
    assert panels["narushenie_formata"] == "crowd"
    assert panels["censor"] == "crowd"
    assert panels["value"] == "crowd"  # subjective
    assert panels["repeats"] == "editing"  # general
    domain = Triple.objects.filter(answer=answer, group="domain")
    task = Triple.objects.filter(answer=answer, group="task")
    assert domain.exists() and task.exists()
    # Domain criteria follow the style; summarizing is the editing panel's task.
    assert {t.panel.key for t in domain} == {"science"}
    assert {t.panel.key for t in task} == {"editing"}


def test_a_task_owned_by_several_panels_is_decided_by_style(
    make_answer: Callable[..., Answer],
) -> None:
    science = make_answer("Text Transformation / Extract / Scientific text")
    literary = make_answer("Text Transformation / Extract / Literary text")
    assignments_build(answer_ids=[science.pk, literary.pk])
    assert {t.panel.key for t in Triple.objects.filter(answer=science, group="task")} == {"science"}
    assert {t.panel.key for t in Triple.objects.filter(answer=literary, group="task")} == {
        "literature"
    }


def test_overlap_is_met_exactly_and_a_rebuild_adds_nothing(
    make_answer: Callable[..., Answer],
) -> None:
    staff()
    answers = [make_answer() for _ in range(3)]
    first = assignments_build(answer_ids=[a.pk for a in answers])
    assert first["estimates_created"] > 0
    for triple in Triple.objects.filter(answer__in=answers):
        assert triple.estimates.count() == triple.required_overlap, triple.criterion_id
    critical = Triple.objects.filter(answer=answers[0], group="critical").first()
    assert critical is not None and critical.required_overlap == 5

    second = assignments_build(answer_ids=[a.pk for a in answers])
    assert second["estimates_created"] == 0 and second["assignments_created"] == 0


def test_an_expert_gets_whole_answers_and_never_a_triple_twice(
    make_answer: Callable[..., Answer],
) -> None:
    staff()
    answers = [make_answer() for _ in range(4)]
    assignments_build()
    per_triple_expert = Counter(Estimate.objects.values_list("triple_id", "expert_id"))
    assert max(per_triple_expert.values()) == 1
    # Whole answers: within one answer and panel, all criteria of a group are scored by the
    # same experts, each in a single assignment.
    holders: dict[tuple[int, int, str], set[frozenset[int]]] = {}
    for triple in Triple.objects.filter(answer__in=answers).exclude(group="critical"):
        experts = frozenset(triple.estimates.values_list("expert_id", flat=True))
        holders.setdefault((triple.answer_id, triple.panel_id, triple.group), set()).add(experts)
    assert holders and all(len(sets) == 1 for sets in holders.values())
    for assignment in Assignment.objects.all():
        assert assignment.estimates.exists()
        assert set(assignment.estimates.values_list("triple__answer_id", flat=True)) == {
            assignment.answer_id
        }
    assert len(answers) == 4


def test_only_qualified_active_experts_receive_work(make_answer: Callable[..., Answer]) -> None:
    science = Panel.objects.get(key="science")
    qualified = make_expert("q", science)
    unqualified = make_expert("u", science, qualified=False)
    paused = make_expert("p", science)
    paused.memberships.update(is_paused=True)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    holders = set(Assignment.objects.values_list("expert_id", flat=True))
    assert qualified.pk in holders
    assert unqualified.pk not in holders and paused.pk not in holders


def test_work_is_balanced_across_experts(make_answer: Callable[..., Answer]) -> None:
    science = Panel.objects.get(key="science")
    experts = [make_expert(f"s{i}", science) for i in range(4)]
    for _ in range(8):
        make_answer()
    assignments_build()
    loads = Counter(Assignment.objects.filter(panel=science).values_list("expert_id", flat=True))
    # 8 answers x 2 overlap = 16 assignments over 4 experts: 4 each.
    assert sorted(loads[e.pk] for e in experts) == [4, 4, 4, 4]


def test_expired_reservations_return_to_the_pool_and_keep_drafts(
    make_answer: Callable[..., Answer],
) -> None:
    science = Panel.objects.get(key="science")
    first, second = make_expert("first", science), make_expert("second", science)
    third = make_expert("third", science)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    taken = Assignment.objects.filter(panel=science, answer=answer)
    assert taken.count() == 2
    victim = taken.first()
    assert victim is not None
    est = victim.estimates.first()
    assert est is not None
    est.status, est.rationale = "draft", "Черновик обоснования"
    est.save()
    Assignment.objects.filter(pk=victim.pk).update(
        reserved_until=timezone.now() - timedelta(minutes=1)
    )

    assert assignments_release_expired() == 1
    victim.refresh_from_db()
    assert victim.status == AssignmentStatus.RELEASED
    assert victim.drafts_backup[str(est.triple_id)]["rationale"] == "Черновик обоснования"
    assert not victim.estimates.filter(status__in=["pending", "draft"]).exists()

    assignments_build(answer_ids=[answer.pk])
    holders = set(
        Assignment.objects.filter(panel=science, answer=answer)
        .exclude(status="released")
        .values_list("expert_id", flat=True)
    )
    assert len(holders) == 2 and victim.expert_id not in holders
    assert {first.pk, second.pk, third.pk} >= holders


def test_a_released_assignment_is_revived_when_its_expert_is_the_only_one_left(
    make_answer: Callable[..., Answer],
) -> None:
    science = Panel.objects.get(key="science")
    make_expert("stays", science)
    leaves = make_expert("leaves", science)
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    victim = Assignment.objects.get(panel=science, answer=answer, expert=leaves)
    slots = victim.estimates.count()
    Assignment.objects.filter(pk=victim.pk).update(
        reserved_until=timezone.now() - timedelta(minutes=1)
    )
    assert assignments_release_expired() == 1
    assert not victim.estimates.exists()

    report = assignments_build(answer_ids=[answer.pk])
    # Nobody else is qualified: the same row comes back (no second assignment for the key).
    assert report["assignments_created"] == 1 and report["estimates_created"] == slots
    revived = Assignment.objects.get(panel=science, answer=answer, expert=leaves)
    assert revived.pk == victim.pk and revived.status == AssignmentStatus.ASSIGNED
    assert revived.reserved_until is not None and revived.reserved_until > timezone.now()
    assert revived.estimates.count() == slots
    for triple in Triple.objects.filter(answer=answer, panel=science):
        assert triple.estimates.count() == triple.required_overlap


def test_a_supervisor_reassigns_an_experts_open_work(make_answer: Callable[..., Answer]) -> None:
    science = Panel.objects.get(key="science")
    a, b, c = (make_expert(n, science) for n in "abc")
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    holder = Assignment.objects.filter(panel=science).first()
    assert holder is not None
    # Scoped to another panel, the one reassign releases nothing of this one.
    elsewhere = Panel.objects.exclude(pk=science.pk).first()
    assert elsewhere is not None
    assert assignments_reassign(expert_id=holder.expert_id, panel_id=elsewhere.pk).released == 0
    released = assignments_reassign(expert_id=holder.expert_id)
    assert released.released >= 1 and released.answer_ids == [answer.pk]
    assignments_build(answer_ids=released.answer_ids)
    active = Assignment.objects.filter(panel=science, answer=answer).exclude(status="released")
    assert holder.expert_id not in set(active.values_list("expert_id", flat=True))
    assert active.count() == 2
    assert {a.pk, b.pk, c.pk} >= set(active.values_list("expert_id", flat=True))


def test_the_database_refuses_a_second_estimate_for_the_same_slot(
    make_answer: Callable[..., Answer],
) -> None:
    science = Panel.objects.get(key="science")
    make_expert("one", science)
    make_expert("two", science)
    other = make_expert("other")
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    existing = Estimate.objects.filter(triple__group="domain").first()
    assert existing is not None
    assignment = Assignment.objects.create(expert=other, answer=answer, panel=science, kind="exam")
    with pytest.raises(IntegrityError), transaction.atomic():
        Estimate.objects.create(
            triple=existing.triple,
            assignment=assignment,
            expert=other,
            slot=existing.slot,
        )


@pytest.mark.django_db(transaction=True)
def test_two_builders_racing_never_exceed_the_overlap(make_answer: Callable[..., Answer]) -> None:
    assert connection.vendor == "postgresql"
    staff(3)
    answers = [make_answer() for _ in range(3)]
    ids = [a.pk for a in answers]
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def build() -> None:
        try:
            barrier.wait()
            assignments_build(answer_ids=ids)
        except BaseException as exc:  # reported to the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=build) for _ in range(2)]
    interval = sys.getswitchinterval()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sys.getswitchinterval() == interval
    for triple in Triple.objects.filter(answer_id__in=ids):
        assert triple.estimates.count() == triple.required_overlap


def test_both_paths_store_the_same_fresh_rows(
    make_answer: Callable[..., Answer], write_path: str
) -> None:
    """The COPY path lays out binary rows by hand: every column must read back as the ORM's."""
    staff(2)
    answer = make_answer()
    before = timezone.now()
    assignments_build(answer_ids=[answer.pk])
    work = list(Assignment.objects.filter(answer=answer))
    assert work
    hours = timedelta(hours=settings.POLLUX["ASSIGNMENT_RESERVATION_HOURS"])
    for a in work:
        assert (a.kind, a.status, a.time_spent_ms) == ("work", "assigned", 0)
        assert (a.critical_stop, a.locked, a.drafts_backup, a.submission_key) == (
            False,
            False,
            {},
            "",
        )
        assert a.started_at is None and a.submitted_at is None
        assert a.reserved_until is not None
        assert before + hours <= a.reserved_until <= timezone.now() + hours
        assert before <= a.created_at <= timezone.now()
    estimates = list(Estimate.objects.filter(triple__answer=answer).select_related("assignment"))
    assert estimates
    for e in estimates:
        assert (e.status, e.score, e.is_na, e.rationale) == ("pending", None, False, "")
        assert (e.rubric_id, e.time_spent_ms, e.revision, e.submitted_at) == (None, 0, 0, None)
        assert e.assignment.expert_id == e.expert_id and e.assignment.answer_id == answer.pk
        assert 1 <= e.slot <= e.triple.required_overlap
        assert before <= e.updated_at <= timezone.now()


@pytest.mark.parametrize("write_path", ["copy"], indirect=True)  # the thread is COPY's alone
def test_a_failed_copy_chunk_aborts_the_whole_build(
    make_answer: Callable[..., Answer], write_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A constraint violation in the writer thread reaches the caller as Django's IntegrityError
    and nothing of the build stays."""
    staff(2)
    answers = [make_answer() for _ in range(2)]
    copy_estimates = assignments._CopyWriter._copy_estimates

    def twice(self: assignments._CopyWriter, cursor: Any, rows: list[Any]) -> None:
        copy_estimates(self, cursor, rows)
        copy_estimates(self, cursor, rows)  # the same slots again: the unique constraints refuse

    monkeypatch.setattr(assignments._CopyWriter, "_copy_estimates", twice)
    interval = sys.getswitchinterval()
    with pytest.raises(IntegrityError):
        assignments_build(answer_ids=[a.pk for a in answers])
    assert not Estimate.objects.exists() and not Assignment.objects.exists()
    assert not [t for t in threading.enumerate() if t.name == "assignments-copy"]
    assert sys.getswitchinterval() == interval


def test_an_error_in_the_loop_stops_the_writer_thread(
    make_answer: Callable[..., Answer], write_path: str
) -> None:
    staff(2)
    answers = [make_answer() for _ in range(3)]

    def fail(done: int, total: int) -> None:
        raise RuntimeError("progress failed")

    interval = sys.getswitchinterval()
    with pytest.raises(RuntimeError, match="progress failed"):
        assignments_build(answer_ids=[a.pk for a in answers], progress=fail)
    assert not Estimate.objects.exists() and not Assignment.objects.exists()
    assert not [t for t in threading.enumerate() if t.name == "assignments-copy"]
    assert sys.getswitchinterval() == interval


@pytest.mark.parametrize("write_path", ["copy"], indirect=True)  # the thread is COPY's alone
def test_the_new_triples_are_checked_by_the_writer_and_stay_deferred_after(
    make_answer: Callable[..., Answer], write_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer thread fires the pending foreign-key checks of the new triples before its
    first chunk: a bad triple fails the build there, as Django's IntegrityError, and leaves
    nothing. After a good build the triple constraints are deferred again."""
    staff(2)
    answer = make_answer()
    missing = assignments._missing_triples

    def with_a_bad_panel(answer_ids: Any, **kwargs: Any) -> list[assignments.TripleRow]:
        rows = missing(answer_ids, **kwargs)
        a, c, r, g, _panel, o, pos = rows[0]
        return [(a, c, r, g, 10**9, o, pos), *rows[1:]]

    monkeypatch.setattr(assignments, "_missing_triples", with_a_bad_panel)
    with pytest.raises(IntegrityError, match="panel"):
        assignments_build(answer_ids=[answer.pk])
    assert not Triple.objects.exists() and not Estimate.objects.exists()
    assert not [t for t in threading.enumerate() if t.name == "assignments-copy"]

    monkeypatch.setattr(assignments, "_missing_triples", missing)
    with transaction.atomic():
        assert assignments_build(answer_ids=[answer.pk])["estimates_created"] > 0
        built = Triple.objects.filter(answer=answer).first()
        assert built is not None
        # Deferred again: a bad row is accepted until the checks run (at COMMIT, here forced).
        Triple.objects.create(
            answer=make_answer(),
            criterion_id=built.criterion_id,
            rubric_id=built.rubric_id,
            group=built.group,
            panel_id=10**9,
            required_overlap=1,
        )
        with pytest.raises(IntegrityError, match="panel"), connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        transaction.set_rollback(True)


def _triple_rows() -> list[tuple[Any, ...]]:
    """Every column of every triple in id order, ids relative to the first one."""
    rows = list(
        Triple.objects.order_by("pk").values_list(
            "pk",
            "answer_id",
            "criterion_id",
            "rubric_id",
            "group",
            "panel_id",
            "required_overlap",
            "position",
            "reopened_note",
        )
    )
    return [(row[0] - rows[0][0], *row[1:]) for row in rows]


# It switches between the paths itself: one run, from the bulk_create setup, is enough.
@pytest.mark.parametrize("write_path", ["bulk_create"], indirect=True)
def test_both_paths_create_the_same_triples(
    make_answer: Callable[..., Answer], write_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """COPY lays out the triples (text of varying width included) by hand: the table must come
    out exactly as bulk_create leaves it, ids and their order included."""
    answers = [
        make_answer(),
        make_answer("Text Transformation / Summarizing / Brief retelling / Scientific text"),
        make_answer("Text Transformation / Extract / Literary text"),
    ]
    copied: list[int] = []
    copy_triples = assignments._copy_triples

    def spy(rows: list[assignments.TripleRow]) -> None:
        copied.append(len(rows))
        copy_triples(rows)

    monkeypatch.setattr(assignments, "_copy_triples", spy)
    tables = {}
    for threshold in (sys.maxsize, 0):
        monkeypatch.setattr(assignments, "COPY_THRESHOLD", threshold)
        with transaction.atomic():
            created = assignments.triples_build(answer_ids=[a.pk for a in answers])
            tables[threshold] = _triple_rows()
            transaction.set_rollback(True)
        assert created == len(tables[threshold])
    assert copied == [len(tables[0])]  # the second build, and only it, went through COPY
    assert len({row[4] for row in tables[0]}) >= 4  # several groups, texts of several widths
    assert tables[0] == tables[sys.maxsize]
    # A second build finds them all.
    assert assignments.triples_build(answer_ids=[a.pk for a in answers]) == len(tables[0])
    assert assignments.triples_build(answer_ids=[a.pk for a in answers]) == 0


def _copies_out_of_step() -> list[int]:
    """Estimates whose denormalised columns differ from their source: the expert from the
    assignment's (its database foreign key is off), the rubric, once submitted, from the
    triple's."""
    expert = Estimate.objects.exclude(expert_id=F("assignment__expert_id"))
    rubric = Estimate.objects.filter(rubric__isnull=False).exclude(rubric_id=F("triple__rubric_id"))
    return list(expert.union(rubric).values_list("pk", flat=True))


def test_estimate_copies_stay_equal_to_their_source(
    make_answer: Callable[..., Answer], personas: Personas
) -> None:
    """Every writer of estimates: build, release and revival, reassignment, scoring, and the
    frozen material of an exam."""
    science = personas.panel_a
    for i in range(3):
        make_expert(f"sci{i}", science)
    answers = [make_answer() for _ in range(3)]
    assignments_build()
    assert Estimate.objects.exists() and _copies_out_of_step() == []

    # Release one reservation and rebuild: with another expert free it goes elsewhere...
    first = Assignment.objects.filter(panel=science).order_by("pk").first()
    assert first is not None
    Assignment.objects.filter(pk=first.pk).update(
        reserved_until=timezone.now() - timedelta(minutes=1)
    )
    assert assignments_release_expired() == 1
    assignments_build(answer_ids=[first.answer_id])
    # ... and a supervisor moves an expert's open work to the others.
    moved = Assignment.objects.filter(panel=science, status="assigned").order_by("pk").last()
    assert moved is not None
    released = assignments_reassign(expert_id=moved.expert_id)
    assert assignments_build(answer_ids=released.answer_ids)["estimates_created"] > 0
    assert _copies_out_of_step() == []

    # Scoring writes the rubric the scores were given under.
    work = Assignment.objects.filter(status="assigned", kind="work").order_by("pk").first()
    assert work is not None
    items = [
        ScoreInput(
            triple_id=e.triple_id,
            score=0 if e.triple.group == "critical" else rubric_of(e.triple).max_value,
            rationale="Ответ соответствует критерию, замечаний нет.",
        )
        for e in work.estimates.select_related("triple__rubric")
    ]
    assert assignment_submit(assignment=work, items=items).ok
    assert work.estimates.filter(rubric__isnull=False).count() == len(items) > 0

    # An exam: frozen copies with their own triples, assignment and estimates.
    candidate = make_expert("candidate", science, qualified=False)
    exam = exam_create(panel=science, title="Наука", user=personas.supervisor_a, is_active=True)
    exam, item = exam_item_add(exam=exam, answer=answers[0], user=personas.supervisor_a)
    criterion = next(c for c in criteria_for(answers[0].instruction) if c.rubric)
    exam = exam_references_set(
        exam=exam,
        rows=[ReferenceInput(answer_id=item.scored_answer_id, criterion_id=criterion.pk, score=0)],
        user=personas.supervisor_a,
    )
    exam_attempt_start(exam=exam, expert=candidate)
    assert Estimate.objects.filter(assignment__kind="exam", expert=candidate).exists()
    assert _copies_out_of_step() == []
