"""A real HTTP server on 127.0.0.1:0 that speaks Ollama's ``POST /api/chat`` (non-streaming).

It answers every chat with ``content`` (or ``status`` with an Ollama-style error body) and keeps
the requests it received, so tests can see what the analyzer sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ChatServer(ThreadingHTTPServer):
    def __init__(self, content: str) -> None:
        super().__init__(("127.0.0.1", 0), _ChatHandler)
        self.requests: list[dict[str, Any]] = []
        self.content = content
        self.status = 200

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ChatHandler(BaseHTTPRequestHandler):
    server: ChatServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, **body})
        if self.path != "/api/chat":
            self._send(404, {"error": f"no route {self.path}"})
        elif self.server.status != 200:
            self._send(self.server.status, {"error": f"model '{body.get('model')}' not found"})
        else:
            self._send(200, {
                "model": body["model"], "created_at": "2026-11-29T15:00:00Z",
                "message": {"role": "assistant", "content": self.server.content},
                "done": True, "done_reason": "stop", "prompt_eval_count": 321, "eval_count": 87,
            })  # fmt: skip

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def running_chat_server(content: str) -> Iterator[ChatServer]:
    server = ChatServer(content)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
