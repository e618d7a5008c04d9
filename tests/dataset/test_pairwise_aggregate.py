"""The side-by-side (REPA pairwise) kind in quality and the dataset: verdicts, agreement, gold
pool, the aggregation job beside pointwise work, and the `pairs` table of both exports."""

from __future__ import annotations

import random
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataset.aggregation import (
    EXCLUDED_FEW,
    AggregationSettings,
    aggregation_run,
    read_estimate_frame,
)
from dataset.export import ExportOptions, dataset_export
from dataset.models import EXCLUDED_NO_CONSENSUS, TripleAggregate
from dataset.pairwise import aggregate_labels, pairs_schema
from material.models import Answer, AnswerPair, LanguageModel
from panels.models import Expert, Panel
from protocol import agreement as nominal
from protocol.pairwise import Label, unplace
from quality.pairwise import comparison_agreement, labels_match, pairwise_gold_pool
from quality.selectors import expert_agreement
from taxonomy.services import comparison_criteria
from tests.conftest import Personas, make_expert
from tests.dataset.test_aggregation import GOOD, score_triples
from work import checks, kinds
from work.comparisons import ComparisonInput, comparison_submit, comparisons_build
from work.models import Assignment, Estimate, Triple, TripleKind

A, B, GOOD_BOTH, BAD_BOTH = "a", "b", "both_good", "both_bad"
# The build's seed: its draws give the three assignments of a pair a mix of placements (the
# tests assert the mix, so a changed builder fails here instead of testing nothing).
SEED = 7
FORMULA_COMMENT = '=HYPERLINK("http://evil.example","приз")'


# ---------------------------------------------------------------------------------------------
# The slot on hand-made label frames.
# ---------------------------------------------------------------------------------------------


def labels_frame(items: dict[int, list[str]], overlap: int = 3) -> pd.DataFrame:
    """triple id -> its labels (pair = triple, criterion "overall") as a label frame."""
    rows = [
        (tid, tid, "overall", 1, overlap, label)
        for tid, labels in items.items()
        for label in labels
    ]
    return pd.DataFrame(
        rows,
        columns=["triple_id", "pair_id", "criterion_key", "panel_id", "required_overlap", "label"],
    )


def verdicts(items: dict[int, list[str]], **kwargs: Any) -> dict[int, tuple[str, str, int]]:
    result = aggregate_labels(labels_frame(items, **kwargs))
    return {
        int(r.triple_id): (r.label, r.excluded_reason, int(r.n_estimates))
        for r in result.triples.itertuples()
    }


def test_two_of_three_is_the_majority_and_three_different_labels_are_excluded() -> None:
    got = verdicts(
        {
            1: [A, A, B],
            2: [A, B, GOOD_BOTH],
            3: [BAD_BOTH, BAD_BOTH, BAD_BOTH],
            4: [GOOD_BOTH, B, GOOD_BOTH],
        }
    )
    assert got == {
        1: (A, "", 3),
        2: ("", EXCLUDED_NO_CONSENSUS, 3),
        3: (BAD_BOTH, "", 3),
        4: (GOOD_BOTH, "", 3),
    }


def test_a_triple_short_of_its_overlap_is_too_few_even_with_two_equal_labels() -> None:
    # a, b of three could still go either way; a, a of three is decided but not complete: the
    # dataset holds complete items only, as REPA's does.
    got = verdicts({1: [A, B], 2: [A, A], 3: [B]})
    assert {t: v[1] for t, v in got.items()} == dict.fromkeys((1, 2, 3), EXCLUDED_FEW)
    assert all(v[0] == "" for v in got.values())
    # An overlap-2 panel: two equal labels are complete and a majority; the setting's minimum
    # still applies above the overlap.
    assert verdicts({1: [A, A]}, overlap=2) == {1: (A, "", 2)}
    strict = aggregate_labels(
        labels_frame({1: [A, A]}, overlap=2), AggregationSettings(min_estimates=3)
    )
    assert strict.triples.iloc[0]["excluded_reason"] == EXCLUDED_FEW


