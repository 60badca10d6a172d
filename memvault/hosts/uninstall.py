"""Undo `hosts.install`: memvault's hooks, trust block or MCP server taken out of each file, and the original
bytes put back when nothing else in the file changed since (or the file deleted, if the install created it)."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memvault.claude import registrations
from memvault.claude import settings as cs
from memvault.claude.installer import BACKUP_SUFFIX, read_bytes, real_path
from memvault.errors import MemvaultError
from memvault.store import disk

from . import codex_toml, places, spec
from .install import (
    MCP_BLOCK,
    MCP_CLIENTS,
    SERVER,
    TRUST_BLOCK,
    Edit,
    Plan,
    decode,
    is_our_server,
    load_manifest,
    manifest_path,
    write_manifest,
)

# ---- uninstalling --------------------------------------------------------------------------------


def plan_uninstall_hooks(host: str) -> Plan:
    if host == spec.GEMINI:
        return Plan(host, [_unmerge(places.gemini_dir() / "settings.json", hooks=True, server=False)])
    if host != spec.CODEX:
        raise MemvaultError(f"unknown host {host!r}: codex or gemini", code="usage")
    home = places.codex_home()
    return Plan(
        host, [_unmerge(home / "hooks.json", hooks=True, server=False), _unblock(home / "config.toml", TRUST_BLOCK)]
    )


def plan_uninstall_mcp(client: str) -> Plan:
    if client not in MCP_CLIENTS:
        raise MemvaultError(f"unknown MCP client {client!r}: {', '.join(MCP_CLIENTS)}", code="usage")
    target = MCP_CLIENTS[client]()
    edit = _unblock(target, MCP_BLOCK) if client == "codex" else _unmerge(target, hooks=False, server=True)
    return Plan(f"mcp:{client}", [edit])


def everywhere() -> Iterator[Plan]:
    """Plans that take every memvault registration out of every agent's file (`uninstall --all`): the hooks,
    trust and MCP entries in each host's and MCP client's usual place, and in every file an install record
    names (an install made with another CODEX_HOME, say). Planned one at a time: apply each plan before
    asking for the next, so two plans on one file (config.toml's two blocks) see each other's result."""
    files: dict[Path, str] = {}
    codex = places.codex_home()
    files[codex / "hooks.json"] = spec.CODEX
    files[codex / "config.toml"] = spec.CODEX
    files[places.gemini_dir() / "settings.json"] = spec.GEMINI
    for client, where in MCP_CLIENTS.items():
        files.setdefault(where(), f"mcp:{client}")
    for _, data in registrations.records():
        file = data.get("file")
        if isinstance(file, str) and file:
            files.setdefault(Path(file), _host_of(data.get("labels")))
    for path, host in files.items():
        if path.suffix == ".toml":
            for block in (TRUST_BLOCK, MCP_BLOCK):
                yield Plan(host, [_unblock(path, block)])
        else:
            yield Plan(host, [_unmerge(path, hooks=True, server=True)])


def _host_of(labels: object) -> str:
    """The host an install record's labels name (`codex-hooks`, `gemini-settings`, `mcp-cursor`…)."""
    for label in labels if isinstance(labels, list) else []:
        if isinstance(label, str) and label.startswith("mcp-"):
            return "mcp:" + label.removeprefix("mcp-")
        if isinstance(label, str) and label.split("-")[0] in spec.HOSTS:
            return label.split("-")[0]
    return "memvault"


def _unmerge(target: Path, *, hooks: bool, server: bool) -> Edit:
    manifest = load_manifest(target)
    before = read_bytes(target)
    if before is None:
        return Edit(target, None, None, manifest or {})
    text = decode(before)
    current = cs.parse(text, str(target))
    data, done = copy.deepcopy(current), []
    if hooks:
        created = frozenset(manifest.get("created_events", [])) if manifest else None
        result = cs.unmerge(
            data, created, manifest.get("created_hooks_key", True) if manifest else True, ours=spec.our_hook
        )
        data = result.data
        done += [f"remove hook {e}" for e in result.removed]
    servers = data.get("mcpServers")
    if server and isinstance(servers, dict) and is_our_server(servers.get(SERVER)):
        del servers[SERVER]
        if not servers and (manifest or {}).get("created_servers_key", True):
            del data["mcpServers"]
        done.append(f"remove the MCP server {SERVER!r}")
    if not done:
        return Edit(target, before, None, manifest or {})
    still_ours = _has_ours(data)
    original = _original_json(manifest)
    if original is not None and data == original[0] and not still_ours:
        after: str | None = "" if original[1] is None else original[1].decode("utf-8")
        done.append(
            "restore the original file byte for byte"
            if original[1] is not None
            else "delete the file (memvault created it)"
        )
    else:
        after = cs.dump(data, like=text)
    edit = Edit(target, before, after, {} if not still_ours else (manifest or {}), done)
    edit.manifest["_restore"] = original is not None and data == original[0] and not still_ours
    return edit


def _unblock(target: Path, name: str) -> Edit:
    manifest = load_manifest(target)
    before = read_bytes(target)
    text = decode(before)
    has_block = codex_toml.block_span(text, name) is not None
    # `install --enable-hooks` may have changed the file outside any block: the backup can still undo that
    flipped = name == TRUST_BLOCK and manifest is not None and "codex-config" in (manifest.get("labels") or [])
    if before is None or not (has_block or flipped):
        return Edit(target, before, None, manifest or {})
    after = codex_toml.without_block(text, name)
    done = [f"remove memvault's {name} block"] if has_block else []
    other = TRUST_BLOCK if name == MCP_BLOCK else MCP_BLOCK
    still_ours = codex_toml.block_span(after, other) is not None
    restore = False
    if manifest and not still_ours:
        outside = hashlib.sha256(codex_toml.outside_blocks(text, TRUST_BLOCK, MCP_BLOCK).encode("utf-8")).hexdigest()
        original = _original_bytes(manifest)
        if outside == manifest.get("outside_sha256") and (original is not None or not manifest.get("existed")):
            after, restore = ("" if original is None else original.decode("utf-8")), True
            done.append(
                "restore the original file byte for byte"
                if original is not None
                else "delete the file (memvault created it)"
            )
    if not done:
        return Edit(target, before, None, manifest or {})
    edit = Edit(target, before, after, (manifest or {}) if still_ours else {}, done)
    edit.manifest["_restore"] = restore
    return edit


def _has_ours(data: dict[str, Any]) -> bool:
    servers = data.get("mcpServers")
    if isinstance(servers, dict) and is_our_server(servers.get(SERVER)):
        return True
    hooks = data.get("hooks")
    return isinstance(hooks, dict) and any(
        spec.our_hook(h) for groups in hooks.values() if isinstance(groups, list)
        for g in groups if isinstance(g, dict) for h in (g.get("hooks") or [])
    )  # fmt: skip


def apply_uninstall(plan: Plan) -> None:
    for edit in plan.edits:
        if edit.after is None:
            continue
        manifest = load_manifest(edit.path)
        restore = edit.manifest.pop("_restore", False)
        if restore and manifest is not None and not manifest.get("existed"):
            disk.remove(real_path(edit.path))
        else:
            disk.atomic_write(real_path(edit.path), edit.after.encode("utf-8"))
        if edit.manifest:  # memvault still has something in this file
            write_manifest(edit.path, edit.manifest)
            continue
        if restore and edit.backup.exists():
            disk.remove(edit.backup)
        if manifest is not None:
            disk.remove(manifest_path(edit.path))


def _original_bytes(manifest: dict[str, Any]) -> bytes | None:
    if not manifest.get("existed"):
        return None
    return read_bytes(Path(manifest["file"] + BACKUP_SUFFIX))


def _original_json(manifest: dict[str, Any] | None) -> tuple[dict[str, Any], bytes | None] | None:
    """The file's data and bytes before the first install, when known."""
    if manifest is None:
        return None
    if not manifest.get("existed"):
        return {}, None
    raw = _original_bytes(manifest)
    if raw is None:
        return None
    try:
        return cs.parse(raw.decode("utf-8-sig"), "the backup"), raw
    except (MemvaultError, UnicodeDecodeError):
        return None
