from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from annotation.assignments import (
    assignments_build,
    assignments_reassign,
    assignments_release_expired,
)
from annotation.models import Answer, Assignment, AssignmentStatus, Estimate, Triple
from panels.models import Expert, Panel
from tests.conftest import make_expert

pytestmark = pytest.mark.django_db


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
    panels = {t.criterion.key: t.panel.key for t in Triple.objects.filter(answer=answer)}
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
        assert triple.estimates.count() == triple.required_overlap, triple.criterion.key
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
    paused.is_paused = True
    paused.save()
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


def test_a_supervisor_reassigns_an_experts_open_work(make_answer: Callable[..., Answer]) -> None:
    science = Panel.objects.get(key="science")
    a, b, c = (make_expert(n, science) for n in "abc")
    answer = make_answer()
    assignments_build(answer_ids=[answer.pk])
    holder = Assignment.objects.filter(panel=science).first()
    assert holder is not None
    report = assignments_reassign(expert_id=holder.expert_id)
    assert report["released"] >= 1
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
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for triple in Triple.objects.filter(answer_id__in=ids):
        assert triple.estimates.count() == triple.required_overlap
