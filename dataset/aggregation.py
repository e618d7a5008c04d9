"""Aggregation of expert estimates into the dataset (the POLLUX protocol).

Two layers:

- pure functions on NumPy arrays / pandas frames (`aggregate_estimates` here; the agreement
  report and result tables in dataset.agreement), tested on hand-made cases;
- the service `aggregation_run(*, job=...)` that streams submitted estimates out of the database
  (`read_estimate_frame`), applies the rules and rewrites TripleAggregate in bulk.

Rules (each a setting, defaults follow POLLUX):

1. estimates whose rationale breaks the rationale rules are dropped (kept in the database,
   counted in the report);
2. when an answer has at least one critical-violation vote (protocol.critical), its
   non-critical triples leave the dataset;
3. triples left with fewer than `min_estimates` estimates leave the dataset;
4. triples whose estimates are all NA leave the dataset (`no_numeric_score`): they have no
   `criteria_score`, and POLLUX's own code reads it with `float(criteria_score)`; not a setting;
5. per triple: mean (NA excluded), mode and verdict confidence (protocol.verdict: this module
   is its numpy copy, tested against it on tests/data/verdict_cases.json), number of estimates.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from django.conf import settings
from django.db import connection, transaction

from dataset.adjudication import with_overrides
from dataset.agreement import agreement_report, result_tables
from dataset.models import EXCLUDED_CRITICAL, EXCLUDED_FEW, EXCLUDED_NO_SCORE, TripleAggregate
from dataset.parts import parts as kind_parts
from dataset.rationale_rule import SCRIPT_RE2, rationale_ok_vectorised
from jobs.services import job_progress
from lib.arrow import stream_query
from material.models import Answer, Instruction, LanguageModel
from panels.models import Panel
from protocol.critical import violation_mask
from protocol.rationale import RationaleRule
from taxonomy.models import Criterion, CriterionGroup, Rubric, Task, best_of
from taxonomy.services import task_tops
from work.models import Estimate, EstimateStatus, Triple, TripleKind

GROUPS = [value for value, _label in CriterionGroup.choices]
ProgressFn = Callable[[int, int, str], None]


@dataclass(frozen=True)
class AggregationSettings:
    """The protocol's rules as settings (defaults: the POLLUX paper)."""

    drop_invalid_rationale: bool = True
    drop_after_critical: bool = True
    min_estimates: int = 2

    @classmethod
    def from_params(cls, params: dict[str, Any] | None) -> AggregationSettings:
        params = params or {}
        return cls(
            drop_invalid_rationale=bool(params.get("drop_invalid_rationale", True)),
            drop_after_critical=bool(params.get("drop_after_critical", True)),
            min_estimates=int(params.get("min_estimates", 2)),
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# Rules 2-4 on a frame of estimates.
# --------------------------------------------------------------------------------------------

ESTIMATE_COLUMNS = (
    "estimate_id",
    "triple_id",
    "answer_id",
    "group",
    "score",
    "is_na",
    "rationale_ok",
    "top_score",
)


@dataclass
class AggregationResult:
    """Per-triple aggregates (every triple with a submitted estimate) and the estimates kept."""

    triples: pd.DataFrame
    kept_estimate_ids: np.ndarray
    report: dict[str, Any] = field(default_factory=dict)
    # Which rows of the estimates given are kept (their positions: no lookup by id needed).
    kept_mask: np.ndarray | None = None

    @property
    def included(self) -> pd.DataFrame:
        return self.triples[self.triples["excluded_reason"] == ""]


def aggregate_estimates(
    estimates: pd.DataFrame, rules: AggregationSettings | None = None
) -> AggregationResult:
    """Apply rules 1-4 to submitted estimates.

    `estimates` needs ESTIMATE_COLUMNS (score may be NaN where is_na). Returns one row per triple
    with n_estimates, mean, mode, confidence, all_na, n_scores (non-NA count), excluded_reason,
    plus any extra per-triple column of the input (first value per triple).
    """
    rules = rules or AggregationSettings()
    est = estimates
    report: dict[str, Any] = {
        "settings": rules.as_dict(),
        "estimates_submitted": len(est),
    }
    valid = np.ones(len(est), dtype=bool)
    if rules.drop_invalid_rationale:
        valid = est["rationale_ok"].to_numpy(dtype=bool)
    report["estimates_invalid_rationale"] = int((~est["rationale_ok"].to_numpy(dtype=bool)).sum())
    report["estimates_dropped_rationale"] = int((~valid).sum())
    # The rules read the valid rows' columns by position: no copy of the frame (~250 MB at 10x
    # POLLUX). `rows` are the valid rows' positions in `estimates`.
    rows = np.flatnonzero(valid)
    every = len(rows) == len(est)

    def column(name: str, dtype: Any = None) -> np.ndarray:
        values = est[name].to_numpy(dtype=dtype)
        return values if every else values[rows]

    is_na = column("is_na", bool)
    score = column("score", float)
    top = column("top_score", float)
    triple_ids = column("triple_id", np.int64)

    # One row per triple that still has an estimate after rule 1.
    uniq, first, inverse = np.unique(triple_ids, return_index=True, return_inverse=True)
    n_triples = len(uniq)
    extra = [c for c in est.columns if c not in ESTIMATE_COLUMNS or c in ("answer_id", "group")]
    triples = est.iloc[rows[first]][extra].reset_index(drop=True)
    triples.insert(0, "triple_id", uniq)

    n_est = np.bincount(inverse, minlength=n_triples)
    scored = ~is_na & ~np.isnan(score)
    n_scores = np.bincount(inverse[scored], minlength=n_triples)
    sums = np.bincount(inverse[scored], weights=score[scored], minlength=n_triples)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n_scores > 0, sums / np.maximum(n_scores, 1), np.nan)

    # Mode and confidence: count each (triple, score) pair, then the biggest count per triple.
    mode = np.full(n_triples, np.nan)
    confidence = np.full(n_triples, np.nan)
    if scored.any():
        t_idx = inverse[scored]
        s_val = score[scored].astype(np.int64)
        offset = s_val.min()
        width = int(s_val.max() - offset + 1)
        pair = t_idx * width + (s_val - offset)
        pairs, counts = np.unique(pair, return_counts=True)
        pair_triple = pairs // width
        pair_score = pairs % width + offset
        best = np.zeros(n_triples, dtype=np.int64)
        np.maximum.at(best, pair_triple, counts)
        at_best = counts == best[pair_triple]
        n_best = np.bincount(pair_triple[at_best], minlength=n_triples)
        unique_best = at_best & (n_best[pair_triple] == 1)
        mode[pair_triple[unique_best]] = pair_score[unique_best]
        has = n_scores > 0
        confidence[has] = best[has] / n_scores[has]

    triples["n_estimates"] = n_est
    triples["n_scores"] = n_scores
    triples["mean"] = mean
    triples["mode"] = mode
    triples["confidence"] = confidence
    triples["all_na"] = n_scores == 0
    reason = np.full(n_triples, "", dtype=object)

    # Rule 2: a critical-violation vote on an answer drops its non-critical triples.
    critical_answers: np.ndarray = np.array([], dtype=np.int64)
    if rules.drop_after_critical:
        critical = (est["group"] == CriterionGroup.CRITICAL.value).to_numpy(dtype=bool)
        crit_vote = violation_mask(critical if every else critical[rows], is_na, score, top)
        critical_answers = np.unique(column("answer_id")[crit_vote])
        hit = np.isin(triples["answer_id"].to_numpy(), critical_answers) & (
            triples["group"].to_numpy() != CriterionGroup.CRITICAL.value
        )
        reason[hit] = EXCLUDED_CRITICAL
    # Rule 3: too few estimates (NA estimates count: an NA is an expert's verdict too).
    few = (n_est < rules.min_estimates) & (reason == "")
    reason[few] = EXCLUDED_FEW
    # Rule 4: every estimate NA, so no mean: the triple has no criteria_score to export.
    reason[(n_scores == 0) & (reason == "")] = EXCLUDED_NO_SCORE
    triples["excluded_reason"] = reason

    included = reason == ""
    kept_rows = rows[included[inverse]]
    kept_estimates = est["estimate_id"].to_numpy(dtype=np.int64)[kept_rows]
    kept_mask = np.zeros(len(est), dtype=bool)
    kept_mask[kept_rows] = True
    report.update(
        {
            "answers_with_critical_violation": len(critical_answers),
            "triples_total": n_triples,
            "triples_dropped_critical": int((reason == EXCLUDED_CRITICAL).sum()),
            "triples_dropped_few_estimates": int((reason == EXCLUDED_FEW).sum()),
            "triples_dropped_no_score": int((reason == EXCLUDED_NO_SCORE).sum()),
            "triples_in_dataset": int(included.sum()),
            "estimates_in_dataset": len(kept_estimates),
        }
    )
    return AggregationResult(
        triples=triples,
        kept_estimate_ids=np.sort(kept_estimates),
        report=report,
        kept_mask=kept_mask,
    )


