"""Parsing of judge outputs: lenient on wrapping, strict on the score."""

from __future__ import annotations

import pytest

from judge_worker.parsing import parse_judge_output

SCALE_012 = (0.0, 1.0, 2.0)
SCALE_HALF = (0.0, 3.5, 10.5)


@pytest.mark.parametrize(
    ("text", "scale", "score", "feedback"),
    [
        ("[FEEDBACK] Ответ верный. [RESULT] 2 [END]", SCALE_012, 2.0, "Ответ верный."),
        ("[FEEDBACK] Всё хорошо. [RESULT] 10.5 [END]", SCALE_HALF, 10.5, "Всё хорошо."),
        ("[FEEDBACK] Частично. [RESULT] 3,5 [END]", SCALE_HALF, 3.5, "Частично."),
        ("[FEEDBACK] Нет ошибок.\n\n[RESULT]\n1\n", SCALE_012, 1.0, "Нет ошибок."),  # no [END]
        ("**[FEEDBACK]** Хорошо.\n**[RESULT]** 2", SCALE_012, 2.0, "Хорошо."),
        ("[FEEDBACK] Неплохо. [RESULT] **1** [END]", SCALE_012, 1.0, "Неплохо."),
        ("[feedback] ok [result] 0 [end]", SCALE_012, 0.0, "ok"),
        ("[FEEDBACK]   пробелы   [RESULT]    2    [END]  ", SCALE_012, 2.0, "пробелы"),
        # Repairs of upstream's fix_score_format (ai-forever/POLLUX preprocess_data.py).
        ("[FEEDBACK] Неплохо. [RESULT] (2) [END]", SCALE_012, 2.0, "Неплохо."),
        ("[FEEDBACK] Неплохо.\n**RESULT:** 2", SCALE_012, 2.0, "Неплохо."),
        ("**FEEDBACK:** Неплохо.\nRESULT: 1 [END]", SCALE_012, 1.0, "Неплохо."),
        ('[FEEDBACK] Ок. [RESULT] "0" [END]', SCALE_012, 0.0, "Ок."),
        # The first block counts, as in every upstream parser (re.search).
        ("[FEEDBACK] Итог. [RESULT] 1 [END] Хотя нет: [RESULT] 2 [END]", SCALE_012, 1.0, None),
        ("[FEEDBACK] Ок. [RESULT] 2 - без ошибок [END]", SCALE_012, 2.0, "Ок."),
        ("[FEEDBACK] Ок. [RESULT] 2.\nЭто всё.", SCALE_012, 2.0, "Ок."),
        ("[FEEDBACK] Ок. [RESULT] 2.0 [END]", SCALE_012, 2.0, "Ок."),
    ],
)
def test_accepted(text: str, scale: tuple[float, ...], score: float, feedback: str | None) -> None:
    parsed = parse_judge_output(text, scale)
    assert parsed.ok, parsed.error
    assert parsed.score == score
    assert parsed.error is None
    assert parsed.raw == text
    if feedback is not None:
        assert parsed.feedback == feedback


@pytest.mark.parametrize(
    ("text", "scale", "error_part"),
    [
        ("[FEEDBACK] Отлично. [RESULT] 5 [END]", SCALE_012, "not on the scale"),
        ("[FEEDBACK] Отлично. [RESULT] 1.5 [END]", SCALE_012, "not on the scale"),
        ("[FEEDBACK] Отлично. [RESULT] -1 [END]", SCALE_012, "not on the scale"),
        ("[FEEDBACK] Ответ хороший, ставлю 2.", SCALE_012, "no [RESULT]"),
        ("", SCALE_012, "no [RESULT]"),
        ("[FEEDBACK] Хм. [RESULT] [END]", SCALE_012, "no number"),
        ("[FEEDBACK] Хм. [RESULT] два [END]", SCALE_012, "no number"),
        # The first [RESULT] block counts even when it holds no score (upstream: no score).
        ("[FEEDBACK] Формат: [RESULT] x. Итог. [RESULT] 1 [END]", SCALE_012, "no number"),
        # Ambiguous verdicts are failures, never their first number.
        ("[FEEDBACK] Хм. [RESULT] 1-2 [END]", SCALE_012, "ambiguous"),
        ("[FEEDBACK] Хм. [RESULT] 1 - 2 [END]", SCALE_012, "ambiguous"),
        ("[FEEDBACK] Хм. [RESULT] 1 или 2 [END]", SCALE_012, "ambiguous"),
        ("[FEEDBACK] Хм. [RESULT] 1/2 [END]", SCALE_012, "ambiguous"),
        ("[FEEDBACK] Хм. [RESULT] 1 or 2 [END]", SCALE_012, "ambiguous"),
        ("[FEEDBACK] Хм. [RESULT] (1) либо (2) [END]", SCALE_012, "ambiguous"),
        ("[FEEDBACK] Хм. [RESULT] 1, 2 [END]", SCALE_012, "ambiguous"),
    ],
)
def test_rejected_never_zero(text: str, scale: tuple[float, ...], error_part: str) -> None:
    parsed = parse_judge_output(text, scale)
    assert not parsed.ok
    assert parsed.score is None  # never silently 0
    assert parsed.error is not None and error_part in parsed.error
    assert parsed.raw == text