def test_the_aggregation_report_counts_each_outcome() -> None:
    result = aggregate_labels(labels_frame({1: [A, A, B], 2: [A, B, BAD_BOTH], 3: [A]}))
    assert result.report == {
        "labels_submitted": 7,
        "triples_total": 3,
        "triples_dropped_few_labels": 1,
        "triples_no_consensus": 1,
        "triples_in_dataset": 1,
    }
    assert len(aggregate_labels(labels_frame({})).triples) == 0


def test_the_pairwise_kind_is_registered_whole() -> None:
    from dataset.parts import parts
    from quality import kinds as gold_kinds
    from quality.checks import gold_kinds_complete
    from work import pages

    assert kinds.get(kinds.PAIRWISE).label == "side-by-side comparison"
    assert kinds.items[kinds.PAIRWISE].item_field == "pair"
    assert kinds.PAIRWISE in pages.pages and kinds.PAIRWISE in gold_kinds.kinds
    assert kinds.PAIRWISE in parts
    assert checks.task_kinds_complete() == [] and gold_kinds_complete() == []
    assert labels_match(ref_label=B, label=Label.B)
    assert not labels_match(ref_label=GOOD_BOTH, label=BAD_BOTH)
    assert not labels_match(ref_label=A, label="")


def test_the_pairs_schema_refuses_a_criterion_key_that_spells_another_column() -> None:
    assert "overall_3" in pairs_schema(["overall"], 3).names
    assert pa.types.is_list(pairs_schema(["overall"]).field("overall_labels").type)
    with pytest.raises(ValueError, match="query"):
        pairs_schema(["query"])


# ---------------------------------------------------------------------------------------------
# On the database: built and submitted through work.comparisons.
# ---------------------------------------------------------------------------------------------


@dataclass
class Pairs:
    panel: Panel
    experts: list[Expert]
    pairs: list[AnswerPair]
    keys: list[str]
    # (pair id, expert id) -> criterion key -> label in the pair's orientation
    given: dict[tuple[int, int], dict[str, str]]
    comments: dict[tuple[int, int], str]


def make_pair(make_answer: Callable[..., Answer], n: int, text_b: str = "") -> AnswerPair:
    a = make_answer(model="GigaChat", text=f"Первый ответ номер {n}: фотосинтез идёт на свету.")
    lm, _ = LanguageModel.objects.get_or_create(name="YandexGPT", version="1")
    b = Answer.objects.create(
        instruction=a.instruction,
        model=lm,
        text=text_b or f"Второй ответ {n}.",
        text_hash=f"b{n}-{a.pk}",
    )
    return AnswerPair.objects.create(
        instruction=a.instruction,
        answer_a=a,
        answer_b=b,
        category="Generation",
        source="repa-test",
        external_id=f"pair-{n}",
    )


def submit(assignment: Assignment, labels: dict[str, str], comment: str = "") -> None:
    """Submit labels meant in the pair's orientation, as the expert's page would post them:
    the side shown (`unplace` is an involution, so it also places)."""
    shown = {k: unplace(v, swapped=assignment.swapped).value for k, v in labels.items()}
    result = comparison_submit(
        assignment=assignment,
        data=ComparisonInput(labels=shown, comment=comment),
        user=assignment.expert.user,
    )
    assert result.ok, result


def build(panel: Panel, pairs: list[AnswerPair]) -> list[Assignment]:
    report = comparisons_build(
        panel_id=panel.pk, route=True, pair_ids=[p.pk for p in pairs], seed=SEED
    )
    assert report["assignments_created"] == 3 * len(pairs)
    return list(
        Assignment.objects.filter(pair__in=pairs)
        .select_related("expert__user")
        .order_by("pair_id", "pk")
    )


