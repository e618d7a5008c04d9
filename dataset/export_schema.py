"""The export's tables: their columns (described in the README sheet) and Arrow schemas.

The wire schema is what the single read of the estimates brings (ids only; texts are joined in
memory by id) and the query schema adds the aggregation's own columns; dataset.export streams
them, this module only says their shape.
"""

from __future__ import annotations

import pyarrow as pa
from django.core.exceptions import ImproperlyConfigured

from dataset import columns

# --------------------------------------------------------------------------------------------
# Columns of the two tables (also written to the README sheet).
# --------------------------------------------------------------------------------------------

ESTIMATE_COLUMNS: list[tuple[str, str]] = [
    ("estimate_id", "Estimate id (database)"),
    ("triple_id", "Triple id: joins with the triples table"),
    ("instruction_id", "Instruction external id (or database id)"),
    ("answer_id", "Answer external id (or database id)"),
    ("model", "Model that wrote the answer (name and version)"),
    ("task_path", "Task path in the POLLUX taxonomy (group / task / subtasks)"),
    ("complexity", "Instruction complexity: easy, medium, hard"),
    ("functional_style", "Functional style of the instruction"),
    ("criterion_key", "Criterion id in the POLLUX catalogue"),
    ("criterion_name", "Criterion name (Russian)"),
    ("criterion_group", "Criterion group: critical, general, subjective, domain, task"),
    ("scale", "Scale values of the rubric the score was given under"),
    ("rubric_version", "Version of that rubric"),
    ("expert", "Pseudonymous expert id"),
    ("panel", "Panel the expert scored for"),
    ("score", "Score (empty when NA)"),
    ("is_na", "The expert marked the criterion as not applicable"),
    ("rationale", "The expert's rationale"),
    ("submitted_at", "First submission time (UTC)"),
    ("updated_at", "Last change (UTC)"),
    ("time_spent_ms", "Time spent on the estimate, milliseconds"),
    ("review_status", "Supervisor's review: empty, returned (sent back to the expert), accepted"),
]

TRIPLE_COLUMNS: list[tuple[str, str]] = [
    ("triple_id", "Triple id (database)"),
    ("instruction_id", "Instruction external id (or database id)"),
    ("answer_id", "Answer external id (or database id)"),
    ("instruction", "POLLUX: the instruction text"),
    ("reference_answer", "POLLUX: the reference answer, if any"),
    ("answer", "POLLUX: the answer text"),
    ("model_id", "POLLUX: the model that wrote the answer"),
    ("task_type", "POLLUX: top-level task"),
    ("task_subtype", "POLLUX: first-level subtask"),
    ("task_subsubtype", "POLLUX: second-level subtask"),
    ("task_path", "Task path in the POLLUX taxonomy"),
    ("difficulty", "POLLUX: instruction complexity"),
    ("domain", "POLLUX: functional style"),
    ("criteria_name", "POLLUX: criterion name (Russian)"),
    ("criterion_key", "Criterion id in the POLLUX catalogue"),
    ("criterion_group", "Criterion group"),
    ("rubrics", "POLLUX: the rubric, one level per line"),
    ("scale", "Scale values"),
    ("panel", "Panel the triple is routed to"),
    ("criteria_score", "POLLUX: mean expert score (NA excluded; all-NA triples are left out)"),
    ("mean", "Mean score (same as criteria_score)"),
    ("mode", "Most frequent score; empty when tied"),
    ("confidence", "Verdict confidence: share of the most frequent score among non-NA scores"),
    ("n_estimates", "Number of estimates kept (NA included)"),
    ("n_scores", "Number of non-NA scores"),
    ("all_na", "Every estimate is NA (always false: such triples leave the dataset)"),
    ("adjudicated_score", "A supervisor's latest adjudicated score (empty: none, or NA)"),
    ("adjudicated_na", "The adjudication marks the criterion NA (empty: no adjudication)"),
    ("adjudication_reason", "The reason the supervisor gave for the adjudication"),
]

TEXT_DICT = pa.dictionary(pa.int32(), pa.string())
TIMESTAMP_UTC = pa.timestamp("us", tz="UTC")

