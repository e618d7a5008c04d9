"""An LLM as a span-markup system: the prompt that asks a model for the errors of a text as
quoted fragments with codes, and the tolerant reader of its reply.

Models are poor at character offsets, so the prompt asks for quotes; the reader finds each quote
in the text (the next occurrence after the previous fragment's start, else the first anywhere)
and turns it into the contest JSON's selection (0-based, end-exclusive offsets). A quote that is
not in the text, an entry without a code and anything that is not JSON are skipped and reported,
never guessed. No Django, no platform import: the worker runs without them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SYSTEM_PROMPT = (
    "Ты — эксперт по проверке текстов на русском языке. Найди в тексте грамматические и "
    "речевые ошибки и отметь каждую фрагментом. Отвечай только JSON-массивом объектов вида "
    '{"quote": "точная цитата из текста", "type": "код ошибки", "subtype": "", '
    '"comment": "", "correction": "исправленный вариант"}. Цитата должна в точности '
    "совпадать с фрагментом текста. Используй только коды из списка. Если ошибок нет, ответь []."
)


def markup_messages(text: str, codes: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """The chat messages for one text: the instructions, the allowed codes, the text."""
    listing = "\n".join(f"{code} — {name}" for code, name in codes)
    user = f"Коды ошибок:\n{listing}\n\nТекст:\n{text}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


@dataclass
class MarkupReply:
    selections: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


_ARRAY = re.compile(r"\[.*\]", re.DOTALL)


def _entries(reply: str) -> list[Any] | None:
    """The JSON array in a reply: the whole reply, else the outermost [...] in it (a model may
    wrap it in prose or a code fence)."""
    for candidate in (reply.strip(), *(m.group(0) for m in _ARRAY.finditer(reply))):
        try:
            data = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(data, list):
            return data
        if isinstance(data, Mapping) and isinstance(data.get("selections"), list):
            return list(data["selections"])
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def parse_markup_reply(reply: str, text: str, groups: Mapping[str, str]) -> MarkupReply:
    """Selections from a model's reply. `groups` maps each allowed code (as the classifier
    spells it, compared case-insensitively) to its group; an unknown code is skipped."""
    out = MarkupReply()
    entries = _entries(reply)
    if entries is None:
        out.problems.append("the reply holds no JSON array")
        return out
    by_code = {code.casefold(): (code, group) for code, group in groups.items()}
    cursor = 0
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            out.problems.append(f"entry {i}: not an object")
            continue
        quote = _text(entry.get("quote")).strip()
        known = by_code.get(_text(entry.get("type")).strip().casefold())
        if known is None:
            out.problems.append(f"entry {i}: unknown code {entry.get('type')!r}")
            continue
        if not quote:
            out.problems.append(f"entry {i}: no quote")
            continue
        start = text.find(quote, cursor)
        if start < 0:
            start = text.find(quote)
        if start < 0:
            out.problems.append(f"entry {i}: quote not in the text")
            continue
        cursor = start + 1
        code, group = known
        out.selections.append(
            {
                "startSelection": start,
                "endSelection": start + len(quote),
                "type": code,
                "group": group,
                "subtype": _text(entry.get("subtype")).strip(),
                "comment": _text(entry.get("comment")).strip(),
                "correction": _text(entry.get("correction")).strip(),
            }
        )
    return out
