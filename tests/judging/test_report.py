"""The judge report on the POLLUX dataset (issue #11, items 13 and 15): filtered as the dataset
is, pooled by task type and criterion name, with the paper's breakdowns. Every number is checked
against an independent computation (statistics / numpy / pandas ranks) on a hand-made run."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from judging import services
from judging.models import JudgeConfig
from material.models import Answer
from taxonomy.models import Criterion, Task
from tests.conftest import make_expert
from tests.judging.conftest import Material, ScriptedBackend, result, stored_report
from work.models import Triple

pytestmark = pytest.mark.django_db

BAD = "bad"  # breaks the rationale rule (one word, Latin): dropped from the dataset


def _rho(x: list[float], y: list[float]) -> float:
    """Spearman's rho computed independently: pandas average ranks, numpy Pearson."""
    rx = pd.Series(x).rank(method="average").to_numpy()
    ry = pd.Series(y).rank(method="average").to_numpy()
    return float(np.corrcoef(rx, ry)[0, 1])


def _mode(scores: list[float]) -> float | None:
    modes = statistics.multimode(scores)
    return modes[0] if len(modes) == 1 else None


def _mae_mode(pairs: list[tuple[float, list[float]]]) -> float:
    diffs = [abs(j - m) for j, s in pairs if (m := _mode(s)) is not None]
    return sum(diffs) / len(diffs)


def _mae_mean(pairs: list[tuple[float, list[float]]]) -> float:
    return float(np.mean([abs(j - np.mean(s)) for j, s in pairs]))


@pytest.fixture
def hand_made(
    personas: Any, make_answer: Callable[..., Answer], judge_config: JudgeConfig
) -> dict[str, Any]:
    science = list(
        Task.objects.filter(
            is_leaf=True, path__startswith="Original Text Generation / Scientific text / "
        ).order_by("path")[:2]
    )
    literary = Task.objects.filter(
        is_leaf=True, path__startswith="Original Text Generation / Literary text / "
    ).order_by("path")[0]
    assert len(science) == 2 and science[0].parent_id == science[1].parent_id
    # (leaf task, model) per answer; answer 3 gets a critical-violation vote.
    plan = [(science[0], "GigaChat"), (science[1], "YandexGPT"), (literary, "GigaChat")]
    plan.append((science[0], "YandexGPT"))
    answers = [make_answer(task=t.path, model=m) for t, m in plan]
    panel = personas.panel_a
    keys = ["creativity", "creativity__2", "repeats", "narushenie_formata"]
    criteria = {c.key: c for c in Criterion.objects.filter(key__in=keys)}
    assert criteria["creativity"].name_en == criteria["creativity__2"].name_en
    experts = [make_expert(f"report_expert_{i}", panel) for i in range(3)]
    m = Material(panel, answers, experts)

    def triple(answer: int, key: str) -> Triple:
        c = criteria[key]
        return Triple.objects.create(
            answer=answers[answer],
            criterion=c,
            rubric=c.rubric,
            group=c.group,
            panel=panel,
            required_overlap=3,
            position=keys.index(key),
        )

    # (answer, criterion): (expert scores, rationale or "", judge score)
    design: dict[tuple[int, str], tuple[tuple[int | None, ...], str, int]] = {
        (0, "creativity"): ((2, 2, 1), "", 2),
        (0, "repeats"): ((1, 1, 2), "", 0),
        (1, "creativity__2"): ((0, 1, 1), "", 1),
        (1, "repeats"): ((2, 2, 2), "", 1),
        (2, "creativity"): ((1, 2), "", 2),  # tie: no mode
        (2, "repeats"): ((0, 0, 1), "", 0),
        (2, "narushenie_formata"): ((0, 0, 0), "", 0),
        # Out of the dataset: every rationale invalid, too few estimates, all NA, an answer
        # with a critical-violation vote.
        (1, "creativity"): ((0, 2), BAD, 2),
        (2, "creativity__2"): ((1,), "", 0),
        (0, "creativity__2"): ((None, None), "Критерий к ответу неприменим", 1),
        (3, "creativity"): ((0, 0, 0), "", 2),
        (3, "narushenie_formata"): ((1, 0, 0), "", 0),
    }
    triples = {}
    for (answer, key), (scores, text, _judge) in design.items():
        t = triple(answer, key)
        triples[t.pk] = (answer, key)
        m.score(t, *scores, rationale=text)
    backend = ScriptedBackend(lambda item: result(design[triples[int(item.item_id)]][2]))
    run = services.run_create(config=judge_config, scope={"panel": panel.pk}, enqueue=False)
    run = services.run_execute_inline(run=run, backend_factory=lambda r: backend)
    return {"run": run, "design": design, "plan": plan, "criteria": criteria}


IN_DATASET = [
    (0, "creativity"),
    (0, "repeats"),
    (1, "creativity__2"),
    (1, "repeats"),
    (2, "creativity"),
    (2, "repeats"),
    (2, "narushenie_formata"),
    # The critical gate itself stays: a violation drops the answer's *other* triples.
    (3, "narushenie_formata"),
]


