"""Judge prompt construction, byte for byte against the shipped POLLUX templates."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge_worker.prompt import build_messages, build_prompt, render_rubrics, template_text

RUBRICS = render_rubrics([("0", "Нет."), ("1", "Частично."), ("2", "Да.")])
FIELDS = {
    "instruction": "Напиши функцию {name}.",  # braces in values must survive str.format
    "answer": "def f():\n    return {'a': 1}\n\nГотово.",
    "criterion_name": "Корректность кода",
    "rubrics": RUBRICS,
}


def test_render_rubrics_demo_format() -> None:
    assert RUBRICS == "0: Нет.\n\n1: Частично.\n\n2: Да."


def test_with_reference_is_txt_template_format() -> None:
    txt = template_text("test_pollux_prompt.txt")
    expected = txt.format(
        instruction=FIELDS["instruction"],
        reference_answer="Эталон: {x}",
        answer=FIELDS["answer"],
        criteria_name=FIELDS["criterion_name"],
        rubrics=RUBRICS,
    )
    got = build_prompt(**FIELDS, reference_answer="Эталон: {x}")
    assert got.encode("utf-8") == expected.encode("utf-8")
    assert not got.endswith("\n")


@pytest.mark.parametrize("reference", [None, ""])
def test_without_reference_drops_the_section(reference: str | None) -> None:
    txt = template_text("test_pollux_prompt.txt")
    section = "### Эталонный ответ:\n{reference_answer}\n\n"
    assert section in txt
    expected = txt.replace(section, "").format(
        instruction=FIELDS["instruction"],
        answer=FIELDS["answer"],
        criteria_name=FIELDS["criterion_name"],
        rubrics=RUBRICS,
    )
    got = build_prompt(**FIELDS, reference_answer=reference)
    assert got.encode("utf-8") == expected.encode("utf-8")
    assert "Эталонный" not in got
    # Sections in template order, one blank line between them.
    assert got.index("### Задание") < got.index("### Ответ для") < got.index("### Критерий")
    assert "\n\n\n" not in got


def test_criteria_of_one_answer_share_the_prefix_up_to_the_criterion() -> None:
    a = build_prompt(**FIELDS)
    b = build_prompt(**{**FIELDS, "criterion_name": "Стиль", "rubrics": "0: a\n\n1: b"})
    cut = a.index("### Критерий оценки:")
    assert a[:cut] == b[:cut]


def test_build_messages_is_one_user_message() -> None:
    messages = build_messages(**FIELDS, reference_answer="ref")
    assert messages == [{"role": "user", "content": build_prompt(**FIELDS, reference_answer="ref")}]


def test_shipped_templates_match_the_shared_copies() -> None:
    shared = Path(__file__).resolve().parents[3] / "shared" / "data" / "pollux"
    if not shared.is_dir():
        pytest.skip("no ../shared/data/pollux beside the checkout")
    for name in ("test_pollux_prompt.txt", "test_prompt_template_ru.yaml"):
        assert template_text(name) == (shared / name).read_text(encoding="utf-8")
