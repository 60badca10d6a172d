"""The OpenAI Responses API as Codex CLI speaks it (`POST /v1/responses`, server-sent events), answered from a script.

Codex needs a custom provider for it (`wire_api = "responses"`, `supports_websockets = false`).
Replies are scripted as for every stub (`stubs/base.py`): an assistant message (`text`, `json`),
function calls (`call`, `args`, and for an MCP tool its `namespace`, e.g. `mcp__memvault`), or both.
The TUI's title request (no tools, a JSON schema with one `title` property) is a helper request,
answered without using the script.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from .base import Reply, Stub, _Handler, calls, texts


class ResponsesStub(Stub):
    """The Responses API; `with ResponsesStub(script) as stub:`, give Codex `stub.base_url` (it ends in /v1)."""

    name = "responses"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def post(self, handler: _Handler, path: str, body: Any) -> None:
        if not path.endswith("/responses") or not isinstance(body, dict):
            self.not_found(handler, body)
            return
        fmt = (body.get("text") or {}).get("format") or {}
        helper = fmt.get("type") == "json_schema" and not body.get("tools")
        reply = self.turn(handler, body, helper={"json": {"title": "title"}} if helper else None)
        if reply is not None:
            handler.events(self.events(reply, body))

    def events(self, reply: Reply, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        rid = f"resp_{next(self.ids)}"
        base = {"id": rid, "object": "response", "model": body.get("model", "stub"), "status": "in_progress"}
        out = [event("response.created", response={**base, "output": []})]
        items: list[dict[str, Any]] = []
        if texts(reply):
            text, mid = "\n".join(texts(reply)), f"msg_{next(self.ids)}"
            content = [{"type": "output_text", "text": text, "annotations": []}]
            item = {"type": "message", "id": mid, "role": "assistant", "status": "completed", "content": content}
            at = {"output_index": len(items)}
            out.append(event("response.output_item.added", **at, item={**item, "status": "in_progress", "content": []}))
            out.append(event("response.output_text.delta", **at, item_id=mid, content_index=0, delta=text))
            out.append(event("response.output_item.done", **at, item=item))
            items.append(item)
        for call in calls(reply):
            arguments = json.dumps(call["args"])
            item = {"type": "function_call", "id": f"fc_{next(self.ids)}", "call_id": f"call_{next(self.ids)}",
                    "name": call["name"], "arguments": arguments, "status": "completed"}  # fmt: skip
            if call["namespace"]:
                item["namespace"] = call["namespace"]  # an MCP tool: `mcp__<server>`
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
