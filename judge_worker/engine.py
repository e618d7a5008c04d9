"""Orchestration: order and chunk items, then hand batches to a backend.

Pure functions over plain data; the Django side calls :func:`judge_batch` per batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from judge_worker.types import JudgeBackend, JudgeItem, JudgeOutput


def order_items(
    items: Sequence[JudgeItem], length: Callable[[JudgeItem], int] | None = None
) -> list[JudgeItem]:
    """Sort by prompt length of the answer group, then prefix_key, then item length.

    Items of one (instruction, answer) stay adjacent, so a chunk holds whole prefix groups and
    the backend can share their prefix; groups of similar length land in one chunk, which keeps
    padding low.
    """
    size = length or (lambda it: len(it.prompt))
    group_len: dict[str, int] = {}
    for it in items:
        group_len[it.prefix_key] = max(group_len.get(it.prefix_key, 0), size(it))
    return sorted(items, key=lambda it: (group_len[it.prefix_key], it.prefix_key, size(it)))


def chunk_items(items: Sequence[JudgeItem], max_items: int) -> list[list[JudgeItem]]:
    """Split ordered items into chunks of at most ``max_items``, avoiding splitting a prefix group.

    A group larger than ``max_items`` is split (it has to be); otherwise a chunk is closed
    before a group that would not fit.
    """
    if max_items < 1:
        raise ValueError("max_items must be >= 1")
    chunks: list[list[JudgeItem]] = []
    current: list[JudgeItem] = []
    groups: list[list[JudgeItem]] = []
    for it in items:
        if groups and groups[-1][0].prefix_key == it.prefix_key:
            groups[-1].append(it)
        else:
            groups.append([it])
    for group in groups:
        if current and len(current) + len(group) > max_items:
            chunks.append(current)
            current = []
        for it in group:
            if len(current) == max_items:
                chunks.append(current)
                current = []
            current.append(it)
    if current:
        chunks.append(current)
    return chunks


def judge_batch(
    backend: JudgeBackend, items: Sequence[JudgeItem], *, max_items: int = 256
) -> list[JudgeOutput]:
    """Judge ``items`` through ``backend``; outputs come back in the order of ``items``."""
    by_id: dict[str, JudgeOutput] = {}
    for chunk in chunk_items(order_items(items), max_items):
        for out in backend.judge(chunk):
            by_id[out.item_id] = out
    missing = [it.item_id for it in items if it.item_id not in by_id]
    if missing:
        raise RuntimeError(f"backend returned no output for {len(missing)} items: {missing[:5]}")
    return [by_id[it.item_id] for it in items]