# --------------------------------------------------------------------------------------------
# Reading estimates out of the database (streamed, chunked; COPY on PostgreSQL).
# --------------------------------------------------------------------------------------------


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


class snapshot:
    """One consistent read of the database: REPEATABLE READ, read only, on PostgreSQL.

    Every query inside sees the same snapshot, so a score submitted meanwhile is either wholly in
    or wholly out. Inside an already open transaction (tests), that transaction is the snapshot.
    """

    def __enter__(self) -> snapshot:
        self._atomic = transaction.atomic()
        nested = connection.in_atomic_block
        self._atomic.__enter__()
        if is_postgres() and not nested:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        return self

    def __exit__(self, *exc: Any) -> None:
        self._atomic.__exit__(*exc)


def _tables() -> dict[str, str]:
    return {
        "estimate": Estimate._meta.db_table,
        "triple": Triple._meta.db_table,
        "answer": Answer._meta.db_table,
        "instruction": Instruction._meta.db_table,
    }


NARROW_SCHEMA = pa.schema(
    [
        ("estimate_id", pa.int64()),
        ("triple_id", pa.int64()),
        ("answer_id", pa.int64()),
        ("criterion_id", pa.int64()),
        ("rubric_id", pa.int64()),
        ("panel_id", pa.int64()),
        ("group", pa.string()),
        ("model_id", pa.int64()),
        ("instruction_id", pa.int64()),
        ("task_id", pa.int64()),
        ("score", pa.float64()),
        ("is_na", pa.bool_()),
        ("rationale_sure", pa.bool_()),
        ("rationale", pa.string()),
        ("estimate_rubric_id", pa.int64()),
    ]
)

