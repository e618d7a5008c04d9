"""REPA side-by-side judge prompts (Appendix C, Figure 4 of the REPA paper).

Three templates ship with the package (`templates/repa_prompt_{1,2,3}.txt`, see NOTICE.md). A
prompt is laid out so that the backends' prefix sharing serves all the criteria of a pair:

    guidelines | examples (k-shot) | query | response A | response B || error type

Everything before "Error type:" depends only on (template, examples, pair, placement), never on
the criterion; the criterion's "<Name>: <description>" comes last. `pairwise_prefix` is that
shared part and `build_pairwise_prompt` always starts with it (tests check both).

The label format ("<Justification> Label: <label>") is the paper's; reading it is the strict
parser `protocol.pairwise.parse_judge_label`, applied by the Django side (this package imports
no project module).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from judge_worker.prompt import template_text

# Template name -> shipped file. The names are stored on judge runs and estimates: never rename.
PAIRWISE_TEMPLATES: dict[str, str] = {
    "repa_1": "repa_prompt_1.txt",
    "repa_2": "repa_prompt_2.txt",
    "repa_3": "repa_prompt_3.txt",
}
ERROR_TYPE_SLOT = "{error_type}"
PREFIX_SLOTS = ("{examples}", "{query}", "{response_a}", "{response_b}")

# The label strings the prompts list, by the codes of protocol.pairwise.Label (spelled again
# here because this package imports no project module; the parser's vocabulary includes them).
LABEL_WORDS: dict[str, str] = {
    "a": "A is better",
    "b": "B is better",
    "both_good": "Both are good",
    "both_bad": "Both are bad",
}


@dataclass(frozen=True)
class PairwiseExample:
    """One demonstration: a gold pair (unanimous experts) with one criterion and its label, in
    the orientation it is shown in."""

    query: str
    response_a: str
    response_b: str
    error_type: str
    label: str  # a code of LABEL_WORDS


@cache
def _split(template: str) -> tuple[str, str]:
    """(prefix part, criterion part) of a template: split at its one "{error_type}" slot."""
    if template not in PAIRWISE_TEMPLATES:
        raise ValueError(
            f"unknown pairwise template {template!r}; one of {list(PAIRWISE_TEMPLATES)}"
        )
    text = template_text(PAIRWISE_TEMPLATES[template]).rstrip("\n")
    if text.count(ERROR_TYPE_SLOT) != 1:
        raise ValueError(f"template {template!r} must have one {ERROR_TYPE_SLOT} slot")
    head, tail = text.split(ERROR_TYPE_SLOT)
    missing = [slot for slot in PREFIX_SLOTS if head.count(slot) != 1]
    if missing or "{" in tail:
        # The prefix must hold every pair slot once and the tail nothing but the error type:
        # otherwise the criterion would leak into the shared prefix or vice versa.
        raise ValueError(f"template {template!r}: bad slots {missing or tail!r}")
    return head, tail


def _fill(text: str, values: dict[str, str]) -> str:
    # Plain replacement, not str.format: answers and queries may contain braces (code, JSON).
    # Slots are replaced in one pass over the template's pieces, so a value containing
    # "{query}" is never substituted again.
    out: list[str] = []
    rest = text
    while rest:
        positions = [(rest.find(s), s) for s in values if s in rest]
        if not positions:
            out.append(rest)
            break
        pos, slot = min(positions)
        out.append(rest[:pos])
        out.append(values[slot])
        rest = rest[pos + len(slot) :]
    return "".join(out)


def render_examples(examples: Sequence[PairwiseExample]) -> str:
    """The k-shot block: each example as the task's own fields followed by its answer."""
    blocks = []
    for number, ex in enumerate(examples, 1):
        blocks.append(
            f"Example {number}:\n"
            f"Query: {ex.query}\n"
            f"First model's response: {ex.response_a}\n"
            f"Second model's response: {ex.response_b}\n"
            f"Error type: {ex.error_type}\n"
            f"Label: {LABEL_WORDS[ex.label]}"
        )
    return "".join(block + "\n\n" for block in blocks)


def pairwise_prefix(
    template: str,
    query: str,
    response_a: str,
    response_b: str,
    examples: Sequence[PairwiseExample] = (),
) -> str:
    """The part of the prompt shared by every criterion of one pair (and placement)."""
    head, _ = _split(template)
    return _fill(
        head,
        {
            "{examples}": render_examples(examples),
            "{query}": query,
            "{response_a}": response_a,
            "{response_b}": response_b,
        },
    )


def build_pairwise_prompt(
    template: str,
    query: str,
    response_a: str,
    response_b: str,
    error_type: str,
    examples: Sequence[PairwiseExample] = (),
) -> str:
    """The full prompt: the shared prefix, then "Error type: <Name>: <description>"."""
    _, tail = _split(template)
    return pairwise_prefix(template, query, response_a, response_b, examples) + error_type + tail
