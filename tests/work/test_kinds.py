"""The task-kind seam (work.kinds): each kind is a plug-in of every layer, chosen by the kind
value of the item at run time."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from dataset.parts import parts
from quality import kinds as gold_kinds
from quality.checks import gold_kinds_complete
from quality.models import ControlItem, ExamItem
from work import checks, kinds, pages
from work.models import Assignment

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Scratch:
    key: str = "scratch-test"
    item_field: str = "scratch"
    in_entry: bool = False

    def flag_refusal(self) -> str:
        return "no"

    def rubric_refusal(self, assignment_id: int) -> str:
        return "no"


@pytest.fixture
def scratch_kind() -> Iterator[Scratch]:
    kind = Scratch()
    kinds.items.register(kind, key="scratch-test")
    yield kind
    kinds.items.pop("scratch-test")


def test_every_kind_is_declared_and_every_held_kind_has_its_page_and_gold_items() -> None:
    assert [k.key for k in kinds.registered()] == [
        kinds.POINTWISE,
        kinds.PAIRWISE,
        kinds.MARKUP,
        kinds.AUTHORING,
    ]
    assert kinds.items.keys() == [kinds.POINTWISE, kinds.PAIRWISE]
    assert checks.task_kinds_complete() == [] and gold_kinds_complete() == []
    assert set(pages.pages.keys()) == set(gold_kinds.kinds.keys()) == set(kinds.items.keys())
    assert parts.keys() == [kinds.PAIRWISE]


def test_a_held_kind_without_its_page_or_gold_items_fails_the_start_up_checks(
    scratch_kind: Scratch,
) -> None:
    assert [e.id for e in checks.task_kinds_complete()] == ["work.E001"]
    assert [e.id for e in gold_kinds_complete()] == ["quality.E001"]
    assert "scratch-test" in checks.task_kinds_complete()[0].msg


def test_a_row_s_kind_is_the_kind_whose_item_field_it_fills(scratch_kind: Scratch) -> None:
    for model in (Assignment, ExamItem, ControlItem):
        assert model(answer_id=1).task_kind == kinds.POINTWISE
        assert model(answer_id=1, pair_id=7).task_kind == kinds.PAIRWISE
        assert kinds.of(model(answer_id=1, pair_id=7)).item_field == "pair"

    @dataclass
    class Row:
        answer_id: int | None = 1
        pair_id: int | None = None
        scratch_id: int | None = None

    assert kinds.kind_of(Row(scratch_id=3)) == "scratch-test"
    assert kinds.kind_of(Row()) == kinds.POINTWISE


def test_a_kind_is_registered_once() -> None:
    with pytest.raises(ImproperlyConfigured, match="registered twice"):
        kinds.register(kinds.TaskKind(kinds.MARKUP, "another markup"))
    with pytest.raises(ImproperlyConfigured, match="nothing is registered"):
        kinds.get("never-registered")


# Which modules are the side-by-side kind's own: the only places that may test whether an item
# is a pair (everything else asks the item's kind).
PAIRWISE_MODULES = {
    "work/kinds/pairwise.py",
    "work/comparisons.py",
    "work/views_compare.py",
    "quality/kind_pairwise.py",
    "quality/pairwise.py",
    "dataset/pairwise.py",
    "judging/run_pairwise.py",
    "judging/pairwise.py",
    "judging/pairwise_report.py",
}
APPS = [
    "work", "quality", "dataset", "judging", "console", "markup", "authoring", "leaderboards",
    "submissions", "generation", "material", "panels", "jobs", "participants", "guidelines",
]  # fmt: skip


def _pair_branches(path: Path) -> list[int]:
    """Lines that compare a `pair_id` with None or read an `is_pair`/`is_pairwise` flag."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Attribute)
            and node.left.attr == "pair_id"
            and any(isinstance(c, ast.Constant) and c.value is None for c in node.comparators)
        ):
            lines.append(node.lineno)
        if isinstance(node, ast.Attribute) and node.attr in ("is_pair", "is_pairwise"):
            lines.append(node.lineno)
    return lines


def test_no_module_outside_the_side_by_side_kind_branches_on_a_pair() -> None:
    found = {}
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if "/migrations/" in rel or rel in PAIRWISE_MODULES:
                continue
            if lines := _pair_branches(path):
                found[rel] = lines
    assert found == {}


def test_the_kind_of_an_item_is_chosen_by_its_kind_value() -> None:
    rubric, pair = Assignment(pk=1), Assignment(pk=2, pair_id=7)
    assert (rubric.task_kind, pair.task_kind) == (kinds.POINTWISE, kinds.PAIRWISE)
    assert kinds.of(rubric).in_entry and not kinds.of(pair).in_entry
    assert kinds.of(rubric).flag_refusal() == "" and kinds.of(pair).flag_refusal()
    assert kinds.of(rubric).rubric_refusal(1) == "" and "2" in kinds.of(pair).rubric_refusal(2)
    assert set(pages.pages.keys()) == {kinds.POINTWISE, kinds.PAIRWISE}
    for item in (ExamItem(answer_id=3), ControlItem(pair_id=4)):
        assert gold_kinds.of(item).key == item.task_kind
