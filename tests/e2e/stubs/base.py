"""What every model-API stub shares: a threaded HTTP server on 127.0.0.1, the request log, the scripted replies.

A subclass speaks one API (`AnthropicStub`, `ResponsesStub`, `GeminiStub`); all of them take replies
in the same words and answer them in their API's shape, streamed (server-sent events) or whole:

    {"text": "..."}                                  the model's text
    {"json": {...}}                                  the model's text holding that JSON (the Claude miner's answer)
    {"call": "Bash", "args": {...}}                  one tool call (Codex's MCP tools add "namespace": "mcp__memvault")
    {"calls": [{"call": ..., "args": ...}, ...]}     several tool calls in one answer (also after "text" or "call")
    {"error": {"status": 529, "type": "overloaded_error", "message": "..."}}   an API error instead
    "delay": seconds (beside any of them)            wait that long before answering (a late model)

A bare string is `{"text": string}`; a callable is called with the request body and gives the reply.
Each model turn takes, in this order: the first rule whose patterns all match (`stub.rule(...)`,
optionally `times` limited), else the next queued reply (`stub.reply(...)`, or the script given at
start), else the default text. Helper requests a client makes beside the turns (titles, routing) are
answered by the subclass without using the script, and are not turns.

Every request is kept in `stub.requests` (method, path, chosen headers, body, the reply and where it
came from) and, given `log_path`, appended to that JSONL file; `stub.bodies()` are the turns' bodies:
what the model would have received.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HOST = "127.0.0.1"  # never another interface
DEFAULT = "OK from the stub."  # the text of a turn nothing was scripted for
Reply = dict[str, Any]
Scripted = Reply | str | Callable[[Any], Reply | str]


def texts(reply: Reply) -> list[str]:
    """The texts a reply gives the model's answer: its `text`, then its `json` as text."""
    return ([str(reply["text"])] if "text" in reply else []) + ([json.dumps(reply["json"])] if "json" in reply else [])


def calls(reply: Reply) -> list[dict[str, Any]]:
    """The tool calls a reply makes, in order: {"name", "args", "namespace" (or None)}."""
    made = ([reply] if "call" in reply else []) + list(reply.get("calls", []))
    return [{"name": c["call"], "args": c.get("args", {}), "namespace": c.get("namespace")} for c in made]