# Letters and digits that are words for rationale.WORD_RE whatever the locale: ASCII and the
# Russian alphabet (PostgreSQL bracket ranges are code-point ranges).
_SQL_WORD_CHAR = "[0-9A-Za-zА-яЁё]"
# Letters of the script in every reading: a subset of rationale.SCRIPT_RANGES.
_SQL_SCRIPT = {"cyrillic": "[А-яЁё]", "latin": "[A-Za-z]"}
# Characters that are never letters (str.isalpha() is false): removing them from the text
# leaves at least every letter, so its length bounds the number of letters from above.
_SQL_NOT_LETTER = "[[:space:][:punct:][:digit:]«»—–…№„“”‘’]"


# Whether the reads ask PostgreSQL to prove rule 1 (`rationale_sure_sql`) so that proven texts
# stay in the database. Off: measured at POLLUX scale (2026-11-26, docs/benchmarks.md, "Ten times
# POLLUX"), the proof's letter counting (regexp_replace) is ~90 % of the read (10.7 s vs 1.1 s
# without it, bench/rationale_sql.py), while the exact rule in Arrow over every text, counting
# letters by runs (`_count_chars`), costs ~5 s of client CPU: the aggregation went from 14.7 s
# to 8.0 s with equal results. The proof stays, sound and tested, for a database far from its
# clients, where sending 130 MB of text would cost more than PostgreSQL's regex work.
RATIONALE_PROOF_IN_SQL = False


