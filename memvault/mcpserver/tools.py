"""What each MCP tool does, as plain functions over a Vault: the CLI's rules, told in text an agent reads.

No MCP import here (`mcpserver.server` registers these with the SDK), so the rules are testable on
their own. An agent sees only the memory (`MemoryVault/`), never a private note or a `<private>`
span; every write goes through `Vault` (safety checks, secret scan, journal, git commit, index).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from memvault import config as config_mod
from memvault.errors import MemvaultError
from memvault.reflect import review
from memvault.store import privacy
from memvault.store.model import INBOX, REVIEW
from memvault.vault.core import Vault, open_vault

SOURCE = "mcp"  # provenance of entries an agent saves through the server
ALWAYS_CHARS = 20_000  # the always-load resource, like SessionStart's context, is capped


class Refused(MemvaultError):
    """A request the server declines (private note, outside the memory, memory switched off)."""


def open_memory() -> Vault:
    """The configured vault, opened afresh per call (config edits and crash recovery apply at once)."""
    config = config_mod.load()
    if not config.memory.enabled:
        raise Refused("MemoryVault is switched off on this machine (memory.enabled: false)", code="disabled")
    return open_vault(config=config)


def recall(vault: Vault, query: str, k: int | None = None, group: str | None = None) -> tuple[str, list[str]]:
    """The notes that match `query`, best first, as lines for the model; and their paths (for the log)."""
    if not query.strip():
        raise Refused("give a query: what the notes should be about", code="usage")
    wait = 10.0 if vault.config.embedding.warm_service else 0.0
    result = vault.recall(query, k, group=group, wait_service=wait)
    if not result.hits:
        return f"No MemoryVault notes match {query!r}.", []
    lines = [f"MemoryVault notes for {query!r} (most relevant first; `show` gives a whole note):"]
    for hit in result.hits:
        where = f"{hit.path} › {hit.heading}" if hit.heading else hit.path
        lines.append(f"- {hit.title} ({where}): {' '.join(privacy.strip_private(hit.snippet).split())}")
    return "\n".join(lines), [h.path for h in result.hits]


def save(
    vault: Vault,
    kind: str,
    slug: str,
    body: str,
    *,
    tags: Sequence[str] = (),
    group: str | None = None,
    always_load: bool = False,
    private: bool = False,
    replace: bool = False,
) -> str:
    result = vault.save(kind, slug, body, group=group, tags=tags, always_load=always_load, private=private,
                        replace=replace, source=SOURCE)  # fmt: skip
    return _written("saved", result)


def evolve(vault: Vault, old_path: str, body: str, reason: str, slug: str | None = None) -> str:
    _check_memory(vault, old_path)
    return _written("evolved", vault.evolve(old_path, body, reason=reason, slug=slug, source=SOURCE))


def list_entries(
    vault: Vault, kind: str | None = None, group: str | None = None, status: str | None = None
) -> list[dict[str, Any]]:
    """The memory's entries (private ones left out), as small records."""
    entries = vault.list(group=group, kind=kind, status=status)
    return [_record(e) for e in entries if not e.private and not e.error]


def show(vault: Vault, path: str) -> str:
    """One entry as markdown: its frontmatter and body, `<private>` spans removed; private notes refused."""
    rel = _check_memory(vault, path)
    note = vault.read(rel)
    if note.note.meta.get("private") is True:
        raise Refused(f"{rel} is private: it is never given to an agent", code="private")
    meta = {k: v for k, v in note.note.meta.items() if k not in ("private",)}
    head = "\n".join(f"{k}: {v}" for k, v in meta.items())
    return f"{note.path}\n---\n{head}\n---\n{privacy.strip_private(note.note.body).strip()}\n"


def queue(vault: Vault, area: str) -> list[dict[str, Any]]:
    """What waits in `_review/` or `_inbox/` (for the person to sort; an agent can show it to them)."""
    if area not in (REVIEW, INBOX):
        raise Refused(f"unknown queue {area!r}", code="usage")
    return [_record(e) for e in review.pending(vault, area) if not e.private]


def always_load(vault: Vault, max_chars: int = ALWAYS_CHARS) -> str:
    """The always-load set (what every session starts with), private notes and spans left out."""
    parts, used = [], 0
    for entry in vault.list(status="active"):
        if not entry.always_load or entry.private or entry.error:
            continue
        body = privacy.strip_private(vault.read(entry.path).note.body).strip()
        if body.startswith(f"# {entry.title}"):
            body = body.split("\n", 1)[1].strip() if "\n" in body else ""
        part = f"## {entry.title} ({entry.path})\n{body}\n"
        if used + len(part) > max_chars:
            parts.append(f"(not shown for space: {entry.path})\n")
            continue
        parts.append(part)
        used += len(part)
    if not parts:
        return "The MemoryVault has no always-load entries."
    return "Standing notes from the user's MemoryVault, loaded at every session start:\n\n" + "\n".join(parts)


def _check_memory(vault: Vault, path: str) -> str:
    rel = path.replace("\\", "/").strip().lstrip("/")
    if not vault.in_memory(rel):
        raise Refused(f"{path} is outside {vault.folder}/: an agent reads and changes only the memory", code="outside")
    return rel


def _written(verb: str, result: Any) -> str:
    text = f"{verb} {result.path}"
    if result.commit:
        text += f" (commit {result.commit[:10]})"
    if getattr(result, "warning", None):
        text += f"; note: {result.warning}"
    return text


def _record(entry: Any) -> dict[str, Any]:
    data = dataclasses.asdict(entry)
    return {k: data[k] for k in ("path", "title", "kind", "status", "group", "tags", "always_load", "updated")}
