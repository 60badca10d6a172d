"""The Gemini API as Gemini CLI speaks it (`POST /v1beta/models/<m>:streamGenerateContent?alt=sse`), from a script.

Gemini CLI takes the address from `GOOGLE_GEMINI_BASE_URL`. A script entry gives model text
(`text`), a function call (`call`, `args`; an MCP tool is `mcp_<server>_<tool>`), or both. The
CLI's helper requests (routing, next speaker: a JSON response schema) are answered from the schema
without using the script; `countTokens` and `embedContent` get fixed answers.
"""

from __future__ import annotations

import json
from typing import Any

from .base import Entry, Stub, _Handler

USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}


class GeminiStub(Stub):
    model = "gemini-2.5-flash"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def model_requests(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if "GenerateContent" in r["path"] and not r.get("aux")]

    def get(self, handler: _Handler, path: str) -> None:
        handler.json(
            200, {"models": [{"name": f"models/{self.model}", "supportedGenerationMethods": ["generateContent"]}]}
        )

    def post(self, handler: _Handler, path: str, body: Any) -> None:
        verb = path.rsplit(":", 1)[-1] if ":" in path else ""
        body = body if isinstance(body, dict) else {}
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        aux = bool(schema) or config.get("responseMimeType") == "application/json"
        self.record(handler, body, aux=aux)
        if verb == "countTokens":
            handler.json(200, {"totalTokens": 100})
        elif verb in ("embedContent", "batchEmbedContents"):
            count = len(body.get("requests", [])) or 1
            handler.json(200, {"embedding": {"values": [0.0] * 8}, "embeddings": [{"values": [0.0] * 8}] * count})
        elif verb in ("generateContent", "streamGenerateContent"):
            entry = {"text": json.dumps(example(schema or {}))} if aux else self.next_entry(body)
            reply = {"candidates": [{"content": {"role": "model", "parts": parts(entry)}, "finishReason": "STOP",
                                     "index": 0}], "usageMetadata": USAGE, "modelVersion": self.model}  # fmt: skip
            if verb == "generateContent":
                handler.json(200, reply)
            else:
                handler.sse([b"data: " + json.dumps(reply).encode() + b"\r\n\r\n"])
        else:
            handler.json(404, {"error": {"code": 404, "message": f"no POST {path}", "status": "NOT_FOUND"}})


def parts(entry: Entry) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"text": entry["text"]}] if entry.get("text") else []
    if entry.get("call"):
        out.append({"functionCall": {"name": entry["call"], "args": entry.get("args", {})}})
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
