"""The Anthropic Messages API stub on its own (no client needed): replies, streaming, rules, logging."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.e2e.stubs.anthropic import AnthropicStub


def call(url: str, body: dict[str, Any] | None = None) -> tuple[int, str, str]:
    """(status, content type, text) of one request: POST with a JSON body, GET without."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    if body is None:
        connection.request("GET", path)
    else:
        connection.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    response = connection.getresponse()
    try:
        return response.status, response.headers["content-type"], response.read().decode()
    finally:
        connection.close()


def post(url: str, body: dict[str, Any]) -> tuple[str, str]:
    status, kind, text = call(url, body)
    assert status == 200, text
    return kind, text


def events(raw: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for chunk in raw.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in chunk.splitlines())
        out.append((fields["event"], json.loads(fields["data"])))
    return out


def test_plain_and_streamed_replies_in_order_with_every_request_logged(tmp_path: Path) -> None:
    with AnthropicStub(log_path=tmp_path / "requests.jsonl") as stub:
        stub.reply({"text": "hello"}, {"text": "calling", "tool_use": {"name": "Bash", "input": {"command": "ls"}}})
        kind, raw = post(
            f"{stub.url}/v1/messages?beta=true", {"model": "m", "messages": [{"role": "user", "content": "q"}]}
        )
        message = json.loads(raw)
        assert kind == "application/json" and message["content"] == [{"type": "text", "text": "hello"}]
        assert message["stop_reason"] == "end_turn" and message["model"] == "m"

        kind, raw = post(f"{stub.url}/v1/messages", {"model": "m", "stream": True, "messages": []})
        streamed = events(raw)
        names = [name for name, _ in streamed]
        assert (
            kind == "text/event-stream"
            and names[0] == "message_start"
            and names[-2:] == ["message_delta", "message_stop"]
        )
        tool_input = "".join(d["delta"].get("partial_json", "") for n, d in streamed if n == "content_block_delta")
        assert json.loads(tool_input) == {"command": "ls"} and streamed[-2][1]["delta"]["stop_reason"] == "tool_use"

        kind, raw = post(f"{stub.url}/v1/messages", {"model": "m", "messages": []})
        assert json.loads(raw)["content"][0]["text"] == "OK from the stub."  # the queue is empty: the default
    logged = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert [entry["reply_source"] for entry in logged] == ["queue", "queue", "default"]
    assert len(stub.bodies()) == 3 and stub.bodies()[0]["messages"][0]["content"] == "q"


def test_rules_come_before_the_queue_and_can_be_used_up() -> None:
    with AnthropicStub() as stub:
        stub.rule({"json": {"candidates": []}}, times=1, last_user="extract long-term memory")
        stub.reply({"text": "queued"})
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "extract long-term memory"}]}],
        }
        assert json.loads(json.loads(post(f"{stub.url}/v1/messages", body)[1])["content"][0]["text"]) == {
            "candidates": []
        }
        assert json.loads(post(f"{stub.url}/v1/messages", body)[1])["content"][0]["text"] == "queued"
        with pytest.raises(ValueError):
            stub.rule({"text": "x"}, prompt="not a pattern the stub knows")


def test_token_count_models_and_unknown_routes() -> None:
    with AnthropicStub() as stub:
        assert json.loads(post(f"{stub.url}/v1/messages/count_tokens", {"messages": []})[1])["input_tokens"] > 0
        assert json.loads(call(f"{stub.url}/v1/models")[2])["data"]
        assert call(f"{stub.url}/v1/other")[0] == 404
        assert [r["path"] for r in stub.requests] == ["/v1/messages/count_tokens", "/v1/models", "/v1/other"]
