"""Judge run kinds are plug-ins (judging.kinds): each RunKind value has its module, chosen by
the run's `kind`; run_create asks the kind for its options."""

from __future__ import annotations

from typing import Any

import pytest

from judging import kinds, services
from judging.models import JudgeEstimate, JudgeRun, PairwiseJudgeEstimate, RunKind


def test_every_run_kind_has_its_plug_in() -> None:
    assert sorted(kinds.kinds.keys()) == sorted(RunKind.values)
    assert kinds.kinds[RunKind.POINTWISE].estimate_model is JudgeEstimate
    assert kinds.kinds[RunKind.PAIRWISE].estimate_model is PairwiseJudgeEstimate


def test_a_run_counts_in_its_kinds_units() -> None:
    pointwise = JudgeRun(kind=RunKind.POINTWISE)
    pairwise = JudgeRun(kind=RunKind.PAIRWISE, templates=["repa_1", "repa_2"])
    assert kinds.of(pointwise).total(pointwise, 5) == 5
    assert kinds.of(pairwise).total(pairwise, 5) == 10


@pytest.mark.django_db
def test_an_unknown_kind_or_a_pointwise_twin_is_refused_by_name(judge_config: Any) -> None:
    with pytest.raises(services.JudgingError, match="unknown run kind 'ranking'"):
        services.run_create(config=judge_config, scope={"all": True}, kind="ranking")
    run = services.run_create(config=judge_config, scope={"all": True}, enqueue=False)
    with pytest.raises(services.JudgingError, match="only a side-by-side run"):
        services.run_create(config=judge_config, scope={"all": True}, swap_of=run)
