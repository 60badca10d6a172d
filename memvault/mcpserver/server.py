"""The stdio MCP server (official Python SDK): tools recall, save, evolve, list, show, review_queue, inbox_queue;
the always-load set as the resource `memvault://always-load`. Each call logs one line to the hook log."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, TypeVar

from memvault import runtime
from memvault.errors import MemvaultError
from memvault.store.model import INBOX, REVIEW

from . import tools

T = TypeVar("T")
INSTRUCTIONS = (
    "MemoryVault is the user's permanent memory, kept as markdown notes in their Obsidian vault and shared by "
    "every coding agent they use. Call `recall` with the topic at hand before relying on assumptions about the "
    "user's preferences, conventions, past fixes or decisions. Save what the user states as a lasting "
    "preference or decision with `save` (kind: preference, workflow, fix, domain, …); supersede an outdated "
    "entry with `evolve` instead of writing a second one. Never store secrets."
)


def build() -> Any:
    """The configured server; raises ImportError with the install hint when the SDK is missing."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp_types import ToolAnnotations
    except ImportError as exc:
        raise ImportError(
            "memvault mcp needs the MCP SDK: pip install 'memvault[mcp]' (./install.sh installs it)"
        ) from exc

    server = MCPServer("memvault", instructions=INSTRUCTIONS, log_level="WARNING")
    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writing = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

    def call(name: str, work: Callable[[], T], record: dict[str, Any] | None = None) -> T:
        started = time.monotonic()
        record = record if record is not None else {}
        record.update(hook=f"mcp:{name}", host="mcp", result="success")
        try:
            return work()
        except MemvaultError as exc:
            said = tools.refusal(exc)
            record.update(result="refused", reason=said[:300])
            raise ToolError(said) from None
        finally:
            record["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
            with contextlib.suppress(OSError):
                runtime.log_event(record)

    @server.tool(annotations=reading)
    def recall(query: str, k: int = 5, group: str | None = None, team: bool = False) -> str:
        """Search the user's MemoryVault for notes relevant to `query` (meaning and keywords combined);
        with team=true, the team's shared notes on the team's server instead."""
        record: dict[str, Any] = {}

        def work() -> str:
            if team:
                text, found = tools.team_recall(tools.open_memory(), query, k)
                record["team"] = True
                return text
            text, found = tools.recall(tools.open_memory(), query, k, group)
            record["injected"] = [{"path": p} for p in found]  # what recall analytics count, as for the hooks
            return text

        return call("recall", work, record)

    @server.tool(annotations=writing)
    def save(
        kind: str,
        slug: str,
        body: str,
        tags: list[str] | None = None,
        group: str | None = None,
        always_load: bool = False,
        private: bool = False,
        replace: bool = False,
    ) -> str:
        """Write a new entry MemoryVault/<group>/<kind>/<slug>.md (markdown body; a `# Title` line first).

        kind: preference, workflow, fix, domain, decision, … ; slug: lowercase-with-dashes. Refused when
        the entry exists (use `evolve`), or when the text holds a secret. With always_load, or a text
        that reads like a risky standing instruction, the entry waits in the user's review instead.
        """
        return call("save", lambda: tools.save(tools.open_memory(), kind, slug, body, tags=tags or (), group=group,
                                               always_load=always_load, private=private, replace=replace))  # fmt: skip

    @server.tool(annotations=writing)
    def evolve(old_path: str, body: str, reason: str, slug: str | None = None) -> str:
        """Supersede an outdated entry: the new text takes its place, the old one is archived with `reason`."""
        return call("evolve", lambda: tools.evolve(tools.open_memory(), old_path, body, reason, slug))

    @server.tool(name="list", annotations=reading)
    def list_(kind: str | None = None, group: str | None = None, status: str | None = None) -> list[dict[str, Any]]:
        """List the memory's entries (path, title, kind, status, group, tags); private ones are never listed."""
        return call("list", lambda: tools.list_entries(tools.open_memory(), kind, group, status))

    @server.tool(annotations=reading)
    def show(path: str) -> str:
        """One note in full (vault-relative path, e.g. from `recall` or `list`); private notes are refused."""
        return call("show", lambda: tools.show(tools.open_memory(), path))

    @server.tool(annotations=reading)
    def review_queue() -> list[dict[str, Any]]:
        """Captures waiting for the user's review (`memvault review` sorts them)."""
        return call("review_queue", lambda: tools.queue(tools.open_memory(), REVIEW))

    @server.tool(annotations=reading)
    def inbox_queue() -> list[dict[str, Any]]:
        """Low-confidence captures in the inbox (`memvault inbox` sorts them)."""
        return call("inbox_queue", lambda: tools.queue(tools.open_memory(), INBOX))

    @server.resource("memvault://always-load", name="always-load", mime_type="text/markdown")
    def always_load() -> str:
        """The notes every session starts with."""
        return call("always_load", lambda: tools.always_load(tools.open_memory()))

    return server


def run() -> None:
    build().run("stdio")
