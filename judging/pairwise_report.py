"""The report of a side-by-side (REPA) judge run, computed by the "judge_report" job and stored
like the pointwise report (JudgeReport), read by the run page.

Per comparison criterion (REPA §3.2, Tables 6-7, and issue #13):

- Macro-F1 (REPA's, judging.metrics.macro_f1: a parse failure or no majority is a class of
  its own that scores 0) against the *unanimous* expert items (three or more submitted labels,
  all equal: REPA's consistent queries), per template, then mean ± population std across the
  templates; also the F1 of the final label (majority over the templates). Beside it the
  variant without the failure class (`f1_misses_*`: a failure only misses its gold label).
- Position bias: with the run's swapped twin (JudgeRun.swap_of, either direction), the share of
  final labels, both brought to the pair's orientation, that change when A and B are swapped.
- Length bias (REPA's, judging.metrics.longer_pick_share): picks of the longer response
  (characters) over all labelled predictions; beside it the variant over one-side picks of
  different lengths only; the experts' majority labels likewise.
- Self-preference: pairs where exactly one response comes from a model of the judge's family
  (JudgeConfig.model_family inside LanguageModel.name, judging.metrics.same_family; pairs of
  two own-family models are left out). REPA's figure (judging.metrics.self_pick_confirmed):
  the share of the judge's self-picks that the expert majority confirms, with the self-pick
  rate; the variants beside it: the share of one-side picks that chose its own model (judge
  and experts) and the judge's agreement with the expert majority on all those pairs.
- Ranking: per-model win rate (ties 0.5) from the judge's final labels and from the experts'
  majority labels, and Kendall's tau-b and Spearman's rho between them.

The expert majority is protocol.pairwise.majority over the submitted labels (≥ 2 votes), the
same rule as the dataset's aggregate; statistics are the plain functions of judging.metrics.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count, Max

from judging import metrics
from judging.models import JudgeRun, PairwiseJudgeEstimate, RunKind
from judging.pairwise import expert_labels, final_label, gold_labels, template_labels
from protocol.pairwise import majority
from work.models import Estimate, EstimateStatus, Triple

PAIRWISE_REPORT_VERSION = 2


def twin_run(run: JudgeRun) -> JudgeRun | None:
    """The run's position-bias twin: the run it mirrors, else its latest mirror."""
    if run.swap_of_id:
        return JudgeRun.objects.filter(pk=run.swap_of_id, kind=RunKind.PAIRWISE).first()
    return JudgeRun.objects.filter(swap_of=run, kind=RunKind.PAIRWISE).order_by("-pk").first()


def pairwise_fingerprint(run: JudgeRun) -> dict[str, Any]:
    """The report's inputs: the run's answers, its twin's, and the submitted expert labels of
    the judged triples (count and latest change)."""
    judged = PairwiseJudgeEstimate.objects.filter(run_id=run.pk).values("triple_id")
    experts = Estimate.objects.filter(
        status=EstimateStatus.SUBMITTED, triple_id__in=judged
    ).aggregate(n=Count("id"), last=Max("updated_at"))
    twin = twin_run(run)
    return {
        "version": PAIRWISE_REPORT_VERSION,
        "judged": [run.done, run.parse_failures],
        "twin": [twin.pk, twin.done] if twin else None,
        "experts": [experts["n"], experts["last"].isoformat() if experts["last"] else None],
        "family": run.config.model_family,
    }


def _final(run: JudgeRun, labels: dict[int, dict[str, str]]) -> dict[int, str]:
    return {tid: final_label(by.values(), len(run.templates)) for tid, by in labels.items()}


def run_pairwise_report(run: JudgeRun) -> tuple[dict[str, Any], dict[str, Any]]:
    """(report, fingerprint) of a pairwise run."""
    fingerprint = pairwise_fingerprint(run)
    labels = template_labels(run)
    final = _final(run, labels)
    twin = twin_run(run)
    twin_final = _final(twin, template_labels(twin)) if twin else {}
    experts = expert_labels(final)
    triples: dict[int, dict[str, Any]] = {
        t["pk"]: dict(t)
        for t in Triple.objects.filter(pk__in=list(final)).values(
            "pk",
            "comparison_criterion__key",
            "comparison_criterion__name_en",
            "comparison_criterion__name_ru",
            "comparison_criterion__position",
            "pair__answer_a__text",
            "pair__answer_b__text",
            "pair__answer_a__model__name",
            "pair__answer_b__model__name",
        )
    }
    data = compute_pairwise_report(
        templates=list(run.templates),
        labels=labels,
        final=final,
        twin_final=twin_final,
        experts=experts,
        triples=triples,
        family=run.config.model_family,
    )
    data["twin_run"] = twin.pk if twin else None
    data["swapped"] = run.swapped
    data["shots"] = run.shots
    return data, fingerprint


