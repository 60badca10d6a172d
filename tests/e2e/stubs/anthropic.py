"""A stub of the Anthropic Messages API on 127.0.0.1: logs every request body, answers with scripted replies.

Claude Code (and the headless-Claude miner) talk to it through `ANTHROPIC_BASE_URL`. Standard library
only. What the model would have received is in `stub.bodies()`; replies come from, in this order:

1. the first rule whose patterns all match the request (`stub.rule(...)`, optionally limited in `times`);
2. the queue (`stub.reply(...)`), one reply per request;
3. the default reply (plain text).

A reply is a dict:

    {"text": "..."}                                  a text answer
    {"json": {...}}                                  a text answer holding that JSON (the miner's answer)
    {"tool_use": {"name": "Bash", "input": {...}}}   a tool call (also with "text" before it)
    {"tool_uses": [{...}, {...}]}                    several tool calls in one message
    {"error": {"status": 529, "type": "overloaded_error", "message": "..."}}

`POST /v1/messages` streams server-sent events (message_start, content_block_start/delta/stop,
message_delta, message_stop) when the body asks for `stream`, and answers with one JSON message
otherwise. `count_tokens` and `GET /v1/models` answer plausibly; anything else is a logged 404.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"  # never another interface
CHUNK = 40  # characters per streamed text or tool-input delta
MODELS = ("claude-opus-5-5", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001")
KEPT_HEADERS = ("user-agent", "anthropic-version", "anthropic-beta", "x-app", "x-claude-code-session-id")

Reply = dict[str, Any]


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or its text and tool-result blocks joined."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, dict) and block.get("type") == "tool_result":
            parts.append(text_of(block.get("content", "")))
    return "\n".join(parts)


def last_user_text(body: dict[str, Any]) -> str:
    """The newest user message's text (a tool result counts: it is sent as a user message)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return text_of(message.get("content"))
    return ""


