"""The Gemini API as Gemini CLI speaks it (`POST /v1beta/models/<m>:streamGenerateContent?alt=sse`), from a script.

Gemini CLI takes the address from `GOOGLE_GEMINI_BASE_URL`. Replies are scripted as for every stub
(`stubs/base.py`): model text (`text`, `json`), function calls (`call`, `args`; an MCP tool is
`mcp_<server>_<tool>`), or both. The CLI's helper requests (routing, next speaker: a JSON response
schema) are answered from the schema without using the script; `countTokens` and `embedContent` get
fixed answers.
"""

from __future__ import annotations

import json
from typing import Any

from .base import Reply, Stub, _Handler, calls, texts

USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}


class GeminiStub(Stub):
    """The Gemini API; `with GeminiStub(script) as stub:`, give Gemini CLI `stub.base_url`."""

    model = "gemini-2.5-flash"
    name = "gemini"

    def error_body(self, status: int, error: dict[str, Any]) -> dict[str, Any]:
        return {"error": {"code": status, "message": error.get("message", "stub error"), "status": error.get("type")}}

    def get(self, handler: _Handler, path: str) -> None:
        self.record(handler, None)
        handler.json(
            200, {"models": [{"name": f"models/{self.model}", "supportedGenerationMethods": ["generateContent"]}]}
        )

    def post(self, handler: _Handler, path: str, body: Any) -> None:
        verb = path.rsplit(":", 1)[-1] if ":" in path else ""
        if not isinstance(body, dict) or verb not in ("countTokens", "embedContent", "batchEmbedContents",
                                                      "generateContent", "streamGenerateContent"):  # fmt: skip
            self.not_found(handler, body)
        elif verb == "countTokens":
            self.record(handler, body)
            handler.json(200, {"totalTokens": 100})
        elif verb in ("embedContent", "batchEmbedContents"):
            self.record(handler, body)
            count = len(body.get("requests", [])) or 1
            handler.json(200, {"embedding": {"values": [0.0] * 8}, "embeddings": [{"values": [0.0] * 8}] * count})
        else:
            config = body.get("generationConfig") or {}
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
            helper = bool(schema) or config.get("responseMimeType") == "application/json"
            reply = self.turn(handler, body, helper={"json": example(schema or {})} if helper else None)
            if reply is None:  # an error was sent
                return
            answer = {"candidates": [{"content": {"role": "model", "parts": parts(reply)}, "finishReason": "STOP",
                                      "index": 0}], "usageMetadata": USAGE, "modelVersion": self.model}  # fmt: skip
            if verb == "generateContent":
                handler.json(200, answer)
            else:
                handler.sse([b"data: " + json.dumps(answer).encode() + b"\r\n\r\n"])


def parts(reply: Reply) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"text": text} for text in texts(reply)]
    out += [{"functionCall": {"name": call["name"], "args": call["args"]}} for call in calls(reply)]
    return out or [{"text": ""}]


def example(schema: dict[str, Any]) -> Any:
    """A value that satisfies a helper request's JSON schema (enums: the first; numbers: the minimum)."""
    kind = str(schema.get("type", "")).lower()
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object" or "properties" in schema:
        return {k: example(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "stub"