def test_the_report_counts_only_the_dataset_and_labels_the_rest(hand_made: dict[str, Any]) -> None:
    report = stored_report(hand_made["run"])
    design = hand_made["design"]
    pairs = [(float(design[k][2]), [float(s) for s in design[k][0]]) for k in IN_DATASET]
    assert report["n_judged"] == len(design)
    assert report["n_with_experts"] == len(IN_DATASET)
    assert report["mae_mode"][0] == pytest.approx(_mae_mode(pairs))
    assert report["mae_mode"][1] == sum(1 for _j, s in pairs if _mode(s) is not None)
    assert report["mae_mean"] == [pytest.approx(_mae_mean(pairs)), len(pairs)]
    assert report["rho_all"] == pytest.approx(
        _rho([j for j, _s in pairs], [float(np.mean(s)) for _j, s in pairs])
    )
    assert dict(report["excluded"]) == {
        "critical_violation": 1,
        "invalid_rationale": 1,
        "too_few_estimates": 1,
        "no_numeric_score": 1,
    }
    # The labelled unfiltered view sees every submitted non-NA score, the excluded triples too.
    everything = [
        (float(j), [float(s) for s in scores if s is not None])
        for scores, _t, j in design.values()
        if any(s is not None for s in scores)
    ]
    assert len(everything) == 11
    assert report["unfiltered"]["mae_mean"] == [pytest.approx(_mae_mean(everything)), 11]
    assert report["unfiltered"]["mae_mean"][0] != pytest.approx(report["mae_mean"][0])


def test_breakdowns_pool_by_model_task_type_and_criterion_name(hand_made: dict[str, Any]) -> None:
    report = stored_report(hand_made["run"])
    design, plan, criteria = hand_made["design"], hand_made["plan"], hand_made["criteria"]
    by: dict[str, dict[str, list[tuple[float, list[float]]]]] = {
        "model": defaultdict(list),
        "task": defaultdict(list),
        "criterion": defaultdict(list),
    }
    for answer, key in IN_DATASET:
        pair = (float(design[(answer, key)][2]), [float(s) for s in design[(answer, key)][0]])
        task, model = plan[answer]
        by["model"][model].append(pair)
        by["task"][Task.objects.get(pk=task.parent_id).name_en].append(pair)
        by["criterion"][criteria[key].name_en].append(pair)
    # Two leaf tasks of "Scientific text" are one task type; creativity and creativity__2 one
    # criterion.
    assert len(by["task"]) == 2 and len(by["criterion"]) == 3
    for attr, table in (
        ("model", report["by_model"]),
        ("task", report["by_task"]),
        ("criterion", report["by_criterion"]),
    ):
        assert [row["key"] for row in table] == sorted(by[attr]), attr
        for row in table:
            pairs = by[attr][row["key"]]
            assert row["n"] == len(pairs)
            assert row["mae_mean"][0] == pytest.approx(_mae_mean(pairs))
            with_mode = [p for p in pairs if _mode(p[1]) is not None]
            if with_mode:
                assert row["mae_mode"][0] == pytest.approx(_mae_mode(pairs))
            else:
                assert row["mae_mode"] == [None, 0]
            # Verdict confidence of the experts: share of the modal score, averaged.
            own = [max(s.count(v) for v in s) / len(s) for _j, s in pairs]
            assert row["confidence"]["experts"] == pytest.approx(float(np.mean(own)))


def test_verdict_confidence_with_the_judge_substituted_on_draw_free_panels(
    personas: Any, make_answer: Callable[..., Answer], judge_config: JudgeConfig
) -> None:
    """Panels where every draw gives the same number, so the paper's procedure (replace one
    random expert by the judge, 100 draws, average) has an exact expected value."""
    panel = personas.panel_a
    answer = make_answer()
    experts = [make_expert(f"vc_expert_{i}", panel) for i in range(3)]
    m = Material(panel, [answer], experts)
    design = {"repeats": ((2, 2, 2), 0), "grammar": ((1, 1, 1), 1), "censor": ((0, 0), 1)}
    ids = {}
    for pos, (key, (scores, _j)) in enumerate(design.items()):
        c = Criterion.objects.get(key=key)
        t = Triple.objects.create(
            answer=answer,
            criterion=c,
            rubric=c.rubric,
            group=c.group,
            panel=panel,
            required_overlap=3,
            position=pos,
        )
        ids[t.pk] = key
        m.score(t, *scores)
    backend = ScriptedBackend(lambda item: result(design[ids[int(item.item_id)]][1]))
    run = services.run_create(config=judge_config, scope={"panel": panel.pk}, enqueue=False)
    run = services.run_execute_inline(run=run, backend_factory=lambda r: backend)
    confidence = stored_report(run)["confidence"]
    # [2,2,2] with a 0 in: 2/3; [1,1,1] with a 1 in: 1; [0,0] with a 1 in: 1/2.
    assert confidence["with_judge"] == pytest.approx((2 / 3 + 1 + 1 / 2) / 3)
    assert confidence["experts"] == pytest.approx(1.0)
