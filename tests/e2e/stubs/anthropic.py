"""A stub of the Anthropic Messages API on 127.0.0.1 for Claude Code and the Claude miner, on the shared stub base.

Claude Code (and the Claude miner's `claude -p`) talk to it through `ANTHROPIC_BASE_URL`. Replies are
scripted as for every stub (`stubs/base.py`: text, the miner's JSON, tool calls, errors, delays);
rules may match `last_user` (the newest user message's text, tool results included), `messages`
(all messages as JSON: hook context lands in different places on different models), `system`
and `model`. What the model would have received is in `stub.bodies()`.

`POST /v1/messages` streams server-sent events (message_start, content_block_start/delta/stop,
message_delta, message_stop) when the body asks for `stream`, and answers with one JSON message
otherwise. `count_tokens` and `GET /v1/models` answer plausibly; anything else is a logged 404.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from .base import Reply, Stub, _Handler, calls, texts

CHUNK = 40  # characters per streamed text or tool-input delta
MODELS = ("claude-opus-5-5", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001")
KEPT_HEADERS = ("user-agent", "anthropic-version", "anthropic-beta", "x-app", "x-claude-code-session-id")


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


class AnthropicStub(Stub):
    """The Messages API; `with AnthropicStub(log_path=tmp / "requests.jsonl") as stub:`, give the client `stub.url`."""

    FIELDS = ("last_user", "messages", "system", "model")
    HEADERS = KEPT_HEADERS
    name = "anthropic"

    def field(self, body: dict[str, Any], name: str) -> str:
        if name == "last_user":
            return last_user_text(body)
        if name == "messages":
            return messages_text(body)
        if name == "system":
            return text_of(body.get("system", ""))
        return str(body.get("model", ""))

    def error_body(self, status: int, error: dict[str, Any]) -> dict[str, Any]:
        detail = {"type": error.get("type", "api_error"), "message": error.get("message", "stub error")}
        return {"type": "error", "error": detail}

    def post(self, handler: _Handler, path: str, body: Any) -> None:
        if path == "/v1/messages" and isinstance(body, dict):
            reply = self.turn(handler, body)
            if reply is None:  # an error was sent
                return
            msg = message(reply, body)
            if body.get("stream"):
                handler.events(events(msg))
            else:
                handler.json(200, msg)
        elif path == "/v1/messages/count_tokens":
            self.record(handler, body)
            handler.json(200, {"input_tokens": max(1, len(json.dumps(body)) // 4)})
        else:
            self.not_found(handler, body)

    def get(self, handler: _Handler, path: str) -> None:
        if path == "/v1/models":
            self.record(handler, None)
            data = [model_info(m) for m in MODELS]
            handler.json(200, {"data": data, "has_more": False, "first_id": MODELS[0], "last_id": MODELS[-1]})
        elif path.startswith("/v1/models/"):
            self.record(handler, None)
            handler.json(200, model_info(path.rsplit("/", 1)[1]))
        else:
            self.not_found(handler)


def model_info(model: str) -> dict[str, Any]:
    return {"type": "model", "id": model, "display_name": model, "created_at": "2025-01-01T00:00:00Z"}


def message(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    """The complete Messages API response for a reply."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text} for text in texts(reply)]
    made = calls(reply)
    for call in made:
        content.append(
            {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": call["name"], "input": call["args"]}
        )
    out_tokens = max(1, sum(len(json.dumps(block)) for block in content) // 4)
    return {
        "id": f"msg_stub_{uuid.uuid4().hex[:20]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model") or MODELS[0],
        "content": content or [{"type": "text", "text": ""}],
        "stop_reason": "tool_use" if made else "end_turn",
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
