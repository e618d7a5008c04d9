"""Pollux Studio judge worker: builds POLLUX judge prompts, runs LLM judges, parses scores;
also generates models' free-text answers (generation runs).

This package is deliberately free of Django so it can run on a GPU box on its own; the
Django side feeds it plain data (``JudgeItem``, ``GenerationItem``) and stores what comes back
(``JudgeOutput``, ``GenerationOutput``).
"""

from __future__ import annotations

from judge_worker.pairwise import (
    PAIRWISE_TEMPLATES,
    PairwiseExample,
    build_pairwise_prompt,
    pairwise_prefix,
)
from judge_worker.parsing import JudgeParse, parse_judge_output
from judge_worker.prompt import build_messages, build_prompt, render_rubrics
from judge_worker.types import (
    GenerationItem,
    GenerationOutput,
    Generator,
    JudgeBackend,
    JudgeItem,
    JudgeOutput,
)

__all__ = [
    "PAIRWISE_TEMPLATES",
    "GenerationItem",
    "GenerationOutput",
    "Generator",
    "JudgeBackend",
    "JudgeItem",
    "JudgeOutput",
    "JudgeParse",
    "PairwiseExample",
    "build_messages",
    "build_pairwise_prompt",
    "build_prompt",
    "pairwise_prefix",
    "parse_judge_output",
    "render_rubrics",
]