@pytest.fixture
def labelled(personas: Personas, make_answer: Callable[..., Answer]) -> Pairs:
    """Four pairs, three experts each, labels drawn from a seeded generator with a few fixed
    cells: pair 0 "overall" a, a, b; pair 1 "overall" a, b, both_good; pair 2 unanimous."""
    panel = personas.panel_a
    experts = [personas.expert_a] + [make_expert(f"sbs{i}", panel) for i in range(2)]
    pairs = [make_pair(make_answer, n, text_b="Ответ Б.  Из  четырёх слов") for n in range(4)]
    keys = [c.key for c in sorted(comparison_criteria(), key=lambda c: c.position)]
    assignments = build(panel, pairs)
    rng = random.Random(3)
    fixed = {0: [A, A, B], 1: [A, B, GOOD_BOTH], 2: [B, B, B], 3: [BAD_BOTH, A, BAD_BOTH]}
    given: dict[tuple[int, int], dict[str, str]] = {}
    comments: dict[tuple[int, int], str] = {}
    for n, pair in enumerate(pairs):
        mine = [a for a in assignments if a.pair_id == pair.pk]
        for i, assignment in enumerate(mine):
            labels = {k: rng.choice([A, A, B, GOOD_BOTH, BAD_BOTH]) for k in keys}
            labels["overall"] = fixed[n][i]
            comment = FORMULA_COMMENT if (n, i) == (0, 0) else f"комментарий {n}-{i}"
            submit(assignment, labels, comment)
            given[(pair.pk, assignment.expert_id)] = labels
            comments[(pair.pk, assignment.expert_id)] = comment
    return Pairs(panel, experts, pairs, keys, given, comments)


def labels_of(data: Pairs, pair: AnswerPair, key: str) -> list[str]:
    return [v[key] for (p, _e), v in data.given.items() if p == pair.pk]


