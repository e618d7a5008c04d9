"""The side-by-side (REPA pairwise) kind in the dataset: its verdicts and its export table.

- `read_label_frame`: every submitted label of a pairwise work triple (one row per label, in
  the pair's own orientation), read inside the aggregation's or the export's snapshot.
- `aggregate_labels`: per triple, the majority label (`protocol.pairwise.
  majority`: two or more of three), or out of the dataset: `too_few_estimates` while the
  triple has fewer labels than needed (its overlap, never fewer than the aggregation's
  `min_estimates`), `no_consensus` when no label has a majority (REPA §2.3: "if all annotators
  provide different labels, those instances are excluded").
- `pairs_schema` and `pairs_table`: the REPA-shaped `pairs` table, one
  row per pair: the query, both responses with their models, token lengths, and per criterion
  the annotators' labels, the majority and whether there is one; the annotators' comments.
- `PairwisePart`: all of it as the kind's part of the aggregation and the export (dataset.parts).

Frozen copies (answers listed in ReservedAnswer: exam and control material) are never work:
their labels are not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from dataset.models import EXCLUDED_FEW, EXCLUDED_NO_CONSENSUS
from material.models import AnswerPair
from panels.models import Expert, Panel
from protocol.pairwise import majority
from work.kinds import PAIRWISE
from work.models import Assignment, Estimate, EstimateStatus, TripleKind

if TYPE_CHECKING:
    from dataset.aggregation import AggregationSettings
    from dataset.parts import TableSink

# The annotator columns of the flat (XLSX) table: REPA's three, more when a panel had more.
REPA_ANNOTATORS = 3

LABEL_COLUMNS = (
    "estimate_id",
    "triple_id",
    "pair_id",
    "criterion_id",
    "criterion_key",
    "position",
    "panel_id",
    "required_overlap",
    "assignment_id",
    "expert_id",
    "slot",
    "label",
)


def read_label_frame() -> pd.DataFrame:
    """Every submitted label of a pairwise work triple, one row per label (LABEL_COLUMNS).

    Small beside the pointwise read (REPA: ~1,000 pairs x 11 criteria x 3 labels), so a plain
    query; call inside `aggregation.snapshot()` when it must agree with other reads.
    """
    rows = (
        Estimate.objects.filter(
            status=EstimateStatus.SUBMITTED,
            triple__kind=TripleKind.PAIRWISE,
            triple__answer__reserved__isnull=True,
        )
        .exclude(label="")
        .order_by("triple_id", "slot")
        .values_list(
            "pk",
            "triple_id",
            "triple__pair_id",
            "triple__comparison_criterion_id",
            "triple__comparison_criterion__key",
            "triple__comparison_criterion__position",
            "triple__panel_id",
            "triple__required_overlap",
            "assignment_id",
            "expert_id",
            "slot",
            "label",
        )
    )
    frame = pd.DataFrame.from_records(list(rows), columns=list(LABEL_COLUMNS))
    ints = [c for c in LABEL_COLUMNS if c not in ("criterion_key", "label")]
    return frame.astype(dict.fromkeys(ints, np.int64))


@dataclass
class LabelAggregation:
    """One row per pairwise triple with a label (`triples`) and the counts (`report`)."""

    triples: pd.DataFrame
    report: dict[str, Any] = field(default_factory=dict)


AGGREGATE_COLUMNS = (
    "triple_id",
    "pair_id",
    "criterion_key",
    "panel_id",
    "n_estimates",
    "label",
    "excluded_reason",
)


def aggregate_labels(
    labels: pd.DataFrame, rules: AggregationSettings | None = None
) -> LabelAggregation:
    """The pairwise kind's verdicts: a majority label per triple, or why there is none.

    `labels` has LABEL_COLUMNS (at least triple_id, pair_id, criterion_key, panel_id,
    required_overlap, label). A triple needs as many labels as its overlap (REPA: 3) and at
    least `rules.min_estimates`: before that a majority could still change (a, b of three),
    so the triple is `too_few_estimates`, as a pointwise triple with too few estimates is.
    """
    min_estimates = rules.min_estimates if rules is not None else 2
    out: dict[str, list[Any]] = {name: [] for name in AGGREGATE_COLUMNS}
    if len(labels):
        grouped = labels.groupby("triple_id", sort=True)
        for triple_id, group in grouped:
            given = group["label"].tolist()
            first = group.iloc[0]
            needed = max(int(first["required_overlap"]), min_estimates)
            label, reason = "", ""
            if len(given) < needed:
                reason = EXCLUDED_FEW
            elif (top := majority(given)) is None:
                reason = EXCLUDED_NO_CONSENSUS
            else:
                label = top.value
            out["triple_id"].append(int(triple_id))
            out["pair_id"].append(int(first["pair_id"]))
            out["criterion_key"].append(str(first["criterion_key"]))
            out["panel_id"].append(int(first["panel_id"]))
            out["n_estimates"].append(len(given))
            out["label"].append(label)
            out["excluded_reason"].append(reason)
    triples = pd.DataFrame(out).astype(
        {"triple_id": np.int64, "pair_id": np.int64, "panel_id": np.int64, "n_estimates": np.int64}
    )
    reasons = triples["excluded_reason"]
    report = {
        "labels_submitted": len(labels),
        "triples_total": len(triples),
        "triples_dropped_few_labels": int((reasons == EXCLUDED_FEW).sum()),
        "triples_no_consensus": int((reasons == EXCLUDED_NO_CONSENSUS).sum()),
        "triples_in_dataset": int((reasons == "").sum()),
    }
    return LabelAggregation(triples=triples, report=report)


def aggregate_rows(triples: pd.DataFrame, job_id: int | None) -> pa.Table:
    """`aggregate_labels`' triples as TripleAggregate rows (the columns `aggregation.
    aggregates_write` copies): a label and no numbers, since mean, mode and confidence are a
    scale's, not the labels'."""
    m = len(triples)
    return pa.table(
        {
            "triple_id": pa.array(triples["triple_id"].to_numpy(dtype=np.int64)),
            "n_estimates": pa.array(triples["n_estimates"].to_numpy(dtype=np.int64)),
            "mean": pa.nulls(m, pa.float64()),
            "mode": pa.nulls(m, pa.int64()),
            "confidence": pa.nulls(m, pa.float64()),
            "all_na": pa.array(np.zeros(m, dtype=bool)),
            "label": pa.array(triples["label"].astype(str).tolist(), pa.string()),
            "excluded_reason": pa.array(
                triples["excluded_reason"].astype(str).tolist(), pa.string()
            ),
            "job_id": pa.array([job_id] * m, pa.int64()),
        }
    )


# --------------------------------------------------------------------------------------------
# The `pairs` table of the export.
# --------------------------------------------------------------------------------------------

# (column, description) for the README; `<key>` stands for each criterion key.
PAIR_COLUMNS: list[tuple[str, str]] = [
    ("pair_id", "Pair id (database)"),
    ("external_id", "REPA: the pair's external id (or database id)"),
    ("query", "REPA: the query (instruction) text"),
    ("query_category", "REPA: the query category"),
    ("source", "REPA: where the pair came from"),
    ("panel", "Panel the pair is routed to"),
    ("model_a", "Model of response A (name and version)"),
    ("model_b", "Model of response B (name and version)"),
    ("response_a", "Response A: labels are in this orientation (A is this response)"),
    ("response_b", "Response B"),
    ("query_tokens", "Length of the query in whitespace-separated tokens (str.split)"),
    ("response_a_tokens", "Length of response A in whitespace-separated tokens (str.split)"),
    ("response_b_tokens", "Length of response B in whitespace-separated tokens (str.split)"),
    (
        "annotators",
        "Pseudonymous expert ids, in the order of the label lists "
        "(Excel: annotator_1, annotator_2, ...)",
    ),
    (
        "<key>_labels",
        "Per criterion: each annotator's label a, b, both_good, both_bad, in the annotators' "
        "order, empty where an annotator gave none (Excel: <key>_1, <key>_2, ...)",
    ),
    ("<key>", "Per criterion: the majority label (two or more of three); empty without one"),
    (
        "<key>_consensus",
        "Per criterion: the majority label exists (false: no consensus, or too few labels)",
    ),
    ("comments", "The annotators' free comments, same order (Excel: comment_1, comment_2, ...)"),
]
PAIRS_NOTE = (
    "One row per pair with at least one criterion fully labelled (as many labels as its "
    "overlap). Labels are in the pair's own orientation whatever side each expert saw."
)


def has_pairs(aggregation: LabelAggregation | None) -> bool:
    """Whether the export has a `pairs` table: a pair with a fully labelled criterion."""
    if aggregation is None or not len(aggregation.triples):
        return False
    return bool((aggregation.triples["excluded_reason"] != EXCLUDED_FEW).any())


def pairs_schema(criterion_keys: Sequence[str], annotator_slots: int | None = None) -> pa.Schema:
    """The pairs table's schema: list columns (Parquet) when `annotator_slots` is None, else
    one column per annotator slot 1..annotator_slots (Excel, which has no list cells)."""

    def per_annotator(name: str, flat_name: str) -> list[pa.Field]:
        if annotator_slots is None:
            return [pa.field(name, pa.list_(pa.string()))]
        return [pa.field(f"{flat_name}_{i}", pa.string()) for i in range(1, annotator_slots + 1)]

    fields = [
        pa.field("pair_id", pa.int64()),
        *(
            pa.field(name, pa.string())
            for name in (
                "external_id",
                "query",
                "query_category",
                "source",
                "panel",
                "model_a",
                "model_b",
                "response_a",
                "response_b",
            )
        ),
        pa.field("query_tokens", pa.int32()),
        pa.field("response_a_tokens", pa.int32()),
        pa.field("response_b_tokens", pa.int32()),
        *per_annotator("annotators", "annotator"),
    ]
    for key in criterion_keys:
        fields += per_annotator(f"{key}_labels", key)
        fields += [pa.field(key, pa.string()), pa.field(f"{key}_consensus", pa.bool_())]
    fields += per_annotator("comments", "comment")
    names = [f.name for f in fields]
    if len(set(names)) != len(names):
        # A criterion key that spells another column (e.g. "query", "annotator"): refuse it
        # rather than write a table whose columns overwrite each other.
        clash = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"criterion keys clash with the pairs table's columns: {clash}")
    return pa.schema(fields)


def criterion_keys(labels: pd.DataFrame) -> list[str]:
    """The criterion keys of the labels, in the criteria set's order (position, then key)."""
    if not len(labels):
        return []
    keys = (
        labels[["position", "criterion_key"]]
        .drop_duplicates()
        .sort_values(["position", "criterion_key"])
    )
    return list(dict.fromkeys(keys["criterion_key"].tolist()))


def tokens(text: str) -> int:
    """A text's length in whitespace-separated tokens (REPA reports lengths in tokens; no
    tokenizer is pinned, so the count is `len(text.split())`, documented in the README)."""
    return len(text.split())


@dataclass
class _PairRow:
    annotators: list[int] = field(default_factory=list)  # assignment ids, in order
    labels: dict[tuple[int, str], str] = field(default_factory=dict)  # (assignment, key)
    aggregate: dict[str, str | None] = field(default_factory=dict)  # key -> label / None


def pairs_rows(labels: pd.DataFrame, aggregates: pd.DataFrame) -> dict[int, _PairRow]:
    """Per pair with a fully labelled criterion: its annotators (by assignment, in the order
    they took the pair) with their labels, and each criterion's majority (None without one)."""
    complete = aggregates[aggregates["excluded_reason"] != EXCLUDED_FEW]
    kept = set(complete["pair_id"].tolist())
    rows: dict[int, _PairRow] = {}
    for pair_id, assignment_id, key, label in labels.sort_values(["pair_id", "assignment_id"])[
        ["pair_id", "assignment_id", "criterion_key", "label"]
    ].itertuples(index=False):
        if pair_id not in kept:
            continue
        row = rows.setdefault(int(pair_id), _PairRow())
        if not row.annotators or row.annotators[-1] != assignment_id:
            row.annotators.append(int(assignment_id))
        row.labels[(int(assignment_id), str(key))] = str(label)
    for pair_id, key, label in aggregates[["pair_id", "criterion_key", "label"]].itertuples(
        index=False
    ):
        if int(pair_id) in rows:
            rows[int(pair_id)].aggregate[str(key)] = label or None
    return rows


def pairs_table(
    labels: pd.DataFrame,
    aggregates: pd.DataFrame,
    keys: Sequence[str],
    annotator_slots: int | None = None,
    schema: pa.Schema | None = None,
) -> pa.Table:
    """The pairs table (`pairs_schema(keys, annotator_slots)`, or the `schema` given, which
    must name the same columns) from the snapshot's labels and their aggregates; the pairs'
    texts and names are read here (call inside the same snapshot)."""
    schema = schema if schema is not None else pairs_schema(keys, annotator_slots)
    rows = pairs_rows(labels, aggregates)
    ids = sorted(rows)
    pairs = {
        p.pk: p
        for p in AnswerPair.objects.filter(pk__in=ids).select_related(
            "instruction", "answer_a__model", "answer_b__model"
        )
    }
    assignments = {
        pk: (expert_id, panel_id, comment)
        for pk, expert_id, panel_id, comment in Assignment.objects.filter(
            pk__in={a for row in rows.values() for a in row.annotators}
        ).values_list("pk", "expert_id", "panel_id", "comment")
    }
    experts = dict(
        Expert.objects.filter(pk__in={v[0] for v in assignments.values()}).values_list(
            "pk", "pseudonym"
        )
    )
    panels = dict(Panel.objects.values_list("pk", "key"))
    columns: dict[str, list[Any]] = {name: [] for name in schema.names}

    def put(name: str, flat_name: str, values: list[str | None]) -> None:
        # A list cell (Parquet), or one cell per annotator slot (Excel); a pair with more
        # annotators than slots cannot happen: the slots are at least the most annotators.
        if annotator_slots is None:
            columns[name].append(values)
            return
        for i in range(annotator_slots):
            columns[f"{flat_name}_{i + 1}"].append(values[i] if i < len(values) else None)

    for pair_id in ids:
        pair, row = pairs[pair_id], rows[pair_id]
        a, b, query = pair.answer_a, pair.answer_b, pair.instruction.text
        taken = [assignments[s] for s in row.annotators]
        columns["pair_id"].append(pair_id)
        columns["external_id"].append(pair.external_id or str(pair_id))
        columns["query"].append(query)
        columns["query_category"].append(pair.category)
        columns["source"].append(pair.source)
        columns["panel"].append(panels.get(taken[0][1]) if taken else None)
        columns["model_a"].append(str(a.model))
        columns["model_b"].append(str(b.model))
        columns["response_a"].append(a.text)
        columns["response_b"].append(b.text)
        columns["query_tokens"].append(tokens(query))
        columns["response_a_tokens"].append(tokens(a.text))
        columns["response_b_tokens"].append(tokens(b.text))
        put("annotators", "annotator", [experts.get(t[0]) for t in taken])
        for key in keys:
            put(f"{key}_labels", key, [row.labels.get((s, key)) for s in row.annotators])
            columns[key].append(row.aggregate.get(key))
            # No triple of this criterion for the pair (another criteria set): unknown, null.
            columns[f"{key}_consensus"].append(
                row.aggregate[key] is not None if key in row.aggregate else None
            )
        put("comments", "comment", [t[2] for t in taken])
    return pa.table(
        {name: pa.array(columns[name], schema.field(name).type) for name in schema.names},
        schema=schema,
    )


def annotator_slots_needed(labels: pd.DataFrame) -> int:
    """Excel's annotator columns: REPA's three, or the most annotators any pair had."""
    if not len(labels):
        return REPA_ANNOTATORS
    most = int(labels.groupby("pair_id")["assignment_id"].nunique().max())
    return max(REPA_ANNOTATORS, most)


# The kind's part of the aggregation and the export (dataset.parts).


@dataclass(frozen=True)
class PairwiseResult:
    labels: Any  # pd.DataFrame of dataset.pairwise.LABEL_COLUMNS
    aggregation: LabelAggregation


@dataclass(frozen=True)
class PairwisePart:
    """The side-by-side kind (REPA): a majority label per pairwise triple, and the `pairs`
    table, one row per pair with a fully labelled criterion."""

    key: str = PAIRWISE

    def compute(self, rules: AggregationSettings) -> PairwiseResult:
        labels = read_label_frame()
        return PairwiseResult(labels=labels, aggregation=aggregate_labels(labels, rules))

    def verdict_rows(self, result: PairwiseResult, job_id: int | None) -> pa.Table | None:
        triples = result.aggregation.triples
        return aggregate_rows(triples, job_id) if len(triples) else None

    def report(self, result: PairwiseResult) -> dict[str, Any]:
        counts = result.aggregation.report
        return {"pairwise": dict(counts)} if counts.get("triples_total") else {}

    def notes(self, result: PairwiseResult) -> list[tuple[str, str]]:
        if not has_pairs(result.aggregation):
            return []
        return [("Sheet pairs", PAIRS_NOTE), *((f"pairs.{c}", d) for c, d in PAIR_COLUMNS)]

    def write(self, sink: TableSink, result: PairwiseResult, *, fmt: str, chunk_rows: int) -> None:
        # Excel has no list cells: one column per annotator slot.
        if not has_pairs(result.aggregation):
            return
        labels = result.labels
        keys = criterion_keys(labels)
        slots = annotator_slots_needed(labels) if fmt == "xlsx" else None
        schema = pairs_schema(keys, slots)
        table = pairs_table(labels, result.aggregation.triples, keys, slots, schema=schema)
        sink.write_table("pairs", schema, iter(table.to_batches(max_chunksize=chunk_rows)))
