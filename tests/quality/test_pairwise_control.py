"""Side-by-side (REPA) control items: gold pool -> control pairs, silent delivery, grading."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.urls import reverse

from material.models import AnswerPair
from panels.models import Expert, Membership, SupervisorAction
from protocol.pairwise import Label
from quality.control import (
    control_items_distribute,
    control_settings_update,
)
from quality.exams import ExamError
from quality.kind_pairwise import GOLD_COMMENT, control_pairs_add_from_gold
from quality.models import ControlDelivery, ControlItem, ControlStanding, ReferenceLabel
from taxonomy.models import ComparisonCriterion
from tests.conftest import Personas, make_expert
from tests.quality.test_pairwise_exam import (
    MODEL_A,
    MODEL_B,
    _client,
    _gold_labels,
    _label,
    _pair,
    _shown_form,
)
from work.comparisons import comparisons_build
from work.models import (
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    ReservedAnswer,
    Triple,
    TripleKind,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def gold(personas: Personas) -> dict[str, Any]:
    """Panel A: pairs 0-2 unanimous on every criterion (labelled by expert_a, labeller1 and
    labeller2), pair 3 unanimous but one criterion; a fresh expert with side-by-side work."""
    make_expert("labeller1", personas.panel_a)
    make_expert("labeller2", personas.panel_a)
    pairs = [_pair(n) for n in range(4)]
    comparisons_build(panel_id=personas.panel_a.pk, route=True, seed=3)
    for n in range(3):
        _label(pairs[n], _gold_labels(n))
    _label(pairs[3], _gold_labels(3), dissent="overall")
    checker = make_expert("checker", personas.panel_a)
    work = _pair_work(personas, checker, start=100, n=4)
    return {"personas": personas, "pairs": pairs, "checker": checker, "work": work}


def _pair_work(personas: Personas, expert: Expert, *, start: int, n: int) -> list[Assignment]:
    """Open side-by-side work of the expert (what the control rate is counted against)."""
    return [
        Assignment.objects.create(
            expert=expert,
            answer_id=pair.answer_a_id,
            pair=pair,
            panel=personas.panel_a,
            kind=AssignmentKind.WORK,
            status=AssignmentStatus.ASSIGNED,
        )
        for pair in (_pair(start + k) for k in range(n))
    ]


def _refs(item: ControlItem) -> dict[str, Label]:
    return {
        r.comparison_criterion.key: Label(r.label)
        for r in ReferenceLabel.objects.filter(control_item=item).select_related(
            "comparison_criterion"
        )
    }


def _wrong(labels: dict[str, Label]) -> dict[str, Label]:
    """A label other than the reference on every criterion."""
    return {k: Label.BOTH_BAD if v is not Label.BOTH_BAD else Label.A for k, v in labels.items()}


def _deliveries(expert: Expert) -> list[ControlDelivery]:
    return list(
        ControlDelivery.objects.filter(expert=expert)
        .select_related("item", "assignment")
        .order_by("pk")
    )


def _setup(personas: Personas, **settings: Any) -> list[ControlItem]:
    items = control_pairs_add_from_gold(
        panel=personas.panel_a, n=10, seed=1, user=personas.supervisor_a
    )
    control_settings_update(panel=personas.panel_a, user=personas.supervisor_a, **settings)
    return items


def test_the_gold_pool_becomes_control_pairs_with_their_unanimous_labels(
    gold: dict[str, Any],
) -> None:
    personas, pairs = gold["personas"], gold["pairs"]
    items = control_pairs_add_from_gold(
        panel=personas.panel_a, n=10, seed=1, user=personas.supervisor_a
    )
    # Only the pairs unanimous on every criterion; the source pair itself is the item.
    assert sorted(i.pair_id or 0 for i in items) == [p.pk for p in pairs[:3]]
    n_criteria = ComparisonCriterion.objects.count()
    for item in items:
        item.refresh_from_db()
        assert item.answer_id is None and item.is_active and item.panel_id == personas.panel_a.pk
        refs = ReferenceLabel.objects.filter(control_item=item)
        assert refs.count() == n_criteria
        assert {r.comment for r in refs} == {GOLD_COMMENT} and {r.item_id for r in refs} == {None}
        assert _refs(item) == _gold_labels([p.pk for p in pairs].index(item.pair_id))
    assert SupervisorAction.objects.filter(
        action=SupervisorAction.Kind.CONTROL_ITEM_ADD, panel=personas.panel_a
    ).exists()
    # Nothing left to add; out-of-range n; another panel has no gold of its own.
    with pytest.raises(ExamError):
        control_pairs_add_from_gold(panel=personas.panel_a, n=1, seed=2)
    with pytest.raises(ExamError):
        control_pairs_add_from_gold(panel=personas.panel_a, n=0)
    with pytest.raises(ExamError):
        control_pairs_add_from_gold(panel=personas.panel_b, n=3, seed=1)
    assert ControlItem.objects.filter(panel=personas.panel_b).count() == 0


def test_a_delivery_is_a_pair_copy_that_looks_like_work(gold: dict[str, Any]) -> None:
    personas, checker = gold["personas"], gold["checker"]
    items = _setup(personas, rate=0.5)
    # Four pairs of work at rate 0.5: two control pairs; idempotent.
    assert control_items_distribute(panel_id=personas.panel_a.pk) == 2
    assert control_items_distribute(panel_id=personas.panel_a.pk) == 0
    deliveries = _deliveries(checker)
    assert len(deliveries) == 2
    n_criteria = ComparisonCriterion.objects.count()
    sources = {i.pair_id for i in items}
    for delivery in deliveries:
        assignment = delivery.assignment
        assert assignment.kind == AssignmentKind.CONTROL and assignment.pair_id is not None
        assert assignment.reserved_until is not None  # reserved and expiring, like work
        copy = AnswerPair.objects.select_related("answer_a", "answer_b").get(pk=assignment.pair_id)
        assert delivery.item.pair_id is not None
        source = AnswerPair.objects.select_related("answer_a", "answer_b").get(
            pk=delivery.item.pair_id
        )
        assert copy.pk not in sources and delivery.answer_id == copy.answer_a_id
        both = ((copy.answer_a, source.answer_a), (copy.answer_b, source.answer_b))
        for copied, original in both:
            assert copied.pk != original.pk and copied.text == original.text
            assert copied.reserved.purpose == ReservedAnswer.Purpose.CONTROL
        triples = Triple.objects.filter(pair=copy)
        assert triples.count() == n_criteria
        assert {(t.kind, t.required_overlap) for t in triples} == {(TripleKind.PAIRWISE, 1)}
        assert assignment.estimates.count() == n_criteria

    client = _client("checker")
    work_page = client.get(reverse("assignment", args=[gold["work"][0].pk])).content.decode()
    control = deliveries[0].assignment
    page = client.get(reverse("assignment", args=[control.pk])).content.decode()
    # Nothing tells it apart: no word "control", no reference, no models; the same buttons,
    # and Skip goes through the queue as work's does.
    assert "control" not in work_page.lower()
    assert "control" not in page.lower() and "контрол" not in page.lower()
    assert GOLD_COMMENT not in page and MODEL_A not in page and MODEL_B not in page
    for marker in ('id="refuse"', 'id="skip"', reverse("queue"), 'name="comment"'):
        assert marker in work_page and marker in page, marker
    for criterion in ComparisonCriterion.objects.all():
        assert f'name="label_{criterion.key}"' in page
    assert reverse("queue_next") + f"?after={control.pk}" in page
    assert 'id="exam-position"' not in page
    # Save goes to the queue, like work.
    refs = _refs(deliveries[0].item)
    sent = client.post(reverse("compare_submit", args=[control.pk]), _shown_form(control, refs))
    assert sent.status_code == 302
    assert sent["Location"] == reverse("queue_next") + f"?after={control.pk}&kind=pairwise"


def test_right_labels_in_a_swapped_placement_match_and_wrong_ones_do_not(
    gold: dict[str, Any], django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, checker = gold["personas"], gold["checker"]
    _setup(personas, rate=0.5, min_items=10)
    control_items_distribute(panel_id=personas.panel_a.pk)
    right, unplaced = _deliveries(checker)
    # Both shown swapped: the right labels must be posted as placed on the page.
    Assignment.objects.filter(pk__in=[right.assignment_id, unplaced.assignment_id]).update(
        swapped=True
    )
    client = _client("checker")
    n_criteria = ComparisonCriterion.objects.count()
    for delivery, place in ((right, True), (unplaced, False)):
        assignment = Assignment.objects.get(pk=delivery.assignment_id)
        with django_capture_on_commit_callbacks(execute=True):
            sent = client.post(
                reverse("compare_submit", args=[assignment.pk]),
                _shown_form(assignment, _refs(delivery.item), place=place),
            )
        assert sent.status_code == 302
        delivery.refresh_from_db()
        assert delivery.graded_at is not None and delivery.n_total == n_criteria
    assert right.n_matched == n_criteria
    # Posted as if unswapped: every "A/B is better" is the other side; "both" labels still hold.
    ab = sum(1 for v in _refs(unplaced.item).values() if v in (Label.A, Label.B))
    assert ab > 0 and unplaced.n_matched == n_criteria - ab
    standing = ControlStanding.objects.get(expert=checker, panel=personas.panel_a)
    assert (standing.n_items, standing.n_total) == (2, 2 * n_criteria)
    assert standing.n_matched == right.n_matched + unplaced.n_matched
    # Only the first submission counts.
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("compare_submit", args=[unplaced.assignment_id]),
            _shown_form(unplaced.assignment, _refs(unplaced.item)) | {"submission_key": "again"},
        )
    unplaced.refresh_from_db()
    assert unplaced.n_matched == n_criteria - ab
    assert ControlStanding.objects.get(pk=standing.pk).n_items == 2


def test_an_expert_failing_control_pairs_is_paused(
    gold: dict[str, Any], django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    personas, checker = gold["personas"], gold["checker"]
    _setup(personas, rate=0.5, min_items=2, accuracy_threshold=0.7)
    control_items_distribute(panel_id=personas.panel_a.pk)
    first, second = _deliveries(checker)
    client = _client("checker")
    membership = Membership.objects.get(expert=checker, panel=personas.panel_a)
    for n, delivery in enumerate((first, second)):
        with django_capture_on_commit_callbacks(execute=True):
            client.post(
                reverse("compare_submit", args=[delivery.assignment_id]),
                _shown_form(delivery.assignment, _wrong(_refs(delivery.item))),
            )
        membership.refresh_from_db()
        # Below the panel's minimum count of items nobody is paused.
        assert membership.is_paused == (n == 1)
    assert "control" in membership.paused_reason
    standing = ControlStanding.objects.get(expert=checker, panel=personas.panel_a)
    assert standing.n_items == 2 and standing.accuracy == 0
    assert SupervisorAction.objects.filter(action="auto_pause", expert=checker).exists()


def test_the_source_pairs_annotators_never_get_it(gold: dict[str, Any]) -> None:
    personas, pairs = gold["personas"], gold["pairs"]
    items = _setup(personas, rate=1.0)
    # The three labellers of every gold pair, with plenty of side-by-side work.
    labellers = [Expert.objects.get(user__username=u) for u in ("expert_a", "labeller1")]
    _pair_work(personas, labellers[1], start=200, n=4)
    # One who held (and gave back) gold pair 0 only.
    late = make_expert("late", personas.panel_a)
    _pair_work(personas, late, start=300, n=4)
    Assignment.objects.create(
        expert=late,
        answer_id=pairs[0].answer_a_id,
        pair=pairs[0],
        panel=personas.panel_a,
        kind=AssignmentKind.WORK,
        status=AssignmentStatus.RELEASED,
    )
    control_items_distribute(panel_id=personas.panel_a.pk)
    for labeller in labellers:
        assert not ControlDelivery.objects.filter(expert=labeller).exists()
    got = {d.item.pair_id for d in _deliveries(late)}
    by_pair = {i.pair_id: i for i in items}
    assert pairs[0].pk not in got and got == set(by_pair) - {pairs[0].pk}
    assert {d.item.pair_id for d in _deliveries(gold["checker"])} == set(by_pair)


def test_the_console_form_adds_control_pairs_for_the_panels_supervisor_only(
    gold: dict[str, Any],
) -> None:
    personas = gold["personas"]
    url = reverse("console_control_pairs_add", args=[personas.panel_a.pk])
    assert _client("sup_b").post(url, {"n": "2", "seed": "1"}).status_code == 404
    assert _client("expert_a").post(url, {"n": "2", "seed": "1"}).status_code == 403
    assert not ControlItem.objects.exists()
    client = _client("sup_a")
    bad = client.post(url, {"n": "0"})
    assert bad.status_code == 302 and not ControlItem.objects.exists()
    sent = client.post(url, {"n": "2", "seed": "1"})
    assert sent.status_code == 302
    assert sent["Location"] == reverse("console_control", args=[personas.panel_a.pk])
    assert ControlItem.objects.filter(panel=personas.panel_a, pair__isnull=False).count() == 2
    page = client.get(sent["Location"]).content.decode()
    assert 'id="gold-pairs-form"' in page and page.count("Side-by-side pair ") == 2
