"""The stored judge report (issue #12, item 5): computed with numpy when a run finishes or on
demand, stored with its inputs' fingerprint, read by the run page; recomputed when stale.

The reference is the previous per-request computation, kept here (and only here, as the test's
oracle: the pages read the stored report) in plain Python, judging.metrics over `comparison_rows`
below: the stored report must give the same numbers."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import numpy as np
import pytest
from django.db import connection
from django.db.models.functions import Length
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dataset.aggregation import (
    AggregationSettings,
    aggregate_estimates,
    read_estimate_frame,
    snapshot,
)
from jobs.models import Job, JobKind, JobStatus
from judging import metrics, services
from judging.models import JudgeConfig, JudgeEstimate, JudgeReport, JudgeRun
from judging.report import seeded_randbelow
from taxonomy.models import Task
from taxonomy.services import task_tops
from tests.conftest import PASSWORD
from tests.judging.conftest import ScriptedBackend, result
from tests.judging.test_report import hand_made  # noqa: F401 (a fixture)
from work.models import Estimate, EstimateStatus, Triple

pytestmark = pytest.mark.django_db


# --- the previous per-request computation, the reference ---------------------------------------


@dataclass
class ComparisonRow:
    """One judged triple with what the experts said about it.

    `expert_scores` are the triple's scores in the POLLUX dataset (the aggregation's rules:
    estimates with an invalid rationale dropped, and nothing when the triple is excluded, the
    reason then in `excluded`); `all_scores` are every submitted non-NA score, for the
    labelled unfiltered view. `task` is the task type (top-level task), `criterion` the
    criterion's name: the paper's pooling.
    """

    triple_id: int
    judge: float | None
    parse_ok: bool
    expert_scores: list[float] = field(default_factory=list)
    model: str = ""
    task: str = ""
    task_group: str = ""
    criterion: str = ""
    answer_length: int = 0
    all_scores: list[float] = field(default_factory=list)
    excluded: str = ""


# Why a judged triple has no dataset scores although the aggregation gave it no reason: no
# submitted estimate at all, or every one of them dropped for its rationale (rule 1).
NOT_SCORED = "no_expert_scores"
ALL_RATIONALES_INVALID = "invalid_rationale"


def comparison_rows(run: JudgeRun) -> list[ComparisonRow]:
    """Every estimate of the run with its triple's expert scores, filtered as the dataset is.

    A handful of queries whatever the size of the run; long texts are never loaded (length in
    SQL), and the dataset filter reads only the answers the run judged, through the
    aggregation's own reader and rules (dataset.aggregation), so both agree by construction.
    """
    tops = task_tops()
    task_names = dict(Task.objects.filter(level=0).values_list("pk", "name_en"))
    judged = (
        JudgeEstimate.objects.filter(run=run)
        .annotate(answer_length=Length("triple__answer__text"))
        .values_list(
            "triple_id",
            "score",
            "parse_ok",
            "triple__answer__model__name",
            "triple__answer__instruction__task_id",
            "triple__answer__instruction__task__group__name_en",
            "triple__criterion__name_en",
            "answer_length",
        )
        .order_by("triple_id")
    )
    rows = {
        tid: ComparisonRow(
            tid,
            score,
            ok,
            [],
            model,
            task_names.get(tops.get(task_id, task_id), ""),
            group,
            crit,
            length or 0,
        )
        for tid, score, ok, model, task_id, group, crit, length in judged
    }
    expert = Estimate.objects.filter(
        triple__judge_estimates__run=run,
        status=EstimateStatus.SUBMITTED,
        is_na=False,
        score__isnull=False,
    ).values_list("triple_id", "score")
    scores: dict[int, list[float]] = defaultdict(list)
    for tid, score in expert:
        if score is not None:
            scores[tid].append(float(score))
    for tid, values in scores.items():
        if tid in rows:
            rows[tid].all_scores = sorted(values)

    # The dataset's view of the same triples: whole answers (rule 2 needs their critical votes).
    answers_sql = (
        f"SELECT DISTINCT jt.answer_id FROM {JudgeEstimate._meta.db_table} je "  # noqa: S608 (trusted names, an integer)
        f"JOIN {Triple._meta.db_table} jt ON jt.id = je.triple_id WHERE je.run_id = {int(run.pk)}"
    )
    with snapshot():
        frame = read_estimate_frame(answers_sql=answers_sql)
    result = aggregate_estimates(frame, AggregationSettings())
    reasons = dict(
        zip(
            result.triples["triple_id"].astype(int).tolist(),
            result.triples["excluded_reason"].astype(str).tolist(),
            strict=True,
        )
    )
    kept = frame[
        frame["estimate_id"].isin(result.kept_estimate_ids).to_numpy()
        & ~frame["is_na"].to_numpy(dtype=bool)
    ]
    dataset: dict[int, list[float]] = defaultdict(list)
    for tid, score in zip(
        kept["triple_id"].astype(int).tolist(), kept["score"].astype(float).tolist(), strict=True
    ):
        dataset[tid].append(score)
    submitted = set(frame["triple_id"].astype(int).tolist())
    for tid, row in rows.items():
        row.excluded = reasons.get(tid) or (
            "" if tid in reasons else ALL_RATIONALES_INVALID if tid in submitted else NOT_SCORED
        )
        row.expert_scores = sorted(dataset.get(tid, [])) if not row.excluded else []
    return list(rows.values())


def old_report(run: JudgeRun) -> dict[str, Any]:
    rows = comparison_rows(run)
    dataset = [r for r in rows if not r.excluded and r.expert_scores]
    parsed = [r for r in dataset if r.parse_ok and r.judge is not None]
    excluded = Counter(r.excluded for r in rows if r.excluded and r.excluded != NOT_SCORED)
    failures = sum(1 for r in rows if not r.parse_ok)
    return {
        "n_judged": len(rows),
        "n_with_experts": len(dataset),
        "n_failed_with_experts": len(dataset) - len(parsed),
        "parse_failure_rate": failures / len(rows) if rows else None,
        "excluded": sorted(excluded.items()),
        **_summary(parsed, lambda r: r.expert_scores),
        "unfiltered": _summary(
            [r for r in rows if r.all_scores and r.parse_ok and r.judge is not None],
            lambda r: r.all_scores,
        ),
        "by_model": _breakdown(parsed, "model"),
        "by_task": _breakdown(parsed, "task"),
        "by_criterion": _breakdown(parsed, "criterion"),
        "confusions": _confusions(parsed),
        "length": metrics.length_bias([(r.answer_length, _j(r), _m(r)) for r in parsed]),
        "self_preference": (
            metrics.self_preference(
                (metrics.same_family(run.config.model_family, r.model), _j(r), _m(r))
                for r in parsed
            )
            if run.config.model_family
            else None
        ),
        "contradictions": [
            r.triple_id
            for r in rows
            if r.parse_ok
            and len(r.expert_scores) >= 2
            and len(set(r.expert_scores)) == 1
            and r.judge != r.expert_scores[0]
        ],
    }


Scores = Callable[[ComparisonRow], list[float]]


def _summary(rows: list[ComparisonRow], scores: Scores) -> dict[str, Any]:
    return {
        "n": len(rows),
        "mae_mode": list(metrics.mae((_j(r), metrics.mode(scores(r))) for r in rows)),
        "mae_mean": list(metrics.mae((_j(r), metrics.mean(scores(r))) for r in rows)),
        "rho_all": metrics.spearman([_j(r) for r in rows], [_m(r, scores) for r in rows]),
        "confidence": _confidence(rows, scores),
    }


def _breakdown(rows: list[ComparisonRow], attr: str) -> list[dict[str, Any]]:
    groups: dict[str, list[ComparisonRow]] = defaultdict(list)
    for r in rows:
        groups[str(getattr(r, attr))].append(r)
    return [
        {"key": key, **_summary(groups[key], lambda r: r.expert_scores)} for key in sorted(groups)
    ]


def _j(row: ComparisonRow) -> float:
    assert row.judge is not None
    return row.judge


def _m(row: ComparisonRow, scores: Scores = lambda r: r.expert_scores) -> float:
    value = metrics.mean(scores(row))
    assert value is not None
    return value


def _confidence(rows: list[ComparisonRow], scores: Scores) -> dict[str, Any]:
    panels = [r for r in rows if len(scores(r)) >= 2]
    own = [metrics.verdict_confidence(scores(r)) or 0.0 for r in panels]
    substituted = [
        metrics.substituted_confidence(scores(r), _j(r), seed=r.triple_id) or 0.0 for r in panels
    ]
    return {
        "n": len(panels),
        "experts": metrics.mean(own),
        "with_judge": metrics.mean(substituted),
        "draws": metrics.SUBSTITUTION_DRAWS,
    }


def _confusions(rows: list[ComparisonRow]) -> list[dict[str, Any]]:
    pairs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        expert_mode = metrics.mode(r.expert_scores)
        if expert_mode is not None:
            pairs[r.task_group].append((expert_mode, _j(r)))
    out = []
    for group in sorted(pairs):
        conf = metrics.confusion(pairs[group])
        out.append(
            {
                "group": group,
                "labels": conf.labels,
                "matrix": conf.matrix,
                "total": conf.total,
                "agreement": conf.agreement,
            }
        )
    return out


def assert_same(new: Any, old: Any, path: str = "report") -> None:
    """Equal structures, numbers within float tolerance (tuples and lists alike)."""
    if isinstance(old, dict):
        assert isinstance(new, dict) and set(new) == set(old), path
        for key in old:
            assert_same(new[key], old[key], f"{path}.{key}")
    elif isinstance(old, list | tuple):
        assert isinstance(new, list | tuple) and len(new) == len(old), path
        for i, (a, b) in enumerate(zip(new, old, strict=True)):
            assert_same(a, b, f"{path}[{i}]")
    elif isinstance(old, float) and not isinstance(new, str):
        assert new == pytest.approx(old, rel=1e-9, abs=1e-12), path
    else:
        assert new == old, path


# --- fixtures ----------------------------------------------------------------------------------


def login(user: Any) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def mixed_run(material: Any, judge_config: JudgeConfig) -> JudgeRun:
    """Six answers of two models, panels of two and three with ties, NA, an invalid rationale
    and parse failures: every branch of the report."""
    m = material(n_answers=6)
    triples = m.triples()
    rng = random.Random(5)
    for i, t in enumerate(triples):
        if i % 7 == 6:
            continue  # no expert score at all
        size = 2 if i % 3 == 0 else 3
        scores = [rng.choice([0, 1, 2, None] if i % 5 == 0 else [0, 1, 2]) for _ in range(size)]
        m.score(t, *scores, rationale="bad" if i % 11 == 4 else "")
    failing = {t.pk for t in triples[::8]}
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    backend = ScriptedBackend(
        lambda item: (
            "[FEEDBACK] ? [END]" if int(item.item_id) in failing else result(int(item.item_id) % 3)
        )
    )
    return services.run_execute_inline(run=run, backend_factory=lambda r: backend)


# --- the numbers ---------------------------------------------------------------------------------


def test_the_stored_report_equals_the_per_request_computation(
    hand_made: dict[str, Any],  # noqa: F811
) -> None:
    run = hand_made["run"]
    stored = services.report_compute(run_id=run.pk)
    assert stored.computed_at is not None
    assert_same(stored.data, old_report(run))


def test_the_stored_report_equals_it_with_ties_na_and_parse_failures(mixed_run: JudgeRun) -> None:
    data = services.report_compute(run_id=mixed_run.pk).data
    old = old_report(mixed_run)
    assert old["n_failed_with_experts"] > 0 and old["confidence"]["n"] > 0
    assert old["mae_mode"][1] < old["mae_mean"][1]  # some panels have no mode
    assert_same(data, old)


def test_draws_are_those_of_pythons_random_for_every_seed_and_panel_size() -> None:
    gen = np.random.default_rng(3)
    seeds = np.concatenate([[0, 1, 2**32 - 1], gen.integers(0, 2**32, 500)])
    sizes = gen.integers(1, 11, len(seeds))
    got = seeded_randbelow(seeds, sizes, 100)
    for seed, size, row in zip(seeds.tolist(), sizes.tolist(), got.tolist(), strict=True):
        rng = random.Random(seed)
        assert row == [rng.randrange(size) for _ in range(100)], (seed, size)


# --- when it is computed, and what the page reads ---------------------------------------------


def test_the_report_is_computed_when_the_run_finishes(
    material: Any, judge_config: JudgeConfig, django_capture_on_commit_callbacks: Any
) -> None:
    m = material(n_answers=1)
    m.score(m.triple(0, "repeats"), 2, 2, 1)
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    backend = ScriptedBackend(lambda item: result(1))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        run = services.run_execute_inline(run=run, backend_factory=lambda r: backend)
    assert run.status == "done" and len(callbacks) == 1  # one computation, at the end
    report = JudgeReport.objects.get(run=run)
    assert report.data is not None and report.job is not None
    assert report.job.status == JobStatus.DONE
    assert report.data["n_judged"] == 3 and report.data["mae_mean"][1] == 1


def test_one_computation_at_a_time_per_run(judge_config: JudgeConfig, material: Any) -> None:
    m = material(n_answers=1)
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    assert services.report_request(run.pk) is True
    assert services.report_request(run.pk) is False  # active: recorded, not queued twice
    report = JudgeReport.objects.get(run=run)
    assert report.job is not None and report.job.status == JobStatus.QUEUED
    assert Job.objects.filter(kind=JobKind.JUDGE_REPORT).count() == 1
    assert report.requested_at is not None and report.requested_at >= report.job.created_at


def _estimate_queries(queries: list[dict[str, str]]) -> list[str]:
    tables = (Estimate._meta.db_table, "judging_judgeestimate")
    return [q["sql"] for q in queries if any(f'"{t}"' in q["sql"] for t in tables)]


def test_the_page_reads_a_fresh_report_and_reads_no_estimate(
    personas: Any, mixed_run: JudgeRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    services.report_compute(run_id=mixed_run.pk)
    client = login(personas.admin)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a fresh report is not computed again")

    monkeypatch.setattr(services, "report_compute", refuse)
    monkeypatch.setattr(services, "report_request", refuse)
    with CaptureQueriesContext(connection) as ctx:
        page = client.get(reverse("judging_run", args=[mixed_run.pk]), HTTP_ACCEPT_LANGUAGE="en")
    assert page.status_code == HTTPStatus.OK
    assert '<td class="mae-mode">' in page.content.decode()
    # Only the fingerprint touches the estimates: one aggregate (a row count and the latest
    # change), never a row of scores.
    (fingerprint,) = _estimate_queries(ctx.captured_queries)
    assert fingerprint.startswith("SELECT COUNT(") and "MAX(" in fingerprint
    assert len(ctx.captured_queries) <= 12
    # The progress poll reads the run row only.
    with CaptureQueriesContext(connection) as ctx:
        client.get(reverse("judging_run", args=[mixed_run.pk]), HTTP_HX_REQUEST="true")
    assert _estimate_queries(ctx.captured_queries) == []


def test_a_stale_report_is_shown_and_recomputed(
    personas: Any, material: Any, judge_config: JudgeConfig, django_capture_on_commit_callbacks: Any
) -> None:
    m = material(n_answers=1)
    t = m.triple(0, "repeats")
    m.score(t, 2, 2)
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    backend = ScriptedBackend(lambda item: result(1))
    with django_capture_on_commit_callbacks(execute=True):  # the finish's report job runs
        run = services.run_execute_inline(run=run, backend_factory=lambda r: backend)
    first = JudgeReport.objects.get(run=run)
    assert first.data is not None and first.data["mae_mean"] == [1.0, 1]
    # A third expert scores after the report was computed: the dataset changed.
    Estimate.objects.filter(triple=t).delete()
    m.score(t, 1, 1, 1)
    client = login(personas.supervisor_a)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        page = client.get(reverse("judging_run", args=[run.pk]), HTTP_ACCEPT_LANGUAGE="en")
    html = page.content.decode()
    # What is stored is shown, labelled as being recomputed; one computation is queued.
    assert '<td class="mae-mean">1.000</td>' in html and 'class="report-computing"' in html
    assert len(callbacks) == 1
    callbacks[0]()
    report = JudgeReport.objects.get(run=run)
    assert report.data is not None and report.data["mae_mean"] == [0.0, 1]
    assert report.job is not None and report.job.status == JobStatus.DONE
    page = client.get(reverse("judging_run", args=[run.pk]), HTTP_ACCEPT_LANGUAGE="en")
    assert 'class="report-computing"' not in page.content.decode()


def test_the_recompute_button_is_for_those_who_see_the_run(
    personas: Any, mixed_run: JudgeRun, django_capture_on_commit_callbacks: Any
) -> None:
    url = reverse("judging_report_recompute", args=[mixed_run.pk])
    JudgeReport.objects.filter(run=mixed_run).delete()  # none yet (the finish's task never ran)
    assert login(personas.supervisor_b).post(url).status_code == HTTPStatus.NOT_FOUND
    assert login(personas.expert_a.user).post(url).status_code == HTTPStatus.NOT_FOUND
    assert login(personas.supervisor_a).get(url).status_code == HTTPStatus.METHOD_NOT_ALLOWED
    assert not JudgeReport.objects.filter(run=mixed_run).exists()
    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(personas.supervisor_a)
    assert csrf.post(url).status_code == HTTPStatus.FORBIDDEN  # no CSRF token
    with django_capture_on_commit_callbacks(execute=True):
        response = login(personas.supervisor_a).post(url)
    assert response.status_code == HTTPStatus.FOUND
    assert JudgeReport.objects.get(run=mixed_run).data is not None


def test_a_run_that_judged_nothing_has_an_empty_report(
    personas: Any, judge_config: JudgeConfig, django_capture_on_commit_callbacks: Any
) -> None:
    run = services.run_create(
        config=judge_config, scope={"panel": personas.panel_b.pk}, enqueue=False
    )
    assert run.total == 0 and run.status == "done"
    with django_capture_on_commit_callbacks(execute=True):
        page = login(personas.admin).get(reverse("judging_run", args=[run.pk]))
    assert page.status_code == HTTPStatus.OK
    data = JudgeReport.objects.get(run=run).data
    assert data is not None
    assert (data["n_judged"], data["mae_mean"], data["by_model"]) == (0, [None, 0], [])
    assert data["parse_failure_rate"] is None and data["confusions"] == []
