"""The OpenAI Responses API as Codex CLI speaks it (`POST /v1/responses`, server-sent events), answered from a script.

Codex needs a custom provider for it (`wire_api = "responses"`, `supports_websockets = false`).
A script entry gives an assistant message (`text`), one function call (`call`, `args`, and for an
MCP tool its `namespace`, e.g. `mcp__memvault`), or both. The TUI's title request (no tools, a JSON
schema with one `title` property) is answered without using the script.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from .base import Entry, Stub, _Handler


class ResponsesStub(Stub):
    def __init__(self, script: list[Entry | str] | None = None, default: str = "(nothing scripted)") -> None:
        super().__init__(script, default)
        self.ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def model_requests(self) -> list[dict[str, Any]]:
        """The bodies of the turn requests, in order (what the model would have been given)."""
        return [r["body"] for r in self.requests if r["path"].endswith("/responses") and not r.get("aux")]

    def post(self, handler: _Handler, path: str, body: Any) -> None:
        if not path.endswith("/responses"):
            self.record(handler, body)
            handler.json(404, {"error": {"message": f"no POST {path}"}})
            return
        body = body if isinstance(body, dict) else {}
        fmt = (body.get("text") or {}).get("format") or {}
        aux = fmt.get("type") == "json_schema" and not body.get("tools")
        self.record(handler, body, aux=aux)
        entry = {"text": json.dumps({"title": "title"})} if aux else self.next_entry(body)
        handler.sse(
            [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in self.events(entry, body)]
        )

    def events(self, entry: Entry, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        rid = f"resp_{next(self.ids)}"
        base = {"id": rid, "object": "response", "model": body.get("model", "stub"), "status": "in_progress",
                "output": []}  # fmt: skip
        out: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"type": "response.created", "response": base}),
        ]
        items: list[dict[str, Any]] = []
        if entry.get("text"):
            text = entry["text"]
            item = {"type": "message", "id": f"msg_{next(self.ids)}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip
            index = len(items)
            out.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                                       "item": {**item, "status": "in_progress", "content": []}}))  # fmt: skip
            out.append(("response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"],
                                                       "output_index": index, "content_index": 0, "delta": text}))  # fmt: skip
            out.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                                      "item": item}))  # fmt: skip
            items.append(item)
        if entry.get("call"):
            args = entry.get("args", {})
            item = {"type": "function_call", "id": f"fc_{next(self.ids)}", "call_id": f"call_{next(self.ids)}",
                    "name": entry["call"], "arguments": json.dumps(args), "status": "completed"}  # fmt: skip
            if entry.get("namespace"):
                item["namespace"] = entry["namespace"]
            out.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": len(items),
                                                      "item": item}))  # fmt: skip
            items.append(item)
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110}  # fmt: skip
        out.append(("response.completed", {"type": "response.completed",
                                           "response": {**base, "status": "completed", "output": items, "usage": usage}}))  # fmt: skip
        return out
