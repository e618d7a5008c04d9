"""The side-by-side (REPA) judge: prompts of a batch, the gold pool, labels and final labels.

One call per (pair, criterion, template): a triple of a pairwise run is asked once per template
of the run (REPA asks three prompts, Appendix C), each answer parsed strictly by
`protocol.pairwise.parse_judge_label` (a malformed output is a parse failure, never a guessed
label) and stored as a PairwiseJudgeEstimate in the pair's own orientation. The final label of
a triple is the majority over its templates (`final_labels`).

k-shot (REPA's few-shot setting gives one annotated example): the examples are gold items (a
comparison triple whose three or more submitted expert labels are unanimous, issue #13), drawn
per pair with a seed of the run and the pair, never from the pair's own instruction (no item
is its own demonstration). They are chosen per pair, not per criterion, so they stay in the
prompt's shared prefix (judge_worker.pairwise) and every criterion of a pair reuses it.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from dataset import label_sources
from judge_worker import JudgeItem, PairwiseExample, build_pairwise_prompt
from judging.models import JudgeRun, PairwiseJudgeEstimate
from protocol.pairwise import Label, majority, parse_judge_label, unanimous, unplace
from taxonomy.models import ComparisonCriterion
from work.models import Estimate, EstimateStatus, Triple, TripleKind

# The paper's three prompts (Figure 4), in the order it prints them.
DEFAULT_TEMPLATES = ("repa_1", "repa_2", "repa_3")
DEFAULT_SHOTS = 1
# At most this many gold examples in a pairwise prompt (REPA's few-shot setting gives one).
MAX_SHOTS = 5
# The final label of a triple whose templates reach no majority (explicit, never a label); the
# rankings read it through dataset.label_sources, where the code lives.
NO_MAJORITY = label_sources.NO_MAJORITY
# REPA's gold items: all three annotators agree (§3.2, "consistent queries").
GOLD_MIN_VOTES = 3


def item_id(triple_id: int, template: str) -> str:
    return f"{triple_id}:{template}"


def error_type(criterion: ComparisonCriterion) -> str:
    """REPA's "<Name>: <description>" (Figure 5) in English, the language of the shipped
    templates; the same text as taxonomy.pairwise_criteria.PairwiseCriterion.judge_error_type."""
    return f"{criterion.name_en}: {criterion.judge_en}"


# --- expert labels ----------------------------------------------------------------------------


def expert_labels(triple_ids: Iterable[int] | None = None) -> dict[int, list[str]]:
    """Submitted expert labels per pairwise triple (the pair's orientation)."""
    qs = Estimate.objects.filter(
        status=EstimateStatus.SUBMITTED, triple__kind=TripleKind.PAIRWISE
    ).exclude(label="")
    if triple_ids is not None:
        qs = qs.filter(triple_id__in=list(triple_ids))
    out: dict[int, list[str]] = defaultdict(list)
    for triple_id, label in qs.values_list("triple_id", "label").order_by("triple_id", "slot"):
        out[triple_id].append(label)
    return dict(out)


def gold_labels(labels: dict[int, list[str]]) -> dict[int, Label]:
    """The unanimous items (3/3 or more agreeing): REPA's consistent queries, the gold pool."""
    gold = {}
    for triple_id, given in labels.items():
        label = unanimous(given, min_votes=GOLD_MIN_VOTES)
        if label is not None:
            gold[triple_id] = label
    return gold


def _examples_for_pairs(run: JudgeRun, triples: Sequence[Triple]) -> dict[int, list[Triple]]:
    """k gold examples per pair of `triples` (pair id -> example triples)."""
    if run.shots <= 0:
        return {}
    gold = gold_labels(expert_labels())
    candidates = sorted(
        Triple.objects.filter(pk__in=list(gold)).values_list("pk", "pair__instruction_id")
    )
    # A swapped run reuses its original's examples: position bias is then measured with the
    # same prompts but for the placement.
    seed_run = run.swap_of_id or run.pk
    chosen: dict[int, list[int]] = {}
    for triple in triples:
        pair = triple.pair
        if pair is None or pair.pk in chosen:
            continue
        pool = [pk for pk, instruction in candidates if instruction != pair.instruction_id]
        rng = random.Random(f"{seed_run}:{pair.pk}")  # noqa: S311 (a reproducible draw, not a secret)
        chosen[pair.pk] = rng.sample(pool, min(run.shots, len(pool)))
    wanted = {pk for ids in chosen.values() for pk in ids}
    loaded = {
        t.pk: t
        for t in Triple.objects.filter(pk__in=wanted).select_related(
            "pair__instruction", "pair__answer_a", "pair__answer_b", "comparison_criterion"
        )
    }
    for t in loaded.values():
        t.gold_label = gold[t.pk]  # type: ignore[attr-defined]
    return {pair_id: [loaded[pk] for pk in ids] for pair_id, ids in chosen.items()}


def _as_example(triple: Triple) -> PairwiseExample:
    pair = triple.pair
    assert pair is not None and triple.comparison_criterion is not None
    return PairwiseExample(
        query=pair.instruction.text,
        response_a=pair.answer_a.text,
        response_b=pair.answer_b.text,
        error_type=error_type(triple.comparison_criterion),
        label=str(triple.gold_label),  # type: ignore[attr-defined]
    )


# --- a batch ----------------------------------------------------------------------------------


def todo_items(run: JudgeRun, triple_ids: Sequence[int]) -> list[tuple[int, str]]:
    """(triple, template) calls of these triples not yet answered in the run."""
    done = set(
        PairwiseJudgeEstimate.objects.filter(run=run, triple_id__in=triple_ids).values_list(
            "triple_id", "template"
        )
    )
    return [(t, tpl) for t in triple_ids for tpl in run.templates if (t, tpl) not in done]


def build_items(run: JudgeRun, calls: Sequence[tuple[int, str]]) -> list[JudgeItem]:
    """Judge prompts for (triple, template) calls. Items of one (pair, template) share their
    prefix_key: the backends batch them and reuse the shared prompt prefix."""
    triples = {
        t.pk: t
        for t in Triple.objects.filter(pk__in={tid for tid, _ in calls}).select_related(
            "pair__instruction", "pair__answer_a", "pair__answer_b", "comparison_criterion"
        )
    }
    examples = _examples_for_pairs(run, list(triples.values()))
    items = []
    for triple_id, template in calls:
        triple = triples[triple_id]
        pair, criterion = triple.pair, triple.comparison_criterion
        assert pair is not None and criterion is not None
        first, second = pair.answer_a, pair.answer_b
        if run.swapped:
            first, second = second, first
        shots = examples.get(pair.pk, [])
        prompt = build_pairwise_prompt(
            template,
            pair.instruction.text,
            first.text,
            second.text,
            error_type(criterion),
            [_as_example(t) for t in shots],
        )
        items.append(
            JudgeItem(
                item_id=item_id(triple_id, template),
                prefix_key=f"{pair.pk}:{template}",
                messages=[{"role": "user", "content": prompt}],
                allowed_scores=(),
                meta={
                    "criterion": criterion.key,
                    "template": template,
                    "examples": ",".join(str(t.pk) for t in shots),
                },
            )
        )
    return items


def estimate_from_output(
    run: JudgeRun, item: JudgeItem, raw_text: str, **usage: Any
) -> PairwiseJudgeEstimate:
    """The stored answer of one call: the strictly parsed label, shown and unplaced."""
    triple_id, template = item.item_id.split(":", 1)
    parse = parse_judge_label(raw_text)
    shown = parse.label
    examples = [int(x) for x in item.meta.get("examples", "").split(",") if x]
    return PairwiseJudgeEstimate(
        run=run,
        triple_id=int(triple_id),
        config_id=run.config_id,
        template=template,
        shown_label=shown.value if shown else "",
        label=unplace(shown, swapped=run.swapped).value if shown else "",
        parse_ok=shown is not None,
        error=parse.error or "",
        raw_text=raw_text,
        justification=parse.justification,
        examples=examples,
        **usage,
    )


# --- final labels -----------------------------------------------------------------------------


def template_votes_needed(n_templates: int) -> int:
    """Votes a final label needs: REPA's two of three templates; in general a strict majority
    of the templates asked (one template: its own label), so a parse failure is a missing vote,
    never a vote for anything."""
    return n_templates // 2 + 1


def final_label(labels: Iterable[str], n_templates: int) -> str:
    """Majority over the parsed template labels (protocol.pairwise.majority), else NO_MAJORITY."""
    won = majority([x for x in labels if x], min_votes=template_votes_needed(n_templates))
    return won.value if won is not None else NO_MAJORITY


def template_labels(run: JudgeRun) -> dict[int, dict[str, str]]:
    """triple -> template -> label ("" for a parse failure), pair orientation."""
    out: dict[int, dict[str, str]] = defaultdict(dict)
    for triple_id, template, label in PairwiseJudgeEstimate.objects.filter(run=run).values_list(
        "triple_id", "template", "label"
    ):
        out[triple_id][template] = label
    return dict(out)


def final_labels(run: JudgeRun) -> dict[int, str]:
    """The run's final label per judged triple: a Label code or NO_MAJORITY."""
    n = len(run.templates)
    return {tid: final_label(by_tpl.values(), n) for tid, by_tpl in template_labels(run).items()}
