"""The side-by-side (REPA) judge: prompts, runs through the real OpenAI-compatible HTTP backend
(a local stub server that answers by the prompt's content), template majority, the stored
report (Macro-F1 on unanimous items, position, length and self-preference bias, the win-rate
ranking) and the page. Expected numbers are computed by hand in the comments."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from judge_worker import PairwiseExample, build_pairwise_prompt, pairwise_prefix
from judging import metrics, pairwise, services
from judging.backends import build_backend
from judging.models import JudgeRun, PairwiseJudgeEstimate, RunKind, RunStatus
from judging.selectors import pairwise_judge_labels
from material.models import Answer, AnswerPair, Instruction, LanguageModel
from taxonomy.models import ComparisonCriterion, Task
from taxonomy.services import comparison_criteria
from tests.conftest import Personas, make_expert
from tests.judging.conftest import stored_report
from tests.judging.fake_openai import fake_openai
from work.models import Assignment, AssignmentStatus, Estimate, EstimateStatus, Triple

pytestmark = pytest.mark.django_db

SHORT, LONG = "Коротко.", "Развёрнутый ответ " * 10


# --- the prompt -------------------------------------------------------------------------------


def test_prefix_is_shared_by_all_eleven_criteria_and_the_criterion_comes_last(
    catalogue: None,
) -> None:
    criteria = comparison_criteria()
    assert len(criteria) == 11
    example = PairwiseExample("Запрос {x}", "ответ 1", "ответ 2", "Repetition: repeats", "both_bad")
    for template in ("repa_1", "repa_2", "repa_3"):
        for examples in ((), (example,)):
            prefix = pairwise_prefix(template, "Вопрос {query}", "A-текст", "B-текст", examples)
            prompts = [
                build_pairwise_prompt(
                    template,
                    "Вопрос {query}",
                    "A-текст",
                    "B-текст",
                    pairwise.error_type(c),
                    examples,
                )
                for c in criteria
            ]
            for c, prompt in zip(criteria, prompts, strict=True):
                assert prompt.startswith(prefix)
                # Only the error type follows the shared part; it is nowhere in the prefix.
                assert prompt[len(prefix) :] == f"{c.name_en}: {c.judge_en}"
                assert c.judge_en not in prefix
            assert len(set(prompts)) == 11
            # Braces in the texts are kept as they are, never treated as slots.
            assert "Вопрос {query}\n" in prefix
            assert ("Example 1:" in prefix) == bool(examples)
            assert "Label: <label>" in prefix
    with pytest.raises(ValueError, match="unknown pairwise template"):
        pairwise_prefix("repa_9", "q", "a", "b")


# --- the world: pairs with expert labels ------------------------------------------------------


class World:
    """P1 (GigaChat short A vs YandexGPT long B) and P2 (YandexGPT long vs Llama short) on
    factuality and overall, in panel A; P0 (repetition) in panel B: a gold item outside the
    scope, available as an example."""

    def __init__(self, personas: Personas) -> None:
        comparison_criteria()
        self.personas = personas
        self.task = Task.objects.filter(is_leaf=True).first()
        self.models = {
            n: LanguageModel.objects.create(name=n, version="1")
            for n in ("GigaChat-Max", "YandexGPT", "Llama-3")
        }
        self.experts = [
            make_expert(f"pj_expert_{i}", personas.panel_a, personas.panel_b) for i in range(3)
        ]
        self.pairs: dict[str, AnswerPair] = {}
        self.triples: dict[tuple[str, str], Triple] = {}
        self.pair("P1", ("GigaChat-Max", SHORT), ("YandexGPT", LONG))
        self.pair("P2", ("YandexGPT", LONG), ("Llama-3", SHORT))
        self.pair("P0", ("Llama-3", "один"), ("YandexGPT", "два"))
        self.label("P1", "factuality", "a", "a", "a")
        self.label("P1", "overall", "b", "b", "b")
        self.label("P2", "factuality", "both_good", "both_good", "both_good")
        self.label("P2", "overall", "a", "a", "b")  # not unanimous: no gold, majority "a"
        self.label("P0", "repetition", "both_bad", "both_bad", "both_bad", panel=personas.panel_b)

    def pair(self, name: str, a: tuple[str, str], b: tuple[str, str]) -> None:
        assert self.task is not None
        instruction = Instruction.objects.create(
            external_id=f"pj-{name}",
            text=f"Запрос {name}: объясните фотосинтез.",
            task=self.task,
            style=self.task.style,
            complexity="medium",
        )
        answers = [
            Answer.objects.create(
                instruction=instruction,
                model=self.models[model],
                text=text,
                text_hash=f"pj-{name}-{side}",
            )
            for side, (model, text) in (("a", a), ("b", b))
        ]
        self.pairs[name] = AnswerPair.objects.create(
            instruction=instruction, answer_a=answers[0], answer_b=answers[1]
        )

    def label(self, name: str, key: str, *labels: str, panel: Any = None) -> None:
        panel = panel or self.personas.panel_a
        pair = self.pairs[name]
        triple = Triple.objects.create(
            kind="pairwise",
            answer=pair.answer_a,
            pair=pair,
            comparison_criterion=ComparisonCriterion.objects.get(key=key),
            panel=panel,
            required_overlap=3,
        )
        self.triples[(name, key)] = triple
        now = timezone.now()
        for slot, (expert, label) in enumerate(zip(self.experts, labels, strict=True), 1):
            assignment, _ = Assignment.objects.get_or_create(
                expert=expert,
                answer=pair.answer_a,
                pair=pair,
                panel=panel,
                defaults={"status": AssignmentStatus.SUBMITTED, "submitted_at": now},
            )
            Estimate.objects.create(
                triple=triple,
                assignment=assignment,
                expert=expert,
                slot=slot,
                status=EstimateStatus.SUBMITTED,
                label=label,
                submitted_at=now,
            )


@pytest.fixture
def world(personas: Personas) -> World:
    return World(personas)


def judge_reply(prompt: str) -> str:
    """A judge with a position bias: it picks the response shown first, except P2's overall
    (both bad, whatever the placement) and repa_2 on P1's overall (the second). The third
    template writes a label that is not one of the options: a parse failure, never a guess."""
    query = prompt.rsplit("\nQuery: ", 1)[1].split("\n", 1)[0]
    criterion = prompt.rsplit("\nError type: ", 1)[1].split(":", 1)[0]
    openings = {
        "You will receive": "repa_1",
        "You will analyze": "repa_2",
        "You will be provided": "repa_3",
    }
    template = next(name for start, name in openings.items() if prompt.startswith(start))
    if query.startswith("Запрос P2") and criterion == "Overall":
        return "Оба ответа с ошибками.\nLabel: Both are bad"
    if template == "repa_3":
        return "Трудно сказать. Label: A is better or B is better"
    if template == "repa_2" and query.startswith("Запрос P1") and criterion == "Overall":
        return "Второй лучше. **Label:** 'B is better'"
    return "Первый ответ лучше. Label: A is better."


def _run(world: World, server: dict[str, Any], **options: Any) -> JudgeRun:
    config = services.config_save(
        name="remote-sbs",
        backend="openai",
        endpoint=server["url"],
        model_family="giga",
        batch_size=2,
    )
    run = services.run_create(
        config=config, scope={"panel": world.personas.panel_a.pk}, enqueue=False, **options
    )
    return services.run_execute_inline(
        run=run, backend_factory=lambda r: build_backend(r.config, r.backend)
    )


def test_items_of_a_pair_share_their_prefix_and_examples_avoid_the_pair(world: World) -> None:
    config = services.config_save(name="sbs", model_family="giga")
    run = services.run_create(
        config=config, scope={"panel": world.personas.panel_a.pk}, kind="pairwise", enqueue=False
    )
    assert (run.templates, run.shots, run.total) == (["repa_1", "repa_2", "repa_3"], 1, 12)
    p1 = [world.triples[("P1", "factuality")].pk, world.triples[("P1", "overall")].pk]
    items = pairwise.build_items(run, [(t, "repa_2") for t in p1])
    assert len({it.prefix_key for it in items}) == 1
    heads = {it.prompt.rsplit("\n\nError type: ", 1)[0] for it in items}
    assert len(heads) == 1
    head = heads.pop()
    # One gold example, never from P1's own instruction.
    assert head.count("Example 1:") == 1 and "Example 2:" not in head
    assert "Запрос P1" not in head.split("\nQuery: Запрос P1", 1)[0]


def test_a_run_parses_strictly_and_takes_the_majority_of_the_templates(world: World) -> None:
    with fake_openai(reply_for=judge_reply) as server:
        run = _run(world, server, kind="pairwise")
        assert server["requests"] == 12
    assert (run.status, run.done, run.total, run.parse_failures) == (RunStatus.DONE, 12, 12, 3)
    failed = PairwiseJudgeEstimate.objects.filter(run=run, parse_ok=False)
    assert set(failed.values_list("template", flat=True)) == {"repa_3"}
    for est in failed:
        assert est.label == "" and est.shown_label == "" and "not one of the labels" in est.error
        assert est.raw_text.endswith("A is better or B is better")
    ok = PairwiseJudgeEstimate.objects.get(
        run=run, triple=world.triples[("P1", "overall")], template="repa_2"
    )
    assert (ok.label, ok.justification) == ("b", "Второй лучше.")
    t = world.triples
    expected = {
        t[("P1", "factuality")].pk: "a",  # a, a, failure
        t[("P1", "overall")].pk: "no_majority",  # a, b, failure: one vote each
        t[("P2", "factuality")].pk: "a",
        t[("P2", "overall")].pk: "both_bad",  # three votes
    }
    assert dict(pairwise_judge_labels(run.pk)) == expected
    assert pairwise_judge_labels(run.pk) == sorted(expected.items())

    # A retried batch asks nothing again: every (triple, template) is answered once.
    with fake_openai(reply_for=judge_reply) as server:
        services.run_resume(run=run)
        services.run_execute_inline(
            run=run, backend_factory=lambda r: build_backend(r.config, r.backend)
        )
        assert server["requests"] == 0


def test_final_label_is_a_majority_of_the_templates_asked() -> None:
    assert pairwise.final_label(["a", "a", ""], 3) == "a"
    assert pairwise.final_label(["a", "b", ""], 3) == "no_majority"
    assert pairwise.final_label(["a", "", ""], 3) == "no_majority"  # failures are no votes
    assert pairwise.final_label(["both_good"], 1) == "both_good"
    assert pairwise.final_label([""], 1) == "no_majority"


# --- metrics by hand --------------------------------------------------------------------------


def test_macro_f1_by_hand() -> None:
    gold = ["a", "a", "b", "both_good"]
    pred: list[str | None] = ["a", "b", "b", None]
    # a: tp 1, fp 0, fn 1 -> 2/3; b: tp 1, fp 1, fn 0 -> 2/3; both_good: fn 1 -> 0;
    # both_bad: absent from both sides -> not averaged; the failure class: fp 1 -> 0.
    # REPA: (2/3 + 2/3 + 0 + 0) / 4 = 1/3; without the failure class (2/3 + 2/3 + 0) / 3 = 4/9.
    assert metrics.macro_f1(zip(gold, pred, strict=True)) == pytest.approx(1 / 3)
    assert metrics.macro_f1(zip(gold, pred, strict=True), failure_class=False) == pytest.approx(
        4 / 9
    )
    assert metrics.macro_f1(zip(gold, gold, strict=True)) == 1.0
    # All failures give 0, not "undefined".
    assert metrics.macro_f1([("a", None), ("b", "no_majority")]) == 0.0
    assert metrics.macro_f1([]) is None
    assert metrics.mean_std([1 / 3, 1 / 3, 0.0]) == pytest.approx((2 / 9, math.sqrt(2) / 9))


def test_position_and_length_bias_by_hand() -> None:
    # Pairs with a failure or no majority on either side are left out: 1 change of 3.
    share, n = metrics.changed_share(
        [("a", "b"), ("both_bad", "both_bad"), ("a", "a"), ("a", ""), ("no_majority", "b")]
    )
    assert (share, n) == (pytest.approx(1 / 3), 3)
    result = metrics.longer_pick_share(
        [
            ("a", 10, 5),  # longer picked
            ("b", 10, 5),  # shorter picked
            ("b", 3, 9),  # longer picked
            ("a", 7, 7),  # equal lengths: labelled, no longer pick
            ("both_good", 1, 9),  # a tie: labelled, no longer pick
            ("no_majority", 1, 9),  # no prediction: out
        ]
    )
    assert result == {
        "share": pytest.approx(2 / 5),
        "n": 5,
        "longer": 2,
        "one_sided_share": pytest.approx(2 / 3),
        "n_one_sided": 3,
        "excluded_no_label": 1,
        "equal_length": 1,
    }
    assert metrics.longer_pick_share([("a", 4, 4)])["share"] == 0.0
    assert metrics.longer_pick_share([("a", 4, 4)])["one_sided_share"] is None
    assert metrics.longer_pick_share([("", 4, 5)])["share"] is None


# --- the report -------------------------------------------------------------------------------


def test_the_stored_report_and_the_position_bias_twin(world: World) -> None:
    with fake_openai(reply_for=judge_reply) as server:
        run = _run(world, server, kind="pairwise")
        twin = services.run_create(config=run.config, scope=run.scope, swap_of=run, enqueue=False)
        twin = services.run_execute_inline(
            run=twin, backend_factory=lambda r: build_backend(r.config, r.backend)
        )
    assert (twin.swapped, twin.templates, twin.shots, twin.done) == (True, run.templates, 1, 12)
    t = world.triples
    # Shown swapped, the first response is the pair's B: "A is better" is stored as "b".
    assert dict(pairwise_judge_labels(twin.pk)) == {
        t[("P1", "factuality")].pk: "b",
        t[("P1", "overall")].pk: "no_majority",
        t[("P2", "factuality")].pk: "b",
        t[("P2", "overall")].pk: "both_bad",
    }

    # The same examples as the original run: the prompts differ only by the placement.
    def shown(r: JudgeRun) -> dict[tuple[int, str], list[int]]:
        rows = PairwiseJudgeEstimate.objects.filter(run=r)
        return {(e.triple_id, e.template): e.examples for e in rows}

    assert shown(twin) == shown(run)
    assert all(len(ids) == 1 for ids in shown(run).values())

    report = stored_report(run)
    by = {c["key"]: c for c in report["by_criterion"]}
    assert [c["key"] for c in report["by_criterion"]] == ["factuality", "overall"]
    assert (report["n_triples"], report["n_calls"], report["parse_failures"]) == (4, 12, 3)
    # Factuality, gold P1 "a" and P2 "both_good": repa_1 and repa_2 say a, a -> a: F1 2/3,
    # both_good: 0 -> 1/3 each; repa_3 fails twice -> 0. Mean 2/9, population std sqrt(2)/9.
    fact = by["factuality"]
    assert fact["n_gold"] == 2
    assert fact["f1_by_template"] == pytest.approx({"repa_1": 1 / 3, "repa_2": 1 / 3, "repa_3": 0})
    assert (fact["f1_mean"], fact["f1_std"]) == (
        pytest.approx(2 / 9),
        pytest.approx(math.sqrt(2) / 9),
    )
    assert fact["f1_final"] == pytest.approx(1 / 3)
    # Overall: only P1 is unanimous (b); repa_2 alone says b.
    over = by["overall"]
    assert over["n_gold"] == 1
    assert over["f1_by_template"] == pytest.approx({"repa_1": 0, "repa_2": 1, "repa_3": 0})
    assert over["f1_final"] == 0.0  # no majority is a miss
    # Position bias: factuality flips on both pairs; overall: P1 has no majority (left out),
    # P2 stays "both bad".
    assert fact["position_bias"] == {"share": 1.0, "n": 2}
    assert over["position_bias"] == {"share": 0.0, "n": 1}
    assert report["overall"]["position_bias"]["share"] == pytest.approx(2 / 3)
    # Length bias (judge, final labels): P1 fact picks A, the shorter; P2 fact picks A, the
    # longer; "both bad" is labelled, no pick; no majority is no prediction. Experts: P1 fact a
    # (shorter), P1 over b (longer), P2 over a (longer); P2 fact both good is labelled, no pick.
    assert report["overall"]["length_bias"]["judge"] == {
        "share": pytest.approx(1 / 3),
        "n": 3,
        "longer": 1,
        "one_sided_share": 0.5,
        "n_one_sided": 2,
        "excluded_no_label": 1,
        "equal_length": 0,
    }
    assert report["overall"]["length_bias"]["experts"]["share"] == pytest.approx(2 / 4)
    assert report["overall"]["length_bias"]["experts"]["one_sided_share"] == pytest.approx(2 / 3)
    # Self-preference (family "giga"): only P1 has a GigaChat side (A). The judge picks it on
    # factuality (1 of 1 picks); experts pick it once of twice; agreement on P1 factuality.
    sp = report["overall"]["self_preference"]
    assert (sp["n_items"], sp["judge_own_share"], sp["judge_picks"]) == (2, 1.0, 1)
    assert (sp["experts_own_share"], sp["experts_picks"]) == (0.5, 2)
    assert (sp["agreement"], sp["n_agreement"]) == (1.0, 1)
    # REPA's figure: the one self-pick (P1 factuality, A) the experts' majority (a) confirms.
    assert (sp["repa"]["share"], sp["repa"]["confirmed"], sp["repa"]["n"]) == (1.0, 1, 1)
    # Win rates: judge Giga 1, Yandex (0 + 1 + 0.5) / 3, Llama (0 + 0.5) / 2; experts Giga 1/2,
    # Yandex 2.5/4, Llama 0.5/2. Kendall: G-Y discordant, G-L and Y-L concordant -> 1/3;
    # Spearman: ranks (3, 2, 1) vs (2, 3, 1) -> 1 - 6 * 2 / 24 = 0.5.
    ranking = report["overall"]["ranking"]
    rates = {m["model"]: (m["judge"], m["experts"]) for m in ranking["models"]}
    assert rates == {
        "GigaChat-Max": (1.0, 0.5),
        "YandexGPT": (pytest.approx(0.5), 0.625),
        "Llama-3": (0.25, 0.25),
    }
    assert ranking["kendall_tau_b"] == pytest.approx(1 / 3)
    assert ranking["spearman"] == pytest.approx(0.5)
    assert report["twin_run"] == twin.pk


def test_bad_pairwise_options_are_refused(world: World) -> None:
    config = services.config_save(name="sbs")
    scope = {"panel": world.personas.panel_a.pk}
    options: dict[str, Any]
    for options in (
        {"templates": ["repa_9"]},
        {"templates": []},
        {"templates": ["repa_1", "repa_1"]},
        {"shots": 99},
    ):
        with pytest.raises(services.JudgingError):
            services.run_create(config=config, scope=scope, kind="pairwise", **options)
    pointwise = services.run_create(config=config, scope=scope, enqueue=False)
    with pytest.raises(services.JudgingError, match="swapped twin"):
        services.run_create(config=config, scope=scope, swap_of=pointwise)
    assert JudgeRun.objects.filter(kind=RunKind.PAIRWISE).count() == 0


def test_the_page_shows_the_pairwise_report_and_starts_the_twin(world: World) -> None:
    with fake_openai(reply_for=judge_reply) as server:
        run = _run(world, server, kind="pairwise", templates=["repa_1"], shots=0)
    assert run.total == 4
    stored_report(run)
    client = Client()
    client.force_login(world.personas.supervisor_a)
    page = client.get(f"/judging/runs/{run.pk}/").content.decode()
    assert "pairwise-report" in page
    row = re.search(r'<tr class="criterion-factuality">.*?</tr>', page, re.S)
    assert row is not None
    # One template: F1 1/3 ± 0, no twin yet.
    assert "0.333 ± 0.000" in row.group(0)
    # All criteria, one template: the judge labels P1 fact a (shorter), P2 fact a (longer), P1
    # over a (shorter), P2 over both bad. Length bias (REPA) 1 longer of 4 labelled = 0.250;
    # the variant 1 of 3 one-side picks = 0.333; experts 2 of 4 (REPA), 2 of 3 (variant).
    # Self-preference: self-picks P1 fact and P1 over (own A); the experts confirm P1 fact (a)
    # and not P1 over (b): 1 of 2 = 0.500.
    every = re.search(r'<tr class="criterion-all">.*?</tr>', page, re.S)
    assert every is not None

    def cell(name: str) -> str:
        found = re.search(rf'<td class="{name}">(.*?)</td>', every.group(0), re.S)
        assert found is not None, name
        return found.group(1)

    assert cell("length-bias").startswith("0.250 ")
    assert cell("length-bias-experts").startswith("0.500 ")
    assert cell("length-bias-variant").startswith("0.333 / 0.667 ")
    assert cell("self-preference").startswith("0.500 ") and "1/2" in cell("self-preference")
    assert cell("self-pick-rate").startswith("1.000 ")
    # The help text states each definition with its worked example.
    assert "Self-preference (REPA)" in page and "1 confirmed of 3 = 0.333" in page
    assert "failure 0, Macro-F1 = 2/3" in page and "2 longer picks of 5 = 0.4" in page
    other = Client()
    other.force_login(world.personas.supervisor_b)
    assert other.get(f"/judging/runs/{run.pk}/").status_code == 404
    assert other.post(f"/judging/runs/{run.pk}/swap/").status_code == 404
    response = client.post(f"/judging/runs/{run.pk}/swap/")
    twin = JudgeRun.objects.get(swap_of=run)
    assert response.status_code == 302 and response["Location"] == f"/judging/runs/{twin.pk}/"
    assert (twin.swapped, twin.templates, twin.shots, twin.total) == (True, ["repa_1"], 0, 4)
