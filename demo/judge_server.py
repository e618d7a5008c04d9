"""The demo's local OpenAI-compatible test server: a stand-in judge and answering model.

Not a judge. It answers a judge prompt (a POLLUX criterion prompt, a REPA side-by-side prompt,
a span-markup prompt: see :func:`is_judge_prompt`) with a POLLUX-format verdict chosen
deterministically from the scale levels written in the prompt (the same prompt always gets the
same verdict), so a newcomer without PyTorch sees a submission go through the real pipeline —
the judge run's batches, the HTTP backend, the parser, the private result, publication — in
seconds. Its numbers mean nothing. With the judge extra installed, an admin designates the
SmolLM2 demo judge (a real, if poor, model) in the board's settings instead.

Not a model either. Any other prompt (a generation run's instruction) gets a demo answer: a few
Russian sentences saying so, chosen by a hash of the prompt and the request's ``seed`` (same
prompt and seed, same text; temperature and the rest are ignored). ``max_tokens`` is honoured
by cutting the answer to that many whitespace-separated words, with finish_reason "length";
otherwise finish_reason is "stop". ``usage`` counts words of the answer and a quarter of the
prompt's characters.

    python -m demo.judge_server --port 8765

Standard library only; serves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_PORT = 8765
# A scale level as the POLLUX prompt renders it: "2: text" at the start of a paragraph.
_LEVEL = re.compile(r"(?m)^\s*(\d+(?:\.\d+)?)\s*:")


# Texts only a judge prompt contains, each group all together: the POLLUX criterion prompt's
# section headers (judge_worker/templates/test_prompt_template_ru.yaml), the REPA side-by-side
# instructions (templates/repa_prompt_*.txt), the span-markup system prompt (judge_worker.markup),
# and a verdict format asked in so many words.
_JUDGE_MARKERS: tuple[tuple[str, ...], ...] = (
    ("### Критерий оценки:", "### Шкала оценивания по критерию:"),
    ("<Justification> Label: <label>", "Error type:"),
    ("Коды ошибок:", "Найди в тексте грамматические"),
    ("[RESULT]",),
)
_ANSWER_HEAD = "Это ответ демо-сервера, а не модели: текст выбран по хешу запроса ({tag})."
_ANSWER_SENTENCES = (
    "Настоящая модель здесь не запускалась, поэтому содержание ответа ничего не значит.",
    "Демо-сервер нужен, чтобы показать, как прогон генерации проходит через платформу.",
    "Тот же запрос с тем же seed всегда получает этот же текст.",
    "Чтобы получить настоящие ответы, подключите модель через OpenAI-совместимый сервер.",
    "Оценки таких ответов судьёй тоже будут демонстрационными.",
    "Длина ответа ограничивается параметром max_tokens, как у настоящего сервера.",
    "Этот абзац собран из заготовленных предложений в случайном, но воспроизводимом порядке.",
    "Слова считаются по пробелам, а не токенами настоящего токенизатора.",
)


def is_judge_prompt(prompt: str) -> bool:
    """Whether a prompt asks for a verdict (judging) rather than an answer (generation)."""
    return any(all(marker in prompt for marker in group) for group in _JUDGE_MARKERS)


def demo_answer(prompt: str, seed: object = None) -> str:
    """The demo answer to a prompt: labelled sentences picked by a hash of prompt and seed."""
    digest = hashlib.sha256(f"{seed!r}\x00{prompt}".encode()).digest()
    pool = list(_ANSWER_SENTENCES)
    picked = []
    for byte in digest[:5]:  # five sentences, no repeats, order from the hash
        picked.append(pool.pop(byte % len(pool)))
    return " ".join([_ANSWER_HEAD.format(tag=digest.hex()[:8]), *picked])


# The criterion's name as the POLLUX prompt renders it. A critical criterion is the one asked as
# a question ("Есть ли критичное нарушение формата …?"): its top level is the violation.
_CRITERION = re.compile(r"### Критерий оценки:\s*\n\s*(.+)")


def _asks_for_a_violation(prompt: str) -> bool:
    found = _CRITERION.search(prompt)
    return bool(found and found.group(1).strip().endswith("?"))


def verdict(prompt: str) -> str:
    """The verdict for a prompt: one of its scale's levels, by a hash of the prompt."""
    levels = sorted({float(x) for x in _LEVEL.findall(prompt)}) or [0.0, 1.0]
    digest = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:4], "big")
    # Leaning to the best end, as answers mostly are: the top level twice as likely; for a
    # critical criterion the best end is "no violation", and a violation rare (one in six), so
    # the demo's boards are not emptied by their gate rule.
    if _asks_for_a_violation(prompt):
        pool = [*([levels[0]] * 5), levels[-1]]
    else:
        pool = [*levels, levels[-1]]
    value = pool[digest % len(pool)]
    shown = int(value) if value.is_integer() else value
    return f"[FEEDBACK] Демо-сервер: вердикт не модели, а по хешу запроса. [RESULT] {shown} [END]"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": "demo-judge", "object": "model"}]})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send({"error": {"message": "not JSON"}}, status=400)
            return
        messages = body.get("messages") or [{"content": body.get("prompt", "")}]
        prompt = "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        finish = "stop"
        if is_judge_prompt(prompt):
            text, completion_tokens = verdict(prompt), 16
        else:
            words = demo_answer(prompt, body.get("seed")).split()
            limit = body.get("max_tokens", body.get("max_completion_tokens"))
            if isinstance(limit, int) and not isinstance(limit, bool) and 0 <= limit < len(words):
                words, finish = words[:limit], "length"
            text, completion_tokens = " ".join(words), len(words)
        choice = {
            "index": 0,
            "finish_reason": finish,
            "message": {"role": "assistant", "content": text},
            "text": text,
        }
        usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": completion_tokens}
        usage["total_tokens"] = usage["prompt_tokens"] + completion_tokens
        self._send({"id": "demo", "object": "chat.completion", "choices": [choice], "usage": usage})

    def _send(self, body: dict[str, Any], status: int = 200) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(port: int = DEFAULT_PORT) -> ThreadingHTTPServer:
    """The server bound to 127.0.0.1:port (not yet serving)."""
    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args()
    server = serve(args.port)
    print(f"demo judge server on http://127.0.0.1:{args.port}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