def compute_pairwise_report(
    *,
    templates: list[str],
    labels: dict[int, dict[str, str]],
    final: dict[int, str],
    twin_final: dict[int, str],
    experts: dict[int, list[str]],
    triples: dict[int, dict[str, Any]],
    family: str,
) -> dict[str, Any]:
    """The report from plain data (every dict keyed by triple id)."""
    gold = gold_labels(experts)
    human = {
        tid: (m.value if (m := majority(given, min_votes=2)) else "")
        for tid, given in experts.items()
    }
    groups: dict[str, list[int]] = defaultdict(list)
    order: dict[str, tuple[int, str, str]] = {}
    for tid in sorted(final):
        t = triples[tid]
        key = t["comparison_criterion__key"]
        groups[key].append(tid)
        order[key] = (
            t["comparison_criterion__position"],
            t["comparison_criterion__name_en"],
            t["comparison_criterion__name_ru"],
        )
    rows = [
        {
            "key": key,
            "name_en": order[key][1],
            "name_ru": order[key][2],
            **_criterion(
                templates, groups[key], labels, final, twin_final, gold, human, triples, family
            ),
        }
        for key in sorted(groups, key=lambda k: order[k][0])
    ]
    every = sorted(final)
    overall = _criterion(templates, every, labels, final, twin_final, gold, human, triples, family)
    calls = [lbl for by in labels.values() for lbl in by.values()]
    return {
        "kind": "pairwise",
        "templates": templates,
        "n_triples": len(final),
        "n_calls": len(calls),
        "parse_failures": sum(1 for lbl in calls if not lbl),
        "parse_failures_by_template": {
            tpl: sum(1 for by in labels.values() if by.get(tpl) == "") for tpl in templates
        },
        "no_majority": sum(1 for lbl in final.values() if lbl not in metrics.PAIRWISE_LABELS),
        "by_criterion": rows,
        "overall": overall,
    }


def _criterion(
    templates: list[str],
    tids: list[int],
    labels: dict[int, dict[str, str]],
    final: dict[int, str],
    twin_final: dict[int, str],
    gold: dict[int, Any],
    human: dict[int, str],
    triples: dict[int, dict[str, Any]],
    family: str,
) -> dict[str, Any]:
    gold_tids = [t for t in tids if t in gold]
    per_template = {
        tpl: metrics.macro_f1((gold[t].value, labels[t].get(tpl) or None) for t in gold_tids)
        for tpl in templates
    }
    f1_mean, f1_std = metrics.mean_std(list(per_template.values()))
    misses = {
        tpl: metrics.macro_f1(
            ((gold[t].value, labels[t].get(tpl) or None) for t in gold_tids), failure_class=False
        )
        for tpl in templates
    }
    misses_mean, misses_std = metrics.mean_std(list(misses.values()))
    position, n_position = metrics.changed_share(
        (final[t], twin_final[t]) for t in tids if t in twin_final
    )

    def lengths(t: int) -> tuple[int, int]:
        row = triples[t]
        return len(row["pair__answer_a__text"] or ""), len(row["pair__answer_b__text"] or "")

    return {
        "n": len(tids),
        "n_gold": len(gold_tids),
        "f1_by_template": per_template,
        "f1_mean": f1_mean,
        "f1_std": f1_std,
        "f1_final": metrics.macro_f1((gold[t].value, final[t]) for t in gold_tids),
        "f1_misses_by_template": misses,
        "f1_misses_mean": misses_mean,
        "f1_misses_std": misses_std,
        "f1_misses_final": metrics.macro_f1(
            ((gold[t].value, final[t]) for t in gold_tids), failure_class=False
        ),
        "no_majority": sum(1 for t in tids if final[t] not in metrics.PAIRWISE_LABELS),
        "position_bias": {"share": position, "n": n_position} if twin_final else None,
        "length_bias": {
            "judge": metrics.longer_pick_share((final[t], *lengths(t)) for t in tids),
            "experts": metrics.longer_pick_share(
                (human[t], *lengths(t)) for t in tids if human.get(t)
            ),
        },
        "self_preference": _self_preference(tids, final, human, triples, family)
        if family
        else None,
        "ranking": _ranking(tids, final, human, triples),
    }


def _self_preference(
    tids: list[int],
    final: dict[int, str],
    human: dict[int, str],
    triples: dict[int, dict[str, Any]],
    family: str,
) -> dict[str, Any]:
    own_side: dict[int, str] = {}
    for t in tids:
        a = metrics.same_family(family, triples[t]["pair__answer_a__model__name"] or "")
        b = metrics.same_family(family, triples[t]["pair__answer_b__model__name"] or "")
        if a != b:
            own_side[t] = "a" if a else "b"

    def own_share(source: dict[int, str]) -> tuple[float | None, int]:
        picks = [t for t in own_side if source.get(t) in metrics.DECISIVE]
        if not picks:
            return None, 0
        return sum(1 for t in picks if source[t] == own_side[t]) / len(picks), len(picks)

    repa = metrics.self_pick_confirmed((own_side[t], final[t], human.get(t, "")) for t in own_side)
    judge_share, judge_n = own_share(final)
    human_share, human_n = own_share(human)
    both = [
        t
        for t in own_side
        if final[t] in metrics.PAIRWISE_LABELS and human.get(t) in metrics.PAIRWISE_LABELS
    ]
    return {
        "n_items": len(own_side),
        "repa": repa,
        "judge_own_share": judge_share,
        "judge_picks": judge_n,
        "experts_own_share": human_share,
        "experts_picks": human_n,
        "agreement": sum(1 for t in both if final[t] == human[t]) / len(both) if both else None,
        "n_agreement": len(both),
    }


def _ranking(
    tids: list[int],
    final: dict[int, str],
    human: dict[int, str],
    triples: dict[int, dict[str, Any]],
) -> dict[str, Any]:
    def rows(source: dict[int, str]) -> list[tuple[str, str, str]]:
        return [
            (
                triples[t]["pair__answer_a__model__name"],
                triples[t]["pair__answer_b__model__name"],
                source.get(t, ""),
            )
            for t in tids
        ]

    judge = metrics.win_rates(rows(final))
    experts = metrics.win_rates(rows(human))
    return {
        "models": [
            {
                "model": str(m),
                "judge": judge.get(m, (None, 0))[0],
                "experts": experts.get(m, (None, 0))[0],
                "n_judge": judge.get(m, (None, 0))[1],
                "n_experts": experts.get(m, (None, 0))[1],
            }
            for m in sorted(set(judge) | set(experts), key=str)
        ],
        **metrics.ranking_agreement(judge, experts),
    }