def rationale_sure_sql(
    column: str, *, script: str | None, min_words: int, script_share: float = 0.5
) -> str | None:
    """A PostgreSQL condition that proves a rationale passes rule 1, or None.

    Sound, not complete: "word character, spaces, word character" proves two words, with
    characters that are words in every reading (the Python rule counts more letters as words,
    never fewer; removing invisible characters joins no words across a space). The script
    share is proven with a lower bound of the script's letters (a subset of its alphabet)
    against an upper bound of all letters (the text without characters that are never
    letters). Rows it proves need no text on the wire (~98 % at POLLUX scale, ~130 MB); the
    rest get the exact rule (Arrow).
    """
    if min_words > 2:
        return None
    cond = f"{column} ~ '{_SQL_WORD_CHAR} +{_SQL_WORD_CHAR}'"
    if script and script in SCRIPT_RE2:
        if script not in _SQL_SCRIPT:
            return None
        share = float(script_share)
        if not 0.0 <= share <= 1.0:
            return None
        ours = f"length(regexp_replace({column}, '[^{_SQL_SCRIPT[script][1:-1]}]', '', 'g'))"
        letters = f"length(regexp_replace({column}, '{_SQL_NOT_LETTER}', '', 'g'))"
        cond += f" AND {column} ~ '{_SQL_SCRIPT[script]}' AND {ours} >= {share!r} * {letters}"
    return cond


def narrow_estimates_sql(sure: str | None = None, answers_sql: str | None = None) -> str:
    """Submitted estimates of pointwise triples with their triple's keys (a pairwise triple has
    no criterion, rubric or score: dataset.pairwise reads its labels); `sure` (SQL) marks
    rationales proven valid, whose text is then not sent; `answers_sql` (a trusted SELECT of
    answer ids) narrows the read to those answers (whole answers: rule 2 looks at every
    critical vote of an answer)."""
    t = _tables()
    sure = f"({sure})" if sure else "FALSE"
    only = f" AND t.answer_id IN ({answers_sql})" if answers_sql else ""
    return (
        "SELECT e.id, e.triple_id, t.answer_id, t.criterion_id, t.rubric_id, t.panel_id, "  # noqa: S608 (trusted table names)
        't."group", a.model_id, a.instruction_id, i.task_id, e.score, '
        f"CASE WHEN e.is_na THEN 1 ELSE 0 END, CASE WHEN {sure} THEN 1 ELSE 0 END, "
        f"CASE WHEN {sure} THEN NULL ELSE e.rationale END, e.rubric_id "
        f"FROM {t['estimate']} e "
        f"JOIN {t['triple']} t ON t.id = e.triple_id "
        f"JOIN {t['answer']} a ON a.id = t.answer_id "
        f"JOIN {t['instruction']} i ON i.id = a.instruction_id "
        f"WHERE e.status = '{EstimateStatus.SUBMITTED.value}' "
        f"AND t.kind = '{TripleKind.POINTWISE.value}'{only}"
    )