def messages_text(body: dict[str, Any]) -> str:
    """Everything in `messages` as one string: where hook context lands depends on the model, so look everywhere.

    Hook context arrives as `role: system` messages on the newest models and as `<system-reminder>`
    user blocks on older ones; either way it is somewhere in here, JSON-escaped.
    """
    return json.dumps(body.get("messages") or [], ensure_ascii=False)


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every tool_result block sent back to the model in this request, oldest first."""
    return [
        block
        for message in body.get("messages") or []
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


class AnthropicStub:
    """The stub server; use as a context manager (`with AnthropicStub(log) as stub:`) or start() / stop()."""

    def __init__(self, log_path: Path | None = None, default_text: str = "OK from the stub.") -> None:
        self.log_path = log_path
        self.default: Reply = {"text": default_text}
        self.queue: list[Reply] = []
        self.rules: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- scripting ----------------------------------------------------------------------------

    def reply(self, *replies: Reply) -> None:
        """Queue replies: each answers one request that no rule matched."""
        with self._lock:
            self.queue.extend(replies)

    def rule(self, reply: Reply, *, times: int | None = None, **patterns: str) -> None:
        """Answer requests matching every pattern (regexes over `last_user`, `messages`, `system`, `model`)."""
        unknown = set(patterns) - {"last_user", "messages", "system", "model"}
        if unknown:
            raise ValueError(f"unknown rule patterns {sorted(unknown)}")
        with self._lock:
            self.rules.append({"reply": reply, "times": times, "patterns": patterns})

    # ---- what was asked -----------------------------------------------------------------------

    def bodies(self) -> list[dict[str, Any]]:
        """The body of every Messages API request so far, oldest first."""
        with self._lock:
            return [r["body"] for r in self.requests if r["path"] == "/v1/messages" and isinstance(r["body"], dict)]

    def wait_for(self, count: int, timeout: float = 30.0) -> bool:
        """Wait until `count` Messages API requests have arrived."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while sum(r["path"] == "/v1/messages" for r in self.requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
        return True

    # ---- lifecycle ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "the stub is not running"
        return f"http://{HOST}:{self._server.server_address[1]}"

    def start(self) -> AnthropicStub:
        self._server = ThreadingHTTPServer((HOST, 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="anthropic-stub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> AnthropicStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- internals ----------------------------------------------------------------------------

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)
            if self.log_path is not None:
                with open(self.log_path, "a", encoding="utf-8") as log:
                    log.write(json.dumps(entry, ensure_ascii=False) + "\n")
            self._lock.notify_all()

    def _choose(self, body: dict[str, Any]) -> tuple[Reply, str]:
        with self._lock:
            for n, rule in enumerate(self.rules):
                if rule["times"] is not None and rule["times"] <= 0:
                    continue
                if all(re.search(rx, _field(body, name), re.S) for name, rx in rule["patterns"].items()):
                    if rule["times"] is not None:
                        rule["times"] -= 1
                    return rule["reply"], f"rule {n}"
            if self.queue:
                return self.queue.pop(0), "queue"
            return self.default, "default"


def _field(body: dict[str, Any], name: str) -> str:
    if name == "last_user":
        return last_user_text(body)
    if name == "messages":
        return messages_text(body)
    if name == "system":
        return text_of(body.get("system", ""))
    return str(body.get("model", ""))


def message(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    """The complete Messages API response for a reply."""
    content: list[dict[str, Any]] = []
    if "text" in reply:
        content.append({"type": "text", "text": reply["text"]})
    if "json" in reply:
        content.append({"type": "text", "text": json.dumps(reply["json"])})
    calls = ([reply["tool_use"]] if "tool_use" in reply else []) + list(reply.get("tool_uses", []))
    for call in calls:
        content.append(
            {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": call["name"], "input": call["input"]}
        )
    out_tokens = max(1, sum(len(json.dumps(block)) for block in content) // 4)
    return {
        "id": f"msg_stub_{uuid.uuid4().hex[:20]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model") or MODELS[0],
        "content": content or [{"type": "text", "text": ""}],
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": max(1, len(json.dumps(body)) // 4),
            "output_tokens": out_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def events(msg: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server-sent events that stream `msg`, in the order the API sends them."""
    head = {**msg, "content": [], "stop_reason": None, "usage": {**msg["usage"], "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": head}
    for index, block in enumerate(msg["content"]):
        if block["type"] == "text":
            yield "content_block_start", _start(index, {"type": "text", "text": ""})
            for piece in _pieces(block["text"]):
                yield "content_block_delta", _delta(index, {"type": "text_delta", "text": piece})
        else:
            yield "content_block_start", _start(index, {**block, "input": {}})
            for piece in _pieces(json.dumps(block["input"])):
                yield "content_block_delta", _delta(index, {"type": "input_json_delta", "partial_json": piece})
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    delta = {"stop_reason": msg["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": msg["usage"]["output_tokens"]}
    yield "message_delta", {"type": "message_delta", "delta": delta, "usage": usage}
    yield "message_stop", {"type": "message_stop"}


def _start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _pieces(text: str) -> list[str]:
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]


def _handler(stub: AnthropicStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # no access log on stderr
            pass

        def do_GET(self) -> None:
            self._answer(None)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            self._answer(body)

        def _answer(self, body: Any) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            entry = {
                "ts": time.time(),
                "method": self.command,
                "path": path,
                "headers": {k.lower(): v for k, v in self.headers.items() if k.lower() in KEPT_HEADERS},
                "body": body,
            }
            try:
                if self.command == "POST" and path == "/v1/messages" and isinstance(body, dict):
                    self._messages(entry, body)
                elif self.command == "POST" and path == "/v1/messages/count_tokens":
                    stub._record(entry)
                    self._json(200, {"input_tokens": max(1, len(json.dumps(body)) // 4)})
                elif self.command == "GET" and path == "/v1/models":
                    stub._record(entry)
                    data = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                            for m in MODELS]  # fmt: skip
                    self._json(200, {"data": data, "has_more": False, "first_id": MODELS[0], "last_id": MODELS[-1]})
                else:
                    stub._record(entry)
                    error = {"type": "not_found_error", "message": f"stub: no route {self.command} {path}"}
                    self._json(404, {"type": "error", "error": error})
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a cancelled request)
                pass

        def _messages(self, entry: dict[str, Any], body: dict[str, Any]) -> None:
            reply, source = stub._choose(body)
            entry.update(reply_source=source, reply=reply)
            stub._record(entry)
            if "error" in reply:
                error = reply["error"]
                status = int(error.get("status", 500))
                detail = {"type": error.get("type", "api_error"), "message": error.get("message", "stub error")}
                self._json(status, {"type": "error", "error": detail})
                return
            msg = message(reply, body)
            if not body.get("stream"):
                self._json(200, msg)
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True
            for name, data in events(msg):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

        def _json(self, status: int, data: Any) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Handler
