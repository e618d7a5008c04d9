"""A tiny OpenAI-compatible HTTP server standing in for a remote judge (stdlib only).

It answers every chat or text completion with a fixed POLLUX-format verdict after a delay, and
counts requests, so tests exercise the real HTTP backend and a real worker without a model.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "[FEEDBACK] Ответ соответствует критерию. [RESULT] 1 [END]"


@contextmanager
def fake_openai(
    delay: float = 0.0,
    reply: str = REPLY,
    fail_first: int = 0,
    reply_for: Callable[[str], str] | None = None,
) -> Iterator[dict[str, Any]]:
    """Serve on a free port; the first `fail_first` completions get an HTTP 500. With
    `reply_for`, the reply is reply_for(the request's last message text)."""
    state: dict[str, Any] = {"requests": 0, "url": ""}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            self._send({"object": "list", "data": [{"id": "fake-judge", "object": "model"}]})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            with lock:
                state["requests"] += 1
                failing = state["requests"] <= fail_first
            time.sleep(delay)
            if failing:
                self._send({"error": {"message": "overloaded"}}, status=500)
                return
            text = reply
            if reply_for is not None:
                text = reply_for(str((body.get("messages") or [{}])[-1].get("content", "")))
            choice = {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": text},
                "text": text,
            }
            usage = {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112}
            self._send(
                {"id": "x", "object": "chat.completion", "choices": [choice], "usage": usage}
            )

        def _send(self, body: dict[str, Any], status: int = 200) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