@dataclass
class Lookups:
    """Small reference tables read once (inside the snapshot) and used by id, in memory."""

    rubric_top: dict[int, int]
    rubric_size: dict[int, int]
    task_top: dict[int, int]
    # The score a one-word rationale may justify (Rubric.best_value).
    rubric_best: dict[int, int] = field(default_factory=dict)

    @classmethod
    def load(cls) -> Lookups:
        rubric_top: dict[int, int] = {}
        rubric_size: dict[int, int] = {}
        rubric_best: dict[int, int] = {}
        for pk, levels, best_end in Rubric.objects.values_list("pk", "levels", "best_end"):
            values = [int(level["value"]) for level in levels] or [0]
            rubric_top[pk] = max(values)
            rubric_size[pk] = len(values)
            rubric_best[pk] = best_of(values, best_end)
        return cls(
            rubric_top=rubric_top,
            rubric_size=rubric_size,
            task_top=task_tops(),
            rubric_best=rubric_best,
        )


def _map(values: np.ndarray, table: dict[int, int], default: int = 0) -> np.ndarray:
    keys = np.fromiter(table.keys(), dtype=np.int64, count=len(table))
    vals = np.fromiter(table.values(), dtype=np.int64, count=len(table))
    order = np.argsort(keys)
    keys, vals = keys[order], vals[order]
    pos = np.clip(np.searchsorted(keys, values), 0, max(len(keys) - 1, 0))
    found = (keys[pos] == values) if len(keys) else np.zeros(len(values), dtype=bool)
    return np.where(found, vals[pos] if len(keys) else default, default)


def read_estimate_frame(
    lookups: Lookups | None = None,
    *,
    progress: ProgressFn | None = None,
    chunk_rows: int = 100_000,
    answers_sql: str | None = None,
) -> pd.DataFrame:
    """Every submitted estimate as a compact frame (ids, score, NA, rule-1 verdict, scale).

    Streams in chunks and keeps no rationale text: the rule is applied chunk by chunk.
    Call inside `snapshot()` when the result must agree with other reads. `answers_sql`
    narrows it to some answers (see `narrow_estimates_sql`).
    """
    reader = EstimateFrameBuilder(lookups)
    for batch in stream_query(
        narrow_estimates_sql(reader.sure_sql("e.rationale"), answers_sql),
        NARROW_SCHEMA,
        chunk_rows=chunk_rows,
    ):
        reader.add({name: batch.column(name) for name in batch.schema.names})
        if progress:
            progress(reader.rows, 0, "read")
    return reader.frame()


# How often the read hands freed memory back (a garbage collection each time: a few ms).
RELEASE_EVERY_CHUNKS = 8


