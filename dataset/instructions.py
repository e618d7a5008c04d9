"""The export table of written instructions (the authoring kind's export schema).

Column names are the public POLLUX dataset's where it has one (`instruction`,
`reference_answer`, `task_type`, `task_subtype`, `task_subsubtype`, `difficulty`, `domain`,
`is_provocative`), so the file reads back through the material import; the writing history
follows in columns of our own.
"""

from __future__ import annotations

import pyarrow as pa

INSTRUCTION_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("instruction_id", pa.string(), "Instruction external id"),
    ("instruction", pa.string(), "POLLUX: the instruction text"),
    ("reference_answer", pa.string(), "POLLUX: the reference answer, if any"),
    ("task_type", pa.string(), "POLLUX: top-level task (one of the 35 task groups)"),
    ("task_subtype", pa.string(), "POLLUX: first-level subtask"),
    ("task_subsubtype", pa.string(), "POLLUX: second-level subtask"),
    ("task_path", pa.string(), "Task path in the POLLUX taxonomy"),
    ("difficulty", pa.string(), "POLLUX: complexity level (easy, medium, hard)"),
    ("domain", pa.string(), "POLLUX: functional style"),
    ("is_provocative", pa.bool_(), "POLLUX: ethics flag (meant to elicit harmful behaviour)"),
    ("stylistic_devices", pa.string(), "Stylistic devices present, device: count; ..."),
    ("author", pa.string(), "The author's pseudonym"),
    ("panel", pa.string(), "The panel that wrote it"),
    ("review_rounds", pa.int32(), "Review rounds until acceptance"),
    ("returned", pa.int32(), "Times returned to the author (review or originality)"),
    ("editorial_edits", pa.int32(), "Editorial revisions"),
    ("closest_similarity", pa.float64(), "Originality check: closest match, Jaccard"),
    ("writing_minutes", pa.float64(), "Time the author spent writing, minutes"),
]


def instruction_schema() -> pa.Schema:
    return pa.schema([pa.field(name, dtype) for name, dtype, _ in INSTRUCTION_COLUMNS])


def instruction_notes() -> list[tuple[str, str]]:
    return [(name, note) for name, _, note in INSTRUCTION_COLUMNS]
