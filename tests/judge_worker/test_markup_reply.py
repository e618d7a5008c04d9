"""judge_worker.markup: reading a model's span markup reply into contest selections."""

from __future__ import annotations

from judge_worker.markup import markup_messages, parse_markup_reply

TEXT = "Мы одеваем шапки. Мы одеваем шарфы."
GROUPS = {"Р.знач": "error", "Г.деепр": "error", "ТЕЗИС": "meaning"}


def test_quotes_become_offsets_in_order_and_repeated_quotes_take_the_next_occurrence() -> None:
    reply = (
        'Вот ошибки:\n```json\n[{"quote": "одеваем", "type": "р.знач", "correction": "надеваем"},'
        ' {"quote": "одеваем", "type": "Р.знач"}]\n```'
    )
    out = parse_markup_reply(reply, TEXT, GROUPS)
    first, second = out.selections
    assert (first["startSelection"], first["endSelection"]) == (3, 10)
    assert second["startSelection"] == TEXT.rfind("одеваем")
    assert first["type"] == "Р.знач" and first["correction"] == "надеваем"
    assert first["group"] == "error" and not out.problems


def test_what_cannot_be_placed_is_skipped_and_reported() -> None:
    reply = (
        '[{"quote": "нет такого", "type": "Р.знач"}, {"quote": "шапки", "type": "X.y"},'
        ' {"type": "Р.знач"}, 5, {"quote": "шарфы", "type": "ТЕЗИС"}]'
    )
    out = parse_markup_reply(reply, TEXT, GROUPS)
    assert [s["type"] for s in out.selections] == ["ТЕЗИС"]
    assert out.selections[0]["group"] == "meaning"
    assert len(out.problems) == 4


def test_a_reply_without_json_gives_nothing() -> None:
    assert parse_markup_reply("Ошибок нет.", TEXT, GROUPS).selections == []
    assert parse_markup_reply("[", TEXT, GROUPS).problems == ["the reply holds no JSON array"]
    assert parse_markup_reply("[]", TEXT, GROUPS).selections == []


def test_the_prompt_lists_the_codes_and_the_text() -> None:
    system, user = markup_messages(TEXT, [("Р.знач", "Неразличение значения")])
    assert system["role"] == "system" and "JSON" in system["content"]
    assert "Р.знач — Неразличение значения" in user["content"] and TEXT in user["content"]