class EstimateFrameBuilder:
    """Builds the compact estimates frame of `read_estimate_frame` chunk by chunk.

    Each chunk is a mapping of NARROW_SCHEMA column names to Arrow arrays; the rationale text is
    needed only where `rationale_sure` is false (the export's single pass sends it everywhere).
    """

    def __init__(self, lookups: Lookups | None = None) -> None:
        self.lookups = lookups or Lookups.load()
        self.rule = RationaleRule.current()
        self.frames: list[pd.DataFrame] = []
        self.rows = 0
        self.chunks = 0

    def sure_sql(self, column: str) -> str | None:
        """The SQL condition proving a rationale valid (None: every text is checked here)."""
        if not (RATIONALE_PROOF_IN_SQL and is_postgres()):
            return None
        return rationale_sure_sql(
            column,
            script=self.rule.script,
            min_words=self.rule.min_words,
            script_share=self.rule.script_share,
        )

    def add(self, cols: dict[str, pa.Array]) -> None:
        lookups = self.lookups
        rubric = _np(cols["estimate_rubric_id"], fill=-1)
        rubric = np.where(rubric < 0, _np(cols["rubric_id"], fill=0), rubric)
        score = _np(cols["score"], fill=np.nan).astype(float)
        is_na = _np(cols["is_na"], fill=False).astype(bool)
        top = _map(rubric, lookups.rubric_top)
        best = _map(rubric, lookups.rubric_best)
        ok = _np(cols["rationale_sure"], fill=False).astype(bool)
        check = np.flatnonzero(~ok)
        if len(check):
            # Only the rationales the database could not prove valid need the exact rule.
            ok[check] = rationale_ok_vectorised(
                pc.take(cols["rationale"], pa.array(check)),
                score[check],
                is_na[check],
                best[check],
                script=self.rule.script,
                min_words=self.rule.min_words,
                script_share=self.rule.script_share,
            )
        self.frames.append(
            pd.DataFrame(
                {
                    # Narrow dtypes: half a million rows stay a few tens of megabytes.
                    "estimate_id": _np(cols["estimate_id"]),
                    "triple_id": _np(cols["triple_id"]),
                    "answer_id": _np(cols["answer_id"]).astype(np.int32),
                    "group": pd.Categorical(
                        cols["group"].to_numpy(zero_copy_only=False), categories=GROUPS
                    ),
                    "score": np.where(is_na, np.nan, score).astype(np.float32),
                    "is_na": is_na,
                    "rationale_ok": ok,
                    "top_score": top.astype(np.int8),
                    "criterion_id": _np(cols["criterion_id"]).astype(np.int32),
                    "panel_id": _np(cols["panel_id"]).astype(np.int32),
                    "model_id": _np(cols["model_id"]).astype(np.int32),
                    "instruction_id": _np(cols["instruction_id"]).astype(np.int32),
                    "task_id": _map(_np(cols["task_id"]), lookups.task_top).astype(np.int32),
                    "leaf_task_id": _np(cols["task_id"]).astype(np.int32),
                    "scale_size": _map(_np(cols["rubric_id"], fill=0), lookups.rubric_size).astype(
                        np.int8
                    ),
                    "rubric_id": _np(cols["rubric_id"], fill=0).astype(np.int32),
                }
            )
        )
        self.rows += len(is_na)
        self.chunks += 1
        if self.chunks % RELEASE_EVERY_CHUNKS == 0:
            # Each chunk's transient (its texts, the rule's arrays) is freed but stays resident
            # in the allocators: ~270 MB by the end of the read at 10x POLLUX without this.
            release_memory()

    def frame(self) -> pd.DataFrame:
        """The frame of every chunk added (the chunks are released)."""
        # Arrow's allocator keeps the freed CSV blocks for reuse; hand them back first.
        pa.default_memory_pool().release_unused()
        frames, self.frames = self.frames, []
        if not frames:
            return pd.DataFrame(
                {
                    name: pd.Series(dtype="float64" if name == "score" else "int64")
                    for name in (
                        *ESTIMATE_COLUMNS,
                        "criterion_id",
                        "panel_id",
                        "model_id",
                        "instruction_id",
                        "task_id",
                        "leaf_task_id",
                        "scale_size",
                        "rubric_id",
                    )
                }
            ).astype({"group": object, "is_na": bool, "rationale_ok": bool})
        # Column by column, each column's chunks dropped once joined: pd.concat would hold every
        # chunk and the whole result at once (twice the frame: ~250 MB more at 10x POLLUX).
        columns: dict[str, Any] = {}
        for name in list(frames[0].columns):
            parts = [frame.pop(name) for frame in frames]
            if isinstance(parts[0].dtype, pd.CategoricalDtype):
                codes = np.concatenate([part.cat.codes.to_numpy() for part in parts])
                columns[name] = pd.Categorical.from_codes(codes, categories=GROUPS)
            else:
                columns[name] = np.concatenate([part.to_numpy() for part in parts])
            del parts
        frame = pd.DataFrame(columns, copy=False)
        del frames
        release_memory()
        return frame


def release_memory() -> None:
    """Hand freed memory back to the system: Python's garbage, Arrow's pool, glibc's heap.

    Arrow's allocator and glibc's malloc keep freed blocks for reuse, so a step's transient
    otherwise stacks on the previous step's (~100 MB at POLLUX scale).
    """
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    pa.default_memory_pool().release_unused()
    libc_name = ctypes.util.find_library("c")
    if libc_name:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(libc_name).malloc_trim(0)


