"""A tiny OpenAI-compatible HTTP server over the "transformers" backend (stdlib only).

``python -m judge_worker.server --model PATH --port N`` serves ``POST /v1/chat/completions``
(greedy, ``max_tokens`` honoured, no streaming) and ``GET /v1/models``. It exists so that the
"openai" backend can be exercised end to end without an external inference server; requests
are handled one at a time on the model (the backend holds a lock).
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from judge_worker.backends.hf import HFBackend
from judge_worker.types import JudgeItem


def make_server(backend: HFBackend, host: str, port: int, model_name: str) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": model_name, "object": "model"}]})
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, {"error": {"message": "not found"}})
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
                req = json.loads(self.rfile.read(length))
                messages = [
                    {"role": str(m["role"]), "content": str(m["content"])} for m in req["messages"]
                ]
            except (ValueError, KeyError, TypeError) as exc:
                self._send(400, {"error": {"message": f"bad request: {exc}"}})
                return
            item = JudgeItem(item_id="0", prefix_key="0", messages=messages, allowed_scores=())
            max_tokens = int(req.get("max_tokens") or backend.max_new_tokens)
            saved = backend.max_new_tokens
            prompt_tokens = len(backend.encode(item))
            with _CONFIG_LOCK:
                backend.max_new_tokens = max_tokens
                ids = backend.generate_ids([item], share_prefix=False)[0]
                backend.max_new_tokens = saved
            eos = set(backend._eos_ids())
            finish = "stop" if ids and ids[-1] in eos else "length"
            text = backend.loaded.tokenizer.decode(
                [t for t in ids if t not in eos], skip_special_tokens=True
            )
            self._send(
                200,
                {
                    "id": f"chatcmpl-{uuid.uuid4().hex}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model_name,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": finish,
                        }
                    ],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": len(ids),
                        "total_tokens": prompt_tokens + len(ids),
                    },
                },
            )

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return ThreadingHTTPServer((host, port), Handler)


# max_new_tokens is per request; requests are serialised around it.
_CONFIG_LOCK = threading.Lock()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="OpenAI-compatible server over a local model")
    parser.add_argument("--model", required=True, help="model directory or .gguf file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-new-tokens", type=int, default=1024)
    parser.add_argument("--name", default="local-judge")
    args = parser.parse_args(argv)
    # Score constraint off: the server does not know the criterion's scale.
    backend = HFBackend(args.model, max_new_tokens=args.max_new_tokens, constrain_scores=False)
    server = make_server(backend, args.host, args.port, args.name)
    print(f"serving {args.model} on http://{args.host}:{server.server_port}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