ESTIMATE_SCHEMA = pa.schema(
    [
        ("estimate_id", pa.int64()),
        ("triple_id", pa.int64()),
        ("instruction_id", TEXT_DICT),
        ("answer_id", TEXT_DICT),
        ("model", TEXT_DICT),
        ("task_path", TEXT_DICT),
        ("complexity", TEXT_DICT),
        ("functional_style", TEXT_DICT),
        ("criterion_key", TEXT_DICT),
        ("criterion_name", TEXT_DICT),
        ("criterion_group", TEXT_DICT),
        ("scale", TEXT_DICT),
        ("rubric_version", pa.int32()),
        ("expert", TEXT_DICT),
        ("panel", TEXT_DICT),
        ("score", pa.int16()),
        ("is_na", pa.bool_()),
        ("rationale", pa.string()),
        ("submitted_at", TIMESTAMP_UTC),
        ("updated_at", TIMESTAMP_UTC),
        ("time_spent_ms", pa.int64()),
        ("review_status", TEXT_DICT),
    ]
)

TRIPLE_SCHEMA = pa.schema(
    [
        ("triple_id", pa.int64()),
        ("instruction_id", TEXT_DICT),
        ("answer_id", TEXT_DICT),
        ("instruction", TEXT_DICT),
        ("reference_answer", TEXT_DICT),
        ("answer", TEXT_DICT),
        ("model_id", TEXT_DICT),
        ("task_type", TEXT_DICT),
        ("task_subtype", TEXT_DICT),
        ("task_subsubtype", TEXT_DICT),
        ("task_path", TEXT_DICT),
        ("difficulty", TEXT_DICT),
        ("domain", TEXT_DICT),
        ("criteria_name", TEXT_DICT),
        ("criterion_key", TEXT_DICT),
        ("criterion_group", TEXT_DICT),
        ("rubrics", TEXT_DICT),
        ("scale", TEXT_DICT),
        ("panel", TEXT_DICT),
        ("criteria_score", pa.float64()),
        ("mean", pa.float64()),
        ("mode", pa.int16()),
        ("confidence", pa.float64()),
        ("n_estimates", pa.int32()),
        ("n_scores", pa.int32()),
        ("all_na", pa.bool_()),
        ("adjudicated_score", pa.int16()),
        ("adjudicated_na", pa.bool_()),
        ("adjudication_reason", pa.string()),
    ]
)

# Judge columns follow the base columns of `triples`: judge__<config>__<suffix>.
JUDGE_TYPES = {
    "score": pa.float64(),
    "parse_ok": pa.bool_(),
    "error": pa.string(),
    "feedback": pa.string(),
    "config_version": pa.int32(),
    "run": pa.int64(),
}


def judge_names_in_snapshot() -> list[str]:
    """Judge configurations with estimates (none when the judging app is not installed)."""
    judges = columns.provider("judge")
    return judges.names() if judges is not None else []


def judge_columns() -> columns.ColumnProvider:
    """Judging's registered columns; asked only with judge names, which come from it."""
    judges = columns.provider("judge")
    if judges is None:
        raise ImproperlyConfigured("judge columns asked for, but no provider is registered")
    return judges


def triple_schema(judge_names: list[str]) -> pa.Schema:
    if not judge_names:
        return TRIPLE_SCHEMA
    extra = [
        pa.field(col, JUDGE_TYPES[col.rsplit("__", 1)[1]])
        for col in judge_columns().column_names(judge_names)
    ]
    return pa.schema([*TRIPLE_SCHEMA, *extra])


# The columns of the estimates table as they come off the wire: ids only, texts are joined in
# memory by id. These are what the single pass parks on disk (`EstimateSpill`).
WIRE_SCHEMA = pa.schema(
    [
        ("estimate_id", pa.int64()),
        ("triple_id", pa.int64()),
        ("instruction_id", pa.int64()),
        ("answer_id", pa.int64()),
        ("model_id", pa.int64()),
        ("task_id", pa.int64()),
        ("complexity", pa.string()),
        ("style_id", pa.int64()),
        ("criterion_id", pa.int64()),
        ("group", pa.string()),
        ("rubric_id", pa.int64()),
        ("expert_id", pa.int64()),
        ("panel_id", pa.int64()),
        ("score", pa.int16()),
        ("is_na", pa.bool_()),
        ("rationale", pa.string()),
        ("submitted_us", pa.int64()),
        ("updated_us", pa.int64()),
        ("time_spent_ms", pa.int64()),
        ("review_status", pa.string()),
    ]
)
# The query's extra columns, for the aggregation only (`EstimateFrameBuilder`): the triple's own
# rubric and panel (the wire's rubric_id is the estimate's rubric, falling back to the triple's;
# its panel_id is the assignment's) and the database's rule-1 proof.
QUERY_SCHEMA = pa.schema(
    [
        *WIRE_SCHEMA,
        ("triple_rubric_id", pa.int64()),
        ("triple_panel_id", pa.int64()),
        ("rationale_sure", pa.bool_()),
    ]
)