def test_a_left_pick_on_a_swapped_page_is_stored_as_b_and_the_majority_follows(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    panel = personas.panel_a
    for i in range(2):
        make_expert(f"swp{i}", panel)  # with expert_a, the three the pair needs
    pair = make_pair(make_answer, 1)
    assignments = build(panel, [pair])
    assert {a.swapped for a in assignments} == {True, False}, "the seed must give both placements"
    swapped = next(a for a in assignments if a.swapped)
    rest = [a for a in assignments if a.pk != swapped.pk]
    keys = [c.key for c in comparison_criteria()]
    # The swapped expert saw the pair's B on the left and picked the left response ("a" on
    # the page); the others post in the pair's own orientation: one b, one a.
    posted = dict.fromkeys(keys, GOOD_BOTH) | {"overall": A}
    assert comparison_submit(
        assignment=swapped, data=ComparisonInput(labels=posted), user=swapped.expert.user
    ).ok
    submit(rest[0], dict.fromkeys(keys, GOOD_BOTH) | {"overall": B})
    submit(rest[1], dict.fromkeys(keys, GOOD_BOTH) | {"overall": A})
    overall = Triple.objects.get(pair=pair, comparison_criterion__key="overall")
    stored = Estimate.objects.get(triple=overall, assignment=swapped)
    assert stored.label == B
    aggregation_run()
    agg = TripleAggregate.objects.get(triple=overall)
    # a, b, b: B wins; had the page's side been stored it would be a, a, b and A.
    assert (agg.label, agg.excluded_reason, agg.n_estimates) == (B, "", 3)
    assert agg.mean is None and agg.mode is None


def test_the_job_aggregates_both_kinds_and_the_pointwise_result_is_unchanged(
    personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    experts = [personas.expert_a] + [make_expert(f"pw{i}", personas.panel_a) for i in range(4)]
    clean, violating = make_answer(), make_answer(model="YandexGPT")
    score_triples(
        clean,
        experts,
        {
            "censor": [(0, GOOD), (0, GOOD), (0, GOOD)],
            "repeats": [(0, GOOD), (1, GOOD), (2, GOOD), (2, GOOD), (2, GOOD)],
            "grammar": [(2, GOOD), (2, "bad"), (1, GOOD)],
        },
    )
    score_triples(
        violating, experts, {"censor": [(1, GOOD), (0, GOOD)], "repeats": [(2, GOOD)] * 3}
    )
    fields = ("triple_id", "n_estimates", "mean", "mode", "confidence", "all_na", "label")
    before_report = aggregation_run()
    before = sorted(TripleAggregate.objects.values_list(*fields, "excluded_reason"))

    pairs = [make_pair(make_answer, n) for n in range(3)]
    assignments = build(personas.panel_a, pairs)
    keys = [c.key for c in comparison_criteria()]
    overall = {0: [A, A, B], 1: [A, B, GOOD_BOTH], 2: [BAD_BOTH, BAD_BOTH, BAD_BOTH]}
    for n, pair in enumerate(pairs):
        mine = [a for a in assignments if a.pair_id == pair.pk]
        # Pair 2 gets two of its three submissions: incomplete.
        for i, assignment in enumerate(mine[:2] if n == 2 else mine):
            submit(assignment, dict.fromkeys(keys, B) | {"overall": overall[n][i]})

    # The pointwise read holds no pairwise triple (criterion and rubric NULL there).
    pairwise_ids = set(Triple.objects.filter(kind=TripleKind.PAIRWISE).values_list("pk", flat=True))
    assert len(pairwise_ids) == 3 * len(keys)
    assert not pairwise_ids & set(read_estimate_frame()["triple_id"].tolist())

    after_report = aggregation_run()
    after = sorted(
        TripleAggregate.objects.filter(triple__kind=TripleKind.POINTWISE).values_list(
            *fields, "excluded_reason"
        )
    )
    assert after == before
    pairwise_report = after_report.pop("pairwise")
    assert after_report == before_report
    assert pairwise_report["triples_total"] == len(pairwise_ids)
    assert pairwise_report["triples_dropped_few_labels"] == len(keys)
    assert pairwise_report["triples_no_consensus"] == 1

    got = {
        (pair_id, key): (label, reason)
        for pair_id, key, label, reason in TripleAggregate.objects.filter(
            triple__kind=TripleKind.PAIRWISE
        ).values_list(
            "triple__pair_id", "triple__comparison_criterion__key", "label", "excluded_reason"
        )
    }
    assert len(got) == len(pairwise_ids)
    assert got[(pairs[0].pk, "overall")] == (A, "")
    assert got[(pairs[1].pk, "overall")] == ("", EXCLUDED_NO_CONSENSUS)
    assert got[(pairs[2].pk, "overall")] == ("", EXCLUDED_FEW)
    assert got[(pairs[0].pk, "factuality")] == (B, "")


def test_agreement_per_criterion_is_protocol_agreement_on_the_same_labels(labelled: Pairs) -> None:
    measured = comparison_agreement(labelled.panel)
    assert list(measured) == labelled.keys  # criteria in the set's order
    for key in labelled.keys:
        items = [labels_of(labelled, pair, key) for pair in labelled.pairs]
        got = measured[key]
        assert got.items == len(labelled.pairs)
        assert got.majority_vote_rate == nominal.majority_vote_rate(items)
        assert got.unanimity_rate == nominal.unanimity_rate(items)
        for value, expected in (
            (got.fleiss_kappa, nominal.fleiss_kappa(items)),
            (got.krippendorff_alpha, nominal.krippendorff_alpha_nominal(items)),
        ):
            assert (value is None) == (expected is None)
            if expected is not None:
                assert value == pytest.approx(expected)
    # Overall: a,a,b / a,b,both_good / b,b,b / both_bad,a,both_bad: three of four have a
    # majority; Fleiss' kappa by hand: P-bar = (1/3 + 0 + 1 + 1/3) / 4 = 5/12, category shares
    # a 4/12, b 5/12, both_good 1/12, both_bad 2/12 -> P_e = 46/144, kappa = (60/144 - 46/144)
    # / (98/144) = 1/7.
    assert measured["overall"].majority_vote_rate == 0.75
    assert measured["overall"].fleiss_kappa == pytest.approx(1 / 7)


def test_an_item_still_in_work_leaves_the_agreement_until_complete(
    labelled: Pairs, make_answer: Callable[..., Answer]
) -> None:
    extra = make_pair(make_answer, 9)
    first = build(labelled.panel, [extra])[0]
    submit(first, dict.fromkeys(labelled.keys, A))
    assert comparison_agreement(labelled.panel)["overall"].items == len(labelled.pairs)
    partial = comparison_agreement(labelled.panel, complete_only=False)["overall"]
    assert partial.items == len(labelled.pairs) + 1 and partial.fleiss_kappa is None


def test_the_gold_pool_is_the_unanimous_complete_triples(
    labelled: Pairs, personas: Personas, make_answer: Callable[..., Answer]
) -> None:
    extra = make_pair(make_answer, 9)
    first = build(labelled.panel, [extra])[0]
    submit(first, dict.fromkeys(labelled.keys, A))  # one label of three: never gold yet
    expected = {
        (pair.pk, key): labels[0]
        for pair in labelled.pairs
        for key in labelled.keys
        if len(set(labels := labels_of(labelled, pair, key))) == 1
    }
    pool = pairwise_gold_pool(labelled.panel.pk)
    got = {}
    for g in pool:
        assert g.triple.comparison_criterion is not None
        got[(g.triple.pair_id, g.triple.comparison_criterion.key)] = g.label
    assert got == expected
    assert got[(labelled.pairs[2].pk, "overall")] is Label.B
    assert (labelled.pairs[0].pk, "overall") not in got
    assert pairwise_gold_pool(personas.panel_b.pk) == []
    assert {(g.triple.pk, g.label) for g in pairwise_gold_pool()} == {
        (g.triple.pk, g.label) for g in pool
    }


# ---------------------------------------------------------------------------------------------
# The export's pairs table.
# ---------------------------------------------------------------------------------------------


def expert_labels(data: Pairs, pair_id: int, key: str) -> dict[str, str]:
    """pseudonym -> label of one pair and criterion, as submitted."""
    names = {e.pk: e.pseudonym for e in data.experts}
    return {names[e]: v[key] for (p, e), v in data.given.items() if p == pair_id}


def test_parquet_export_writes_the_pairs_table(labelled: Pairs, tmp_path: Path) -> None:
    aggregation_run()  # the verdicts the table must agree with (the export computes its own)
    report = dataset_export(tmp_path / "ds", ExportOptions(fmt="parquet"))
    table = pq.read_table(tmp_path / "ds" / "pairs.parquet")
    assert pa.types.is_list(table.schema.field("overall_labels").type)
    rows = {r["pair_id"]: r for r in table.to_pylist()}
    assert list(rows) == sorted(p.pk for p in labelled.pairs)
    assert report["rows"]["pairs"] == len(labelled.pairs)
    assert report["pairwise"]["triples_total"] == len(labelled.pairs) * len(labelled.keys)
    first = rows[labelled.pairs[0].pk]
    pair = labelled.pairs[0]
    assert first["external_id"] == "pair-0"
    assert first["query"] == pair.instruction.text
    assert (first["query_category"], first["source"], first["panel"]) == (
        "Generation",
        "repa-test",
        labelled.panel.key,
    )
    assert (first["model_a"], first["model_b"]) == ("GigaChat 1", "YandexGPT 1")
    assert (first["response_a"], first["response_b"]) == (pair.answer_a.text, pair.answer_b.text)
    assert first["response_b_tokens"] == 5  # "Ответ Б.  Из  четырёх слов": whitespace tokens
    assert first["response_a_tokens"] == len(pair.answer_a.text.split())
    for row in rows.values():
        for key in labelled.keys:
            by_annotator = dict(zip(row["annotators"], row[f"{key}_labels"], strict=True))
            assert by_annotator == expert_labels(labelled, row["pair_id"], key)
            top = TripleAggregate.objects.get(
                triple__pair_id=row["pair_id"], triple__comparison_criterion__key=key
            ).label
            assert row[key] == (top or None)
            assert row[f"{key}_consensus"] is bool(top)
        names = {e.pk: e.pseudonym for e in labelled.experts}
        assert dict(zip(row["annotators"], row["comments"], strict=True)) == {
            names[e]: c for (p, e), c in labelled.comments.items() if p == row["pair_id"]
        }
    assert (first["overall"], first["overall_consensus"]) == (A, True)
    second = rows[labelled.pairs[1].pk]
    assert (second["overall"], second["overall_consensus"]) == (None, False)
    # The pointwise tables hold no pairwise triple.
    triples = pq.read_table(tmp_path / "ds" / "triples.parquet")
    assert triples.num_rows == 0
    assert pq.read_table(tmp_path / "ds" / "estimates.parquet").num_rows == 0


def test_the_parquet_zip_holds_the_pairs_file(labelled: Pairs, tmp_path: Path) -> None:
    dataset_export(tmp_path / "ds.zip", ExportOptions(fmt="parquet"))
    with zipfile.ZipFile(tmp_path / "ds.zip") as archive:
        assert "pairs.parquet" in archive.namelist()


def test_excel_export_writes_the_pairs_sheet_one_column_per_annotator(
    labelled: Pairs, tmp_path: Path
) -> None:
    out = tmp_path / "ds.xlsx"
    dataset_export(out, ExportOptions(fmt="xlsx"))
    book = openpyxl.load_workbook(out)
    sheet = book["pairs"]
    rows = list(sheet.iter_rows(values_only=True))
    header = list(rows[0])
    assert {"overall_1", "overall_2", "overall_3", "overall", "overall_consensus"} <= set(header)
    assert "overall_4" not in header and "overall_labels" not in header
    assert {"comment_1", "comment_2", "comment_3", "annotator_1"} <= set(header)
    records = {r[0]: dict(zip(header, r, strict=True)) for r in rows[1:]}
    assert set(records) == {p.pk for p in labelled.pairs}
    for pair_id, record in records.items():
        annotators = [record[f"annotator_{i}"] for i in (1, 2, 3)]
        for key in labelled.keys:
            cells = [record[f"{key}_{i}"] for i in (1, 2, 3)]
            assert dict(zip(annotators, cells, strict=True)) == expert_labels(
                labelled, pair_id, key
            )
        assert record["response_b_tokens"] == 5
    first = records[labelled.pairs[0].pk]
    assert (first["overall"], first["overall_consensus"]) == (A, True)
    second = records[labelled.pairs[1].pk]
    assert second["overall"] is None and second["overall_consensus"] is False
    # The formula-looking comment is a text cell with Excel's quote prefix, never a formula.
    cell = next(c for row in sheet.iter_rows() for c in row if c.value == FORMULA_COMMENT)
    assert cell.data_type == "s" and cell.quotePrefix
    assert all(c.data_type != "f" for row in sheet.iter_rows() for c in row)
    readme = dict(book["README"].iter_rows(values_only=True))
    assert "pairs.overall" not in readme and "pairs.<key>_consensus" in readme
    assert book["triples"].max_row == 1  # the header only: no pairwise triple there


def test_no_pairs_table_without_pairwise_work(
    personas: Personas, make_answer: Callable[..., Answer], tmp_path: Path
) -> None:
    experts = [personas.expert_a, make_expert("only_pw", personas.panel_a)]
    score_triples(make_answer(), experts, {"censor": [(0, GOOD), (0, GOOD)]})
    dataset_export(tmp_path / "ds", ExportOptions(fmt="parquet"))
    assert not (tmp_path / "ds" / "pairs.parquet").exists()
    assert np.int64(pq.read_table(tmp_path / "ds" / "triples.parquet").num_rows) == 1


def test_the_pointwise_agreement_leaves_pairwise_labels_out(labelled: Pairs) -> None:
    # A label has no score: counted as pointwise work, every pairwise estimate would "agree"
    # with its co-raters on a NULL score, under an empty criterion group.
    assert expert_agreement(labelled.panel) == {}


def test_no_pairs_table_while_every_pair_is_still_in_work(
    personas: Personas, make_answer: Callable[..., Answer], tmp_path: Path
) -> None:
    for i in range(2):
        make_expert(f"wip{i}", personas.panel_a)
    pair = make_pair(make_answer, 1)
    keys = [c.key for c in comparison_criteria()]
    for assignment in build(personas.panel_a, [pair])[:2]:
        submit(assignment, dict.fromkeys(keys, A))
    report = dataset_export(tmp_path / "ds", ExportOptions(fmt="parquet"))
    assert report["pairwise"]["triples_dropped_few_labels"] == len(keys)
    assert not (tmp_path / "ds" / "pairs.parquet").exists()
