"""The model-API stubs on their own (no client needed): replies, streaming, rules, errors, delays, logging."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.e2e.stubs.anthropic import AnthropicStub
from tests.e2e.stubs.gemini import GeminiStub
from tests.e2e.stubs.openai_responses import ResponsesStub


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
        stub.reply({"text": "hello"}, {"text": "calling", "call": "Bash", "args": {"command": "ls"}})
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


def test_errors_delays_several_calls_and_computed_replies() -> None:
    with AnthropicStub() as stub:
        stub.reply(
            {"error": {"status": 529, "type": "overloaded_error", "message": "busy"}},
            {"text": "late", "delay": 0.5},
            {"calls": [{"call": "Read", "args": {"file_path": "a"}}, {"call": "Read", "args": {"file_path": "b"}}]},
            lambda body: f"you asked for {body['model']}",
        )
        ask = {"model": "opus", "messages": []}
        status, _, raw = call(f"{stub.url}/v1/messages", ask)
        error = json.loads(raw)
        assert status == 529 and error == {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
        started = time.monotonic()
        late = json.loads(post(f"{stub.url}/v1/messages", ask)[1])
        assert late["content"][0]["text"] == "late" and time.monotonic() - started >= 0.5
        both = json.loads(post(f"{stub.url}/v1/messages", ask)[1])
        assert [(b["type"], b["input"]) for b in both["content"]] == [("tool_use", {"file_path": p}) for p in "ab"]
        computed = json.loads(post(f"{stub.url}/v1/messages", ask)[1])
        assert computed["content"][0]["text"] == "you asked for opus"
        assert [r["reply_source"] for r in stub.requests] == ["queue"] * 4 and len(stub.bodies()) == 4


def test_the_codex_and_gemini_stubs_take_the_same_replies_and_keep_helper_requests_out_of_the_turns() -> None:
    reply = {"json": {"candidates": []}, "call": "save", "args": {"slug": "x"}, "namespace": "mcp__memvault"}
    with ResponsesStub([reply]) as stub:
        title = {"text": {"format": {"type": "json_schema", "schema": {}}}, "input": []}
        [titled] = responses_output(post(f"{stub.base_url}/responses", title)[1])
        assert json.loads(titled["content"][0]["text"]) == {"title": "title"}  # answered beside the script
        message, function_call = responses_output(post(f"{stub.base_url}/responses", {"input": [], "tools": [{}]})[1])
        assert json.loads(message["content"][0]["text"]) == {"candidates": []}
        assert (function_call["name"], function_call["namespace"]) == ("save", "mcp__memvault")
        assert json.loads(function_call["arguments"]) == {"slug": "x"}
        assert [r["reply_source"] for r in stub.requests] == ["helper", "queue"] and len(stub.bodies()) == 1

    with GeminiStub([reply]) as stub:
        schema = {"type": "object", "properties": {"model": {"enum": ["flash"]}}}
        model = f"{stub.base_url}/v1beta/models/{stub.model}"
        routed = json.loads(post(f"{model}:generateContent", {"generationConfig": {"responseJsonSchema": schema}})[1])
        assert json.loads(gemini_parts(routed)[0]["text"]) == {"model": "flash"}  # answered from the schema
        kind, raw = post(f"{model}:streamGenerateContent?alt=sse", {"contents": []})
        parts = gemini_parts(json.loads(raw.removeprefix("data: ")))
        assert kind == "text/event-stream" and json.loads(parts[0]["text"]) == {"candidates": []}
        assert parts[1] == {"functionCall": {"name": "save", "args": {"slug": "x"}}}
        assert call(f"{model}:nothing", {})[0] == 404
        assert [r.get("reply_source") for r in stub.requests] == ["helper", "queue", None] and len(stub.bodies()) == 1


def responses_output(raw: str) -> list[dict[str, Any]]:
    """The output items of a streamed Responses answer (from its `response.completed` event)."""
    [completed] = [data for name, data in events(raw) if name == "response.completed"]
    return list(completed["response"]["output"])


def gemini_parts(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return list(answer["candidates"][0]["content"]["parts"])