def _np(array: pa.Array | pa.ChunkedArray, fill: Any = 0) -> np.ndarray:
    if array.null_count:
        array = pc.fill_null(array, fill)
    return np.asarray(array.to_numpy(zero_copy_only=False))


def label_dimensions(triples: pd.DataFrame) -> pd.DataFrame:
    """Human keys for the agreement/result dimensions: criterion name, panel key, task type
    (the top-level task), model.

    Criteria are pooled by name as in the paper: the rubric variants of one criterion
    (`creativity`, `creativity__2`, ...) share a name and are one criterion in its tables.
    """

    criteria = dict(Criterion.objects.values_list("pk", "name_en"))
    panels = dict(Panel.objects.values_list("pk", "key"))
    tasks = dict(Task.objects.filter(level=0).values_list("pk", "name_en"))
    models = {lm.pk: str(lm) for lm in LanguageModel.objects.all()}
    # A shallow copy: the new columns are its own, the triples' columns stay shared (a deep
    # copy cost ~150 MB at 10x POLLUX).
    out = triples.copy(deep=False)
    out["criterion"] = out["criterion_id"].map(criteria)
    out["panel"] = out["panel_id"].map(panels)
    out["task"] = out["task_id"].map(tasks)
    out["model"] = out["model_id"].map(models)
    return out


@dataclass
class DatasetComputation:
    """Everything derived from one snapshot of the estimates."""

    estimates: pd.DataFrame
    result: AggregationResult
    triples: pd.DataFrame  # labelled, every triple with an estimate (excluded ones flagged)
    agreement: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    # Every other kind's part (dataset.parts), from the same snapshot, by its kind's key.
    parts: dict[str, Any] = field(default_factory=dict)


def dataset_compute(
    rules: AggregationSettings, *, progress: ProgressFn | None = None
) -> DatasetComputation:
    """Read (call inside `snapshot()`), aggregate, label, report agreement and result tables."""
    return dataset_compute_from(read_estimate_frame(progress=progress), rules)


def dataset_compute_from(estimates: pd.DataFrame, rules: AggregationSettings) -> DatasetComputation:
    """`dataset_compute` on an estimates frame already read (see `EstimateFrameBuilder`); every
    kind's part reads its own work here (inside the caller's snapshot)."""
    # The estimates read hold only rubric triples; each other kind's part reads and aggregates
    # its own work (dataset.parts).
    parts = {part.key: part.compute(rules) for part in kind_parts}
    result = aggregate_estimates(estimates, rules)
    mask = result.kept_mask
    if mask is None:
        mask = estimates["estimate_id"].isin(result.kept_estimate_ids).to_numpy()
    kept = estimates.loc[mask, ["triple_id", "score", "is_na"]]
    if settings.POLLUX["ADJUDICATION_OVERRIDES"]:
        # The supervisors' verdicts replace the experts' where they exist (off by default).
        result = replace(result, triples=with_overrides(result.triples, kept))
    triples = label_dimensions(result.triples)
    included = triples[triples["excluded_reason"] == ""]
    # The read's and the rules' garbage goes back to the system before Krippendorff's alpha
    # takes its transient (units x values x values arrays: ~100 MB at POLLUX scale).
    release_memory()
    agreement = agreement_report(included, kept)
    tables = result_tables(included)
    return DatasetComputation(
        estimates=estimates,
        result=result,
        triples=triples,
        agreement=agreement,
        tables=tables,
        parts=parts,
    )


# --------------------------------------------------------------------------------------------
# The service: recompute TripleAggregate for every triple with a submitted estimate.
# --------------------------------------------------------------------------------------------


