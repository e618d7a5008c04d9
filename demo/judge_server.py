"""The demo's local OpenAI-compatible test server: a stand-in judge for trying submissions.

Not a judge. It answers every chat completion with a POLLUX-format verdict chosen
deterministically from the scale levels written in the prompt (the same prompt always gets the
same verdict), so a newcomer without PyTorch sees a submission go through the real pipeline —
the judge run's batches, the HTTP backend, the parser, the private result, publication — in
seconds. Its numbers mean nothing. With the judge extra installed, an admin designates the
SmolLM2 demo judge (a real, if poor, model) in the board's settings instead.

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


def verdict(prompt: str) -> str:
    """The verdict for a prompt: one of its scale's levels, by a hash of the prompt."""
    levels = sorted({float(x) for x in _LEVEL.findall(prompt)}) or [0.0, 1.0]
    digest = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:4], "big")
    # Leaning to the best end, as answers mostly are: the top level twice as likely.
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
        text = verdict(prompt)
        choice = {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": text},
            "text": text,
        }
        usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": 16}
        usage["total_tokens"] = usage["prompt_tokens"] + 16
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
