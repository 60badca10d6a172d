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
        base = {"id": rid, "object": "response", "model": body.get("model", "stub"), "status": "in_progress"}
        out = [event("response.created", response={**base, "output": []})]
        items: list[dict[str, Any]] = []
        if entry.get("text"):
            text, mid = entry["text"], f"msg_{next(self.ids)}"
            content = [{"type": "output_text", "text": text, "annotations": []}]
            item = {"type": "message", "id": mid, "role": "assistant", "status": "completed", "content": content}
            at = {"output_index": len(items)}
            out.append(event("response.output_item.added", **at, item={**item, "status": "in_progress", "content": []}))
            out.append(event("response.output_text.delta", **at, item_id=mid, content_index=0, delta=text))
            out.append(event("response.output_item.done", **at, item=item))
            items.append(item)
        if entry.get("call"):
            arguments = json.dumps(entry.get("args", {}))
            item = {"type": "function_call", "id": f"fc_{next(self.ids)}", "call_id": f"call_{next(self.ids)}",
                    "name": entry["call"], "arguments": arguments, "status": "completed"}  # fmt: skip
            if entry.get("namespace"):
                item["namespace"] = entry["namespace"]  # an MCP tool: `mcp__<server>`
            out.append(event("response.output_item.done", output_index=len(items), item=item))
            items.append(item)
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110}  # fmt: skip
        out.append(
            event("response.completed", response={**base, "status": "completed", "output": items, "usage": usage})
        )
        return out


def event(name: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    return name, {"type": name, **fields}
