"""POLLUX judge prompt construction.

The section texts come from the shipped upstream YAML template, so a change of wording upstream
is a file copy, not a code change. Section order (instruction, reference, answer, criterion,
rubric) matters for prefix sharing: every criterion of one answer shares everything up to the
criterion section.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib import resources

import yaml

# Keys of the upstream YAML, in prompt order.
SECTION_KEYS: tuple[str, ...] = (
    "instruction",
    "reference_answer",
    "response",
    "score_name",
    "score_rubrics",
)


def template_text(name: str) -> str:
    """Return a shipped template file (``test_pollux_prompt.txt`` or the YAML) as text."""
    return resources.files("judge_worker.templates").joinpath(name).read_text(encoding="utf-8")


@cache
def _sections() -> dict[str, str]:
    data = yaml.safe_load(template_text("test_prompt_template_ru.yaml"))
    missing = [key for key in SECTION_KEYS if key not in data]
    if missing:
        raise ValueError(f"judge prompt template lacks sections: {missing}")
    # Literal blocks keep one trailing newline; the sections are joined by a blank line, so the
    # newline is dropped here and "\n\n" added by the join (this is what makes the output equal
    # to the .txt template, which has no trailing newline).
    return {key: str(data[key]).rstrip("\n") for key in SECTION_KEYS}


def render_rubrics(levels: Sequence[tuple[str, str]]) -> str:
    """Render a criterion scale as in the POLLUX demo: one ``"level: text"`` paragraph per level."""
    return "\n\n".join(f"{level}: {text}" for level, text in levels)


def build_prompt(
    *,
    instruction: str,
    answer: str,
    criterion_name: str,
    rubrics: str,
    reference_answer: str | None = None,
) -> str:
    """Fill the POLLUX judge template.

    The reference section is omitted when ``reference_answer`` is None or empty (YAML semantics:
    a section whose value is missing is dropped). With a reference the result is byte-identical
    to ``test_pollux_prompt.txt`` filled with ``str.format``.
    """
    values = {
        "instruction": instruction,
        "reference_answer": reference_answer,
        "answer": answer,
        "criteria_name": criterion_name,
        "rubrics": rubrics,
    }
    placeholder_of = {
        "instruction": "instruction",
        "reference_answer": "reference_answer",
        "response": "answer",
        "score_name": "criteria_name",
        "score_rubrics": "rubrics",
    }
    parts: list[str] = []
    for key, text in _sections().items():
        value = values[placeholder_of[key]]
        if key == "reference_answer" and not value:
            continue
        # str.format only interprets braces of the template, never of the substituted values, so
        # answers containing "{...}" (code, JSON) are safe.
        parts.append(text.format(**{placeholder_of[key]: value}))
    return "\n\n".join(parts)


def build_messages(
    *,
    instruction: str,
    answer: str,
    criterion_name: str,
    rubrics: str,
    reference_answer: str | None = None,
) -> list[dict[str, str]]:
    """Chat messages for the judge: one user message, no system prompt (as POLLUX's judges)."""
    prompt = build_prompt(
        instruction=instruction,
        answer=answer,
        criterion_name=criterion_name,
        rubrics=rubrics,
        reference_answer=reference_answer,
    )
    return [{"role": "user", "content": prompt}]
