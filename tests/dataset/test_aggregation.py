"""Aggregation by the POLLUX protocol: every rule on hand-made cases with exact numbers."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dataset.aggregation import (
    EXCLUDED_CRITICAL,
    EXCLUDED_FEW,
    EXCLUDED_NO_SCORE,
    AggregationSettings,
    aggregate_estimates,
    aggregation_run,
)
from dataset.agreement import (
    agreement_report,
    krippendorff_ordinal,
    random_confidence_baseline,
    result_tables,
    value_count_matrix,
)
from dataset.models import TripleAggregate
from material.models import Answer
from panels.models import Expert
from taxonomy.models import Criterion
from tests.conftest import Personas, make_expert
from work.models import Assignment, Estimate, EstimateStatus, Triple

GOOD = "Ответ полностью соответствует критерию"
NA = None


def frame(rows: Sequence[tuple[int, int, str, int | None, bool]], top: int = 2) -> pd.DataFrame:
    """(triple, answer, group, score or NA, rationale ok) -> an estimates frame."""
    return pd.DataFrame(
        {
            "estimate_id": np.arange(1, len(rows) + 1),
            "triple_id": [r[0] for r in rows],
            "answer_id": [r[1] for r in rows],
            "group": [r[2] for r in rows],
            "score": [np.nan if r[3] is None else float(r[3]) for r in rows],
            "is_na": [r[3] is None for r in rows],
            "rationale_ok": [r[4] for r in rows],
            "top_score": [1 if r[2] == "critical" else top for r in rows],
        }
    )


def by_triple(result: Any) -> dict[int, dict[str, Any]]:
    return {int(r["triple_id"]): r for r in result.triples.to_dict(orient="records")}


CASES = frame(
    [
        # triple 1: [0, 1, 2, 2, 2]
        *[(1, 10, "general", s, True) for s in (0, 1, 2, 2, 2)],
        # triple 2: [0, 0, 2, 2] -> tied, no mode
        *[(2, 10, "general", s, True) for s in (0, 0, 2, 2)],
        # triple 3: all NA
        (3, 10, "domain", NA, True),
        (3, 10, "domain", NA, True),
        # triple 4: [NA, 2, 2]
        (4, 10, "task", NA, True),
        (4, 10, "task", 2, True),
        (4, 10, "task", 2, True),
        # triple 5: a single estimate
        (5, 10, "task", 1, True),
        # triple 6: one valid, one with a bad rationale
        (6, 10, "task", 1, True),
        (6, 10, "task", 2, False),
    ]
)


def test_it_computes_mean_mode_and_confidence_per_triple() -> None:
    rows = by_triple(aggregate_estimates(CASES))
    assert rows[1]["mean"] == pytest.approx(1.4)
    assert rows[1]["mode"] == 2
    assert rows[1]["confidence"] == pytest.approx(0.6)
    assert rows[1]["n_estimates"] == 5
    assert rows[1]["excluded_reason"] == ""


def test_it_reports_no_mode_when_the_top_scores_tie() -> None:
    rows = by_triple(aggregate_estimates(CASES))
    assert math.isnan(rows[2]["mode"])
    assert rows[2]["confidence"] == pytest.approx(0.5)
    assert rows[2]["mean"] == pytest.approx(1.0)


def test_it_excludes_na_from_the_mean_and_marks_all_na_triples() -> None:
    rows = by_triple(aggregate_estimates(CASES))
    assert rows[3]["all_na"] is True or rows[3]["all_na"] == np.True_
    assert math.isnan(rows[3]["mean"]) and math.isnan(rows[3]["mode"])
    assert math.isnan(rows[3]["confidence"])
    # All NA: no numeric score, out of the dataset with its own reason (issue #11, item 14; the
    # old code kept it with an empty criteria_score).
    assert rows[3]["n_estimates"] == 2 and rows[3]["excluded_reason"] == EXCLUDED_NO_SCORE
    assert rows[4]["mean"] == pytest.approx(2.0)
    assert rows[4]["confidence"] == pytest.approx(1.0)
    assert rows[4]["n_estimates"] == 3 and rows[4]["n_scores"] == 2


def test_it_drops_triples_with_fewer_than_two_estimates() -> None:
    result = aggregate_estimates(CASES)
    rows = by_triple(result)
    assert rows[5]["excluded_reason"] == EXCLUDED_FEW
    # Triple 6 keeps one estimate once the bad rationale is out: too few as well.
    assert rows[6]["excluded_reason"] == EXCLUDED_FEW
    assert result.report["triples_dropped_few_estimates"] == 2
    assert result.report["triples_dropped_no_score"] == 1
    assert result.report["triples_in_dataset"] == 3


def test_it_drops_estimates_with_a_bad_rationale_and_counts_them() -> None:
    result = aggregate_estimates(CASES)
    assert result.report["estimates_invalid_rationale"] == 1
    assert result.report["estimates_dropped_rationale"] == 1
    assert 17 not in result.kept_estimate_ids  # the bad one (row 17)
    # 5 + 4 + 3 estimates of the three triples in the dataset
    assert len(result.kept_estimate_ids) == 12


def test_it_keeps_bad_rationales_when_the_rule_is_off() -> None:
    result = aggregate_estimates(CASES, AggregationSettings(drop_invalid_rationale=False))
    rows = by_triple(result)
    assert rows[6]["excluded_reason"] == ""
    assert rows[6]["mean"] == pytest.approx(1.5)
    assert math.isnan(rows[6]["mode"])


def test_it_honours_the_minimum_estimates_setting() -> None:
    rows = by_triple(aggregate_estimates(CASES, AggregationSettings(min_estimates=4)))
    assert rows[1]["excluded_reason"] == "" and rows[2]["excluded_reason"] == ""
    assert rows[4]["excluded_reason"] == EXCLUDED_FEW


CRITICAL = frame(
    [
        # answer 20: the critical triple gets one violation vote out of three
        (21, 20, "critical", 1, True),
        (21, 20, "critical", 0, True),
        (21, 20, "critical", 0, True),
        (22, 20, "general", 2, True),
        (22, 20, "general", 2, True),
        # answer 30: a violation vote with a bad rationale does not count
        (31, 30, "critical", 0, True),
        (31, 30, "critical", 1, False),
        (31, 30, "critical", 0, True),
        (32, 30, "task", 1, True),
        (32, 30, "task", 1, True),
        # answer 40: NA on a critical criterion is not a violation
        (41, 40, "critical", None, True),
        (41, 40, "critical", 0, True),
        (42, 40, "general", 0, True),
        (42, 40, "general", 1, True),
    ]
)


def test_a_critical_violation_vote_drops_the_answers_other_triples() -> None:
    result = aggregate_estimates(CRITICAL)
    rows = by_triple(result)
    assert rows[22]["excluded_reason"] == EXCLUDED_CRITICAL
    # The critical triple itself stays, with its own aggregate.
    assert rows[21]["excluded_reason"] == ""
    assert rows[21]["mean"] == pytest.approx(1 / 3)
    assert rows[21]["mode"] == 0
    assert rows[21]["confidence"] == pytest.approx(2 / 3)
    assert rows[32]["excluded_reason"] == ""
    assert rows[42]["excluded_reason"] == ""
    assert result.report["answers_with_critical_violation"] == 1
    assert result.report["triples_dropped_critical"] == 1


def test_critical_drops_can_be_switched_off() -> None:
    rows = by_triple(aggregate_estimates(CRITICAL, AggregationSettings(drop_after_critical=False)))
    assert rows[22]["excluded_reason"] == ""


def test_the_random_baseline_is_17_27_for_three_raters_and_three_values() -> None:
    confidence, mode_share = random_confidence_baseline(3, 3)
    assert confidence == pytest.approx(17 / 27)
    assert mode_share == pytest.approx(21 / 27)


@pytest.mark.parametrize(("raters", "values"), [(3, 3), (2, 2), (5, 2), (3, 5)])
def test_the_random_baseline_matches_a_simulation(raters: int, values: int) -> None:
    rng = np.random.default_rng(7)
    draws = rng.integers(0, values, size=(200_000, raters))
    counts = np.stack([(draws == v).sum(axis=1) for v in range(values)], axis=1)
    best = counts.max(axis=1)
    simulated_conf = (best / raters).mean()
    simulated_mode = ((counts == best[:, None]).sum(axis=1) == 1).mean()
    confidence, mode_share = random_confidence_baseline(raters, values)
    assert confidence == pytest.approx(simulated_conf, abs=0.004)
    assert mode_share == pytest.approx(simulated_mode, abs=0.004)


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4 observers x 12 units
# example with missing values; the paper gives alpha = 0.743 (nominal), 0.815 (ordinal),
# 0.849 (interval).
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def test_ordinal_alpha_matches_krippendorffs_published_example() -> None:
    rows = [
        (unit + 1, 0, "general", value, True)
        for coder in KRIPPENDORFF_2011
        for unit, value in enumerate(coder)
        if value is not None
    ]
    estimates = frame(rows)
    units = np.arange(1, 13)
    matrix, domain = value_count_matrix(estimates, units)
    assert domain == [1, 2, 3, 4, 5]
    assert krippendorff_ordinal(matrix, domain) == pytest.approx(0.815, abs=0.0005)


@pytest.mark.parametrize("units", [3, 12, 1000, 9000])
@pytest.mark.parametrize("width", [2, 5])
def test_ordinal_alpha_by_blocks_is_the_librarys_alpha_bit_for_bit(
    units: int, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import krippendorff

    import dataset.agreement as agreement

    rng = np.random.default_rng(units * 10 + width)
    counts = rng.integers(0, 4, size=(units, width)).astype(np.float64)
    counts = counts[counts.sum(axis=1) >= 2]
    domain = list(range(1, width + 1))
    library = float(
        krippendorff.alpha(value_counts=counts, value_domain=domain, level_of_measurement="ordinal")
    )
    # Blocks of 7 units (uneven, several of them) and the real block size: the same float.
    for block in (7, agreement.ALPHA_BLOCK_UNITS):
        monkeypatch.setattr(agreement, "ALPHA_BLOCK_UNITS", block)
        assert agreement._alpha_ordinal_blocked(counts, domain) == library
    monkeypatch.setattr(agreement, "ALPHA_BLOCK_UNITS", 7)
    assert krippendorff_ordinal(counts, domain) == library


def test_the_agreement_report_gives_confidence_mode_share_alpha_and_baseline() -> None:
    result = aggregate_estimates(CASES)
    triples = result.included.copy()
    # Triples 1, 2 and 4 (triple 3, all NA, left the dataset).
    triples["criterion"] = ["a", "a", "b"]
    triples["scale_size"] = 3
    kept = CASES[CASES["estimate_id"].isin(result.kept_estimate_ids)]
    report = agreement_report(triples, kept, dimensions=("criterion",))
    a = report[(report["dimension"] == "criterion") & (report["key"] == "a")].iloc[0]
    assert a["triples"] == 2 and a["estimates"] == 9
    assert a["mean_confidence"] == pytest.approx((0.6 + 0.5) / 2)
    assert a["mode_share"] == pytest.approx(0.5)
    # Random labelling on the same design: 5 raters and 4 raters over 3 values.
    expected = (random_confidence_baseline(5, 3)[0] + random_confidence_baseline(4, 3)[0]) / 2
    assert a["baseline_confidence"] == pytest.approx(expected)
    assert a["alpha_ordinal"] is not None and -1 <= a["alpha_ordinal"] <= 1
    b = report[(report["dimension"] == "criterion") & (report["key"] == "b")].iloc[0]
    # Triple 4 has two equal scores (and an NA).
    assert b["mean_confidence"] == pytest.approx(1.0)
    assert report.iloc[0]["dimension"] == "all"


def test_result_tables_average_triple_means_per_model() -> None:
    triples = pd.DataFrame(
        {
            "model": ["m1", "m1", "m2", "m2"],
            "criterion": ["c1", "c1", "c1", "c2"],
            "task": ["t", "t", "t", "t"],
            "mean": [1.0, 2.0, 0.5, 1.0],
            "all_na": [False, False, False, False],
        }
    )
    tables = result_tables(triples)
    mc = tables["model_criterion"].set_index("model")
    assert mc.loc["m1", "c1"] == pytest.approx(1.5)
    assert mc.loc["m2", "c2"] == pytest.approx(1.0)
    assert math.isnan(mc.loc["m1", "c2"])
    assert tables["model_task"].set_index("model").loc["m2", "t"] == pytest.approx(0.75)


# The vectorised rule is checked against rationale_errors on the shared tricky texts
# (tests/data/rationale_cases.json) in tests/protocol/test_rationale_rule.py.


# ---------------------------------------------------------------------------------------------
# The service on the database.
# ---------------------------------------------------------------------------------------------


def score_triples(
    answer: Answer,
    experts: list[Expert],
    scores: dict[str, list[tuple[int | None, str]]],
    *,
    status: str = EstimateStatus.SUBMITTED,
) -> dict[str, Triple]:
    """Triples of `answer` for the given criterion keys, with estimates (score or NA, text)."""
    triples: dict[str, Triple] = {}
    panel = experts[0].panels.first()
    assert panel is not None
    for position, (key, votes) in enumerate(scores.items()):
        criterion = Criterion.objects.get(key=key)
        assert criterion.rubric is not None
        triple = Triple.objects.create(
            answer=answer,
            criterion=criterion,
            rubric=criterion.rubric,
            group=criterion.group,
            panel=panel,
            required_overlap=3,
            position=position,
        )
        triples[key] = triple
        for slot, (expert, (score, text)) in enumerate(zip(experts, votes, strict=False), 1):
            assignment, _ = Assignment.objects.get_or_create(
                expert=expert, answer=answer, panel=panel
            )
            Estimate.objects.create(
                triple=triple,
                assignment=assignment,
                expert=expert,
                slot=slot,
                status=status,
                score=score,
                is_na=score is None,
                rationale=text,
                rubric=criterion.rubric,
            )
    return triples


@pytest.fixture
def scored(personas: Personas, make_answer: Callable[..., Answer]) -> dict[str, Any]:
    experts = [personas.expert_a] + [make_expert(f"ex{i}", personas.panel_a) for i in range(4)]
    clean = make_answer()
    violating = make_answer(model="YandexGPT")
    ok = GOOD
    t1 = score_triples(
        clean,
        experts,
        {
            "censor": [(0, ok), (0, ok), (0, ok)],
            "repeats": [(0, ok), (1, ok), (2, ok), (2, ok), (2, ok)],
            "grammar": [(2, ok), (2, "bad"), (1, ok)],  # one rationale breaks the rules
        },
    )
    t2 = score_triples(
        violating,
        experts,
        {
            "censor": [(1, ok), (0, ok), (0, ok)],
            "repeats": [(2, ok), (2, ok), (2, ok)],
        },
    )
    return {"clean": t1, "violating": t2}


def test_the_service_writes_one_aggregate_per_triple(scored: dict[str, Any]) -> None:
    report = aggregation_run()
    aggs = {a.triple_id: a for a in TripleAggregate.objects.all()}
    repeats = aggs[scored["clean"]["repeats"].pk]
    assert repeats.n_estimates == 5 and repeats.mode == 2
    assert repeats.mean == pytest.approx(1.4) and repeats.confidence == pytest.approx(0.6)
    grammar = aggs[scored["clean"]["grammar"].pk]
    assert grammar.n_estimates == 2 and grammar.mean == pytest.approx(1.5) and grammar.mode is None
    assert aggs[scored["violating"]["repeats"].pk].excluded_reason == EXCLUDED_CRITICAL
    assert aggs[scored["violating"]["censor"].pk].excluded_reason == ""
    assert report["estimates_invalid_rationale"] == 1
    assert report["triples_in_dataset"] == 4
    assert {row["dimension"] for row in report["agreement"]} >= {"all", "criterion", "model"}


def test_the_service_ignores_skipped_and_draft_estimates(
    scored: dict[str, Any], make_answer: Callable[..., Answer], personas: Personas
) -> None:
    experts = [personas.expert_a, make_expert("ex9", personas.panel_a)]
    other = make_answer()
    score_triples(other, experts, {"repeats": [(2, GOOD), (2, GOOD)]}, status="skipped")
    aggregation_run()
    assert not TripleAggregate.objects.filter(triple__answer=other).exists()


def test_rerunning_the_service_replaces_the_aggregates(scored: dict[str, Any]) -> None:
    aggregation_run()
    first = TripleAggregate.objects.count()
    aggregation_run(rules=AggregationSettings(drop_after_critical=False))
    assert TripleAggregate.objects.count() == first
    repeats = TripleAggregate.objects.get(triple=scored["violating"]["repeats"])
    assert repeats.excluded_reason == ""


def test_agreement_pools_rubric_variants_by_criterion_name_and_tasks_by_task_type(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    """Issue #11, item 15: the paper pools by criterion name (creativity, creativity__2, ... are
    one criterion) and by task type (the top-level task), not by rubric variant or leaf task."""
    from dataset.aggregation import dataset_compute
    from taxonomy.models import Task

    experts = [personas.expert_a] + [make_expert(f"pool{i}", personas.panel_a) for i in range(2)]
    leaves = list(
        Task.objects.filter(
            is_leaf=True, path__startswith="Original Text Generation / Scientific text / "
        ).order_by("path")[:2]
    )
    assert len(leaves) == 2
    first = make_answer(task=leaves[0].path)
    second = make_answer(task=leaves[1].path)
    votes: list[tuple[int | None, str]] = [(2, GOOD), (2, GOOD), (1, GOOD)]
    score_triples(first, experts, {"creativity": votes})
    score_triples(second, experts, {"creativity__2": votes})
    agreement = dataset_compute(AggregationSettings()).agreement
    criteria = agreement[agreement["dimension"] == "criterion"]
    name = Criterion.objects.get(key="creativity").name_en
    assert list(criteria["key"]) == [name]
    assert int(criteria.iloc[0]["triples"]) == 2
    tasks = agreement[agreement["dimension"] == "task"]
    assert list(tasks["key"]) == ["Scientific text"]
    assert int(tasks.iloc[0]["triples"]) == 2
