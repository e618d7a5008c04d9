"""One critical gate, its copies, one list of cases (tests/data/critical_cases.json):
protocol.critical.is_violation is the authority; the numpy mask, the aggregation's rule 2 and
the scoring stop (work.services) follow it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from dataset.aggregation import EXCLUDED_CRITICAL, AggregationSettings, aggregate_estimates
from protocol.critical import is_violation, violation_mask
from tests.protocol.cases import shared_cases

CASES = shared_cases("critical")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["why"])
def test_the_rule_on_the_shared_cases(case: dict[str, Any]) -> None:
    got = is_violation(
        critical=case["critical"], is_na=case["is_na"], score=case["score"], top=case["top"]
    )
    assert got is case["vote"]


def test_the_numpy_mask_agrees_on_the_shared_cases() -> None:
    mask = violation_mask(
        np.array([c["critical"] for c in CASES]),
        np.array([c["is_na"] for c in CASES]),
        np.array([np.nan if c["score"] is None else c["score"] for c in CASES], dtype=float),
        np.array([c["top"] for c in CASES]),
    )
    assert mask.tolist() == [c["vote"] for c in CASES]


def test_the_aggregation_drops_an_answer_exactly_on_a_vote() -> None:
    # Each case is one answer: the case's estimate on its gate (or a general criterion), plus a
    # general triple scored 2; the general triple leaves the dataset exactly when the case votes.
    rows: list[tuple[int, int, str, float, bool, int]] = []
    for answer, case in enumerate(CASES, start=1):
        group = "critical" if case["critical"] else "general"
        score = np.nan if case["score"] is None else float(case["score"])
        rows.append((answer * 10, answer, group, score, case["is_na"], case["top"]))
        rows.append((answer * 10 + 1, answer, "general", 2.0, False, 2))
    frame = pd.DataFrame(
        {
            "estimate_id": np.arange(1, len(rows) + 1),
            "triple_id": [r[0] for r in rows],
            "answer_id": [r[1] for r in rows],
            "group": [r[2] for r in rows],
            "score": [r[3] for r in rows],
            "is_na": [r[4] for r in rows],
            "rationale_ok": True,
            "top_score": [r[5] for r in rows],
        }
    )
    result = aggregate_estimates(frame, AggregationSettings(min_estimates=0))
    reason = dict(
        zip(
            result.triples["triple_id"].astype(int),
            result.triples["excluded_reason"].astype(str),
            strict=True,
        )
    )
    dropped = [reason[answer * 10 + 1] == EXCLUDED_CRITICAL for answer in range(1, len(CASES) + 1)]
    assert dropped == [c["vote"] for c in CASES]
