"""What both model-API stubs share: a threaded HTTP server on 127.0.0.1, a request log, a reply script."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

Entry = dict[str, Any]  # {"text": ...} and/or {"call": name, "args": {...}[, "namespace": ...]}


class Stub:
    """Start with `with Stub(...) as stub:`; `stub.requests` holds every request (path, headers, JSON body)."""

    def __init__(self, script: list[Entry | str] | None = None, default: str = "(nothing scripted)") -> None:
        self.script: list[Entry | str | Callable[[Any], Entry]] = list(script or [])
        self.default = default
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.server_address[1]

    def __enter__(self) -> Stub:
        owner = self

        class Handler(_Handler):
            stub = owner

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def next_entry(self, body: Any) -> Entry:
        with self.lock:
            entry = self.script.pop(0) if self.script else self.default
        if callable(entry):
            entry = entry(body)
        return {"text": entry} if isinstance(entry, str) else entry

    def record(self, handler: BaseHTTPRequestHandler, body: Any, **extra: Any) -> None:
        with self.lock:
            self.requests.append(
                {
                    "ts": time.time(),
                    "method": handler.command,
                    "path": urlsplit(handler.path).path,
                    "body": body,
                    **extra,
                }
            )

    # what a subclass answers
    def post(self, handler: _Handler, path: str, body: Any) -> None:
        raise NotImplementedError

    def get(self, handler: _Handler, path: str) -> None:
        handler.json(404, {"error": {"message": f"no GET {path}"}})


class _Handler(BaseHTTPRequestHandler):
    stub: Stub
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def json(self, code: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def sse(self, chunks: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)
            self.wfile.flush()
        self.close_connection = True

    def do_GET(self) -> None:
        self.stub.record(self, None)
        self.stub.get(self, urlsplit(self.path).path)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.stub.post(self, urlsplit(self.path).path, body)
