"""Ordering, chunking and orchestration (no model)."""

from __future__ import annotations

from collections.abc import Sequence

from judge_worker.engine import chunk_items, judge_batch, order_items
from judge_worker.parsing import parse_judge_output
from judge_worker.types import JudgeItem, JudgeOutput


def item(item_id: str, key: str, text: str) -> JudgeItem:
    return JudgeItem(
        item_id=item_id,
        prefix_key=key,
        messages=[{"role": "user", "content": text}],
        allowed_scores=(0.0, 1.0, 2.0),
    )


ITEMS = [
    item("a1", "A", "x" * 50),
    item("b1", "B", "y" * 10),
    item("a2", "A", "x" * 40),
    item("c1", "C", "z" * 30),
    item("b2", "B", "y" * 12),
]


def test_order_keeps_groups_adjacent_and_sorts_by_length() -> None:
    ids = [it.item_id for it in order_items(ITEMS)]
    assert ids == ["b1", "b2", "c1", "a2", "a1"]


def test_chunks_do_not_split_groups_that_fit() -> None:
    chunks = chunk_items(order_items(ITEMS), 3)
    assert [[it.item_id for it in c] for c in chunks] == [["b1", "b2", "c1"], ["a2", "a1"]]
    # A group larger than the chunk size is split.
    big = [item(f"g{i}", "G", "q") for i in range(5)]
    assert [len(c) for c in chunk_items(big, 2)] == [2, 2, 1]


class EchoBackend:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def judge(self, items: Sequence[JudgeItem]) -> list[JudgeOutput]:
        self.calls.append([it.item_id for it in items])
        out = []
        for it in items:
            text = f"[FEEDBACK] {it.item_id} [RESULT] 1 [END]"
            out.append(
                JudgeOutput(
                    it.item_id, text, parse_judge_output(text, it.allowed_scores), 3, 4, 0.1
                )
            )
        return out


def test_judge_batch_returns_outputs_in_input_order() -> None:
    backend = EchoBackend()
    outs = judge_batch(backend, ITEMS, max_items=2)
    assert [o.item_id for o in outs] == [it.item_id for it in ITEMS]
    assert all(o.parse.ok and o.parse.score == 1.0 for o in outs)
    assert backend.calls == [["b1", "b2"], ["c1"], ["a2", "a1"]]