def aggregates_write(
    triples: pd.DataFrame, *, job_id: int | None, others: Sequence[pa.Table] = ()
) -> int:
    """Replace every TripleAggregate row with `triples` (rubric) and `others` (the other kinds'
    verdict rows, dataset.parts) in one transaction (COPY on PostgreSQL)."""
    table = TripleAggregate._meta.db_table
    columns = [
        "triple_id",
        "n_estimates",
        "mean",
        "mode",
        "confidence",
        "all_na",
        "label",
        "excluded_reason",
        "job_id",
    ]
    n = len(triples)
    data = pa.table(
        {
            "triple_id": pa.array(triples["triple_id"].to_numpy(dtype=np.int64)),
            "n_estimates": pa.array(triples["n_estimates"].to_numpy(dtype=np.int64)),
            "mean": pa.array(triples["mean"].to_numpy(dtype=float), from_pandas=True),
            "mode": pa.array(triples["mode"].to_numpy(dtype=float), from_pandas=True).cast(
                pa.int64()
            ),
            "confidence": pa.array(triples["confidence"].to_numpy(dtype=float), from_pandas=True),
            "all_na": pa.array(triples["all_na"].to_numpy(dtype=bool)),
            "label": pa.array([""] * n, pa.string()),
            "excluded_reason": pa.array(
                triples["excluded_reason"].astype(str).tolist(), pa.string()
            ),
            "job_id": pa.array([job_id] * n, pa.int64()),
        }
    )
    if others:
        # One chunk per column: Arrow 26's CSV writer wrote zero bytes for a two-chunk table
        # whose first chunk was empty (a pairwise-only database), and COPY refused them.
        data = pa.concat_tables([data, *others]).combine_chunks()
        n += sum(len(t) for t in others)
    with transaction.atomic():
        # A full recompute: the old rows go, all new rows come, atomically (readers see either).
        TripleAggregate.objects.all().delete()
        if is_postgres():
            from pyarrow import csv as pacsv

            # Arrow writes the CSV in C++; COPY takes it in one stream (a Python loop over
            # 200,000 rows would cost seconds). Nulls are unquoted empty fields, as COPY wants.
            sink = pa.BufferOutputStream()
            pacsv.write_csv(
                data,
                sink,
                write_options=pacsv.WriteOptions(include_header=False, quoting_style="needed"),
            )
            with (
                connection.cursor() as cursor,
                cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT csv)") as copy,
            ):
                copy.write(sink.getvalue().to_pybytes())
        else:
            rows = zip(*(data.column(c).to_pylist() for c in columns), strict=True)
            TripleAggregate.objects.bulk_create(
                [TripleAggregate(**dict(zip(columns, row, strict=True))) for row in rows],
                batch_size=5000,
            )
    return n


def aggregation_run(
    *, rules: AggregationSettings | None = None, job_id: int | None = None
) -> dict[str, Any]:
    """Recompute every triple's aggregate and the agreement report; returns the report (JSON)."""
    rules = rules or AggregationSettings()
    # The work reads in a read-only snapshot: progress goes through the side connection only.
    with job_progress(job_id, caller_writes=False) as progress:
        with snapshot():
            computed = dataset_compute(rules, progress=progress)
        progress(len(computed.estimates), len(computed.estimates), "write")
        others = [
            rows
            for part in kind_parts
            if (rows := part.verdict_rows(computed.parts[part.key], job_id)) is not None
        ]
        aggregates_write(computed.result.triples, job_id=job_id, others=others)
    report = dataset_report(computed)
    report["agreement"] = json_records(computed.agreement)
    return report


def dataset_report(computed: DatasetComputation) -> dict[str, Any]:
    """The aggregation's report: the rubric's counts, and each other kind's under its key when
    it has work (a rubric-only report stays as it was)."""
    report = dict(computed.result.report)
    for part in kind_parts:
        report.update(part.report(computed.parts[part.key]))
    return report


def json_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame as JSON-safe records (NaN -> None)."""
    records = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    return [{str(k): _json_value(v) for k, v in r.items()} for r in records]


def _json_value(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
