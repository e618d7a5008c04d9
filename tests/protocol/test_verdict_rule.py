"""One verdict rule (mode and verdict confidence), two copies, one list of panels
(tests/data/verdict_cases.json): protocol.verdict is the authority, the numpy aggregation
(dataset.aggregation, also the judge report's panel numbers) must agree on every case."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dataset.aggregation import AggregationSettings, aggregate_estimates
from judging import metrics
from protocol.verdict import mode, verdict_confidence
from tests.protocol.cases import shared_cases

CASES = shared_cases("verdict")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["why"])
def test_the_reference_on_the_shared_cases(case: dict[str, Any]) -> None:
    assert mode(case["scores"]) == case["mode"]
    if case["confidence"] is None:
        assert verdict_confidence(case["scores"]) is None
    else:
        assert verdict_confidence(case["scores"]) == pytest.approx(case["confidence"])


def test_the_judge_metrics_use_the_protocol_rule() -> None:
    # judging.metrics keeps no copy of its own: the names are the protocol's functions.
    assert metrics.mode is mode
    assert metrics.verdict_confidence is verdict_confidence


def test_the_numpy_aggregation_agrees_on_the_shared_cases() -> None:
    rows: list[dict[str, Any]] = []
    for triple, case in enumerate(CASES, start=1):
        # A panel without scores is an all-NA triple (two NA verdicts).
        values: list[float | None] = list(case["scores"]) or [None, None]
        for value in values:
            rows.append(
                {
                    "estimate_id": len(rows) + 1,
                    "triple_id": triple,
                    "answer_id": triple,
                    "group": "general",
                    "score": np.nan if value is None else float(value),
                    "is_na": value is None,
                    "rationale_ok": True,
                    "top_score": 4,
                }
            )
    result = aggregate_estimates(
        pd.DataFrame(rows),
        AggregationSettings(drop_after_critical=False, min_estimates=0),
    )
    got = {int(r["triple_id"]): r for r in result.triples.to_dict(orient="records")}
    mismatches = []
    for triple, case in enumerate(CASES, start=1):
        m, c = got[triple]["mode"], got[triple]["confidence"]
        mode_ok = math.isnan(m) if case["mode"] is None else m == case["mode"]
        conf_ok = (
            math.isnan(c) if case["confidence"] is None else math.isclose(c, case["confidence"])
        )
        if not (mode_ok and conf_ok):
            mismatches.append((case["why"], m, c))
    assert mismatches == []
