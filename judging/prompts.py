"""The POLLUX judge prompt of a rubric triple (a pointwise run's items)."""

from __future__ import annotations

from collections.abc import Sequence

from judge_worker import JudgeItem, build_messages, render_rubrics
from judging import hooks
from runs.models import RunConfig, default_prompt_template
from work.models import Triple


def instruction_texts(triples: Sequence[Triple]) -> dict[int, tuple[str, str]]:
    """(instruction text, reference answer) per answer: a published version's frozen copy where
    one is registered (judging.hooks.frozen_instructions), else the instruction as it is now."""
    rows = [(t.answer_id, t.answer.model_id, t.answer.instruction_id) for t in triples]
    frozen: dict[int, tuple[str, str]] = {}
    for source in hooks.frozen_instructions:
        frozen.update(source(rows))
    return {
        t.answer_id: frozen.get(
            t.answer_id,
            (t.answer.instruction.text, t.answer.instruction.reference_answer),
        )
        for t in triples
    }


def build_items(config: RunConfig, triples: Sequence[Triple]) -> list[JudgeItem]:
    """Judge prompts for triples loaded with answer__instruction, criterion and rubric."""
    custom = config.prompt_template.strip() != default_prompt_template().strip()
    texts = instruction_texts(triples)
    items = []
    for triple in triples:
        instruction_text, reference_answer = texts[triple.answer_id]
        criterion, rubric = triple.criterion, triple.rubric
        # A run's triples come from scope_triples, which keeps to rubric (pointwise) triples,
        # and those always have both (the check constraint triple_fields_of_kind).
        assert criterion is not None and rubric is not None, f"triple {triple.pk} is not rubric"
        levels = rubric.levels
        rubrics = render_rubrics(
            [(str(lv["value"]), str(lv.get("ru") or lv.get("en") or "")) for lv in levels]
        )
        criterion_name = criterion.name_ru or criterion.name_en
        reference = reference_answer or None
        if custom:
            # An admin-edited template: plain str.format over the POLLUX placeholders.
            prompt = config.prompt_template.format_map(
                {
                    "instruction": instruction_text,
                    "answer": triple.answer.text,
                    "criteria_name": criterion_name,
                    "rubrics": rubrics,
                    "reference_answer": reference or "",
                }
            )
            messages = [{"role": "user", "content": prompt}]
        else:
            messages = build_messages(
                instruction=instruction_text,
                answer=triple.answer.text,
                criterion_name=criterion_name,
                rubrics=rubrics,
                reference_answer=reference,
            )
        items.append(
            JudgeItem(
                item_id=str(triple.pk),
                prefix_key=str(triple.answer_id),
                messages=messages,
                allowed_scores=tuple(float(v) for v in rubric.values),
                meta={"criterion": criterion.key},
            )
        )
    return items