class Stub:
    """Start with `with SomeStub(...) as stub:` (or start() / stop()); give the client `stub.base_url`."""

    FIELDS: tuple[str, ...] = ("body",)  # what a rule's patterns may match (`field` reads them from a body)
    HEADERS: tuple[str, ...] = ("user-agent",)  # request headers kept in the log
    name = "stub"

    def __init__(
        self, script: Iterable[Scripted] | None = None, *, log_path: Path | None = None, default: str = DEFAULT
    ) -> None:
        self.queue: list[Scripted] = list(script or [])
        self.rules: list[dict[str, Any]] = []
        self.default: Reply = {"text": default}
        self.log_path = log_path
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Condition()
        self.server: ThreadingHTTPServer | None = None

    # ---- scripting ----------------------------------------------------------------------------

    def reply(self, *replies: Scripted) -> None:
        """Queue replies: each answers one model turn that no rule matched."""
        with self.lock:
            self.queue.extend(replies)

    def rule(self, reply: Reply, *, times: int | None = None, **patterns: str) -> None:
        """Answer turns whose fields match every pattern (regexes over the fields in FIELDS) with `reply`."""
        unknown = set(patterns) - set(self.FIELDS)
        if unknown:
            raise ValueError(f"unknown rule patterns {sorted(unknown)}; {self.name} knows {list(self.FIELDS)}")
        with self.lock:
            self.rules.append({"reply": reply, "times": times, "patterns": patterns})

    def field(self, body: dict[str, Any], name: str) -> str:
        """A rule's field of a request body; a subclass adds its API's own."""
        return json.dumps(body, ensure_ascii=False)

    # ---- what was asked -----------------------------------------------------------------------

    def bodies(self) -> list[dict[str, Any]]:
        """The body of every model turn so far, oldest first: what the model would have received."""
        with self.lock:
            return [r["body"] for r in self.requests if _is_turn(r)]

    def wait_for(self, count: int, timeout: float = 30.0) -> bool:
        """Wait until `count` model turns have arrived."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while sum(map(_is_turn, self.requests)) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.lock.wait(left)
        return True

    # ---- lifecycle ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self.server is not None, f"the {self.name} stub is not running"
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def base_url(self) -> str:
        """The address the client is given (a subclass adds the API's path prefix where the client expects it)."""
        return self.url

    def start(self) -> Stub:
        owner = self

        class Handler(_Handler):
            stub = owner

        self.server = ThreadingHTTPServer((HOST, 0), Handler)
        self.server.daemon_threads = True  # a delayed reply's thread never holds up stop()
        threading.Thread(target=self.server.serve_forever, name=f"{self.name}-stub", daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def __enter__(self) -> Stub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- for the subclasses -------------------------------------------------------------------

    def turn(self, handler: _Handler, body: Any, helper: Reply | None = None) -> Reply | None:
        """Log a model turn with the reply it gets (`helper`: answered beside the script, not a turn).

        Waits the reply's `delay`; sends its `error` and returns None, else returns the reply to answer.
        """
        reply, source = (helper, "helper") if helper is not None else self._choose(body)
        self.record(handler, body, reply=reply, reply_source=source)
        if reply.get("delay"):
            time.sleep(float(reply["delay"]))
        if "error" in reply:
            status = int(reply["error"].get("status", 500))
            handler.json(status, self.error_body(status, reply["error"]))
            return None
        return reply

    def record(self, handler: BaseHTTPRequestHandler, body: Any, **extra: Any) -> None:
        """Log one request (and append it to the log file)."""
        entry = {
            "ts": time.time(),
            "method": handler.command,
            "path": _path(handler),
            "headers": {k.lower(): v for k, v in handler.headers.items() if k.lower() in self.HEADERS},
            "body": body,
            **extra,
        }
        with self.lock:
            self.requests.append(entry)
            if self.log_path is not None:
                with open(self.log_path, "a", encoding="utf-8") as log:
                    log.write(json.dumps(entry, ensure_ascii=False) + "\n")
            self.lock.notify_all()

    def not_found(self, handler: _Handler, body: Any = None) -> None:
        """Log a request the API does not have, and answer 404 in the API's error shape."""
        self.record(handler, body)
        message = f"{self.name} stub: no route {handler.command} {_path(handler)}"
        handler.json(404, self.error_body(404, {"type": "not_found_error", "message": message}))

    def error_body(self, status: int, error: dict[str, Any]) -> dict[str, Any]:
        """An API error's JSON body; a subclass gives its API's shape."""
        return {"error": {"code": status, "type": error.get("type", "api_error"), "message": error.get("message", "")}}

    # what a subclass answers
    def post(self, handler: _Handler, path: str, body: Any) -> None:
        self.not_found(handler, body)

    def get(self, handler: _Handler, path: str) -> None:
        self.not_found(handler)

    # ---- internals ----------------------------------------------------------------------------

    def _choose(self, body: Any) -> tuple[Reply, str]:
        fields = body if isinstance(body, dict) else {}
        with self.lock:
            for n, rule in enumerate(self.rules):
                if rule["times"] is not None and rule["times"] <= 0:
                    continue
                if all(re.search(rx, self.field(fields, name), re.S) for name, rx in rule["patterns"].items()):
                    if rule["times"] is not None:
                        rule["times"] -= 1
                    return rule["reply"], f"rule {n}"
            scripted, source = (self.queue.pop(0), "queue") if self.queue else (self.default, "default")
        if callable(scripted):
            scripted = scripted(body)
        return ({"text": scripted} if isinstance(scripted, str) else scripted), source


def _is_turn(record: dict[str, Any]) -> bool:
    return record.get("reply_source") not in (None, "helper")


def _path(handler: BaseHTTPRequestHandler) -> str:
    return urlsplit(handler.path).path.rstrip("/") or "/"


class _Handler(BaseHTTPRequestHandler):
    stub: Stub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # no access log on stderr
        pass

    def json(self, status: int, data: Any) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def sse(self, chunks: Iterable[bytes]) -> None:
        """A server-sent event stream, written as it is made; the connection closes after it."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        for chunk in chunks:
            self.wfile.write(chunk)
            self.wfile.flush()

    def events(self, named: Iterable[tuple[str, Any]]) -> None:
        """Named server-sent events (`event: NAME`, `data: JSON`), as the Anthropic and OpenAI APIs stream."""
        self.sse(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in named)

    def do_GET(self) -> None:
        self._serve(None)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self._serve(body)

    def _serve(self, body: Any) -> None:
        try:
            if self.command == "GET":
                self.stub.get(self, _path(self))
            else:
                self.stub.post(self, _path(self), body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a cancelled request)
            pass
