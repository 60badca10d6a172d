"""Connect Codex CLI and Gemini CLI (hooks), or an MCP client (the `memvault mcp` server), and undo it.

Every file is changed the way Claude Code's settings are (`claude.installer`): planned first, backed
up to `<file>.memvault-backup` before the first change, written atomically, with a manifest in the
state folder recording what the file was before. Other tools' hooks, servers and keys are left as
they are. The undo is `hosts.uninstall`.

What differs per host lives in `hosts.spec` (events, timeouts, shell) and `hosts.codex_toml` (trust).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PureWindowsPath
from typing import Any

from memvault import paths
from memvault.claude import settings as cs
from memvault.claude.installer import BACKUP_SUFFIX, HOOKS_DIR, read_bytes, real_path
from memvault.errors import MemvaultError
from memvault.store import disk

from . import codex_toml, places, spec

SERVER = "memvault"  # the MCP server's name in every client's config
MCP_CLIENTS: dict[str, Callable[[], Path]] = {
    "codex": lambda: places.codex_home() / "config.toml",
    "gemini": lambda: places.gemini_dir() / "settings.json",
    "claude-code": places.claude_json,
    "claude-desktop": places.claude_desktop_config,
    "cursor": places.cursor_mcp,
}
TRUST_BLOCK, MCP_BLOCK = "hook-trust", "mcp"


@dataclass
class Edit:
    """One file: its bytes now, the new text (None: unchanged), and its manifest after the change."""

    path: Path
    before: bytes | None
    after: str | None
    manifest: dict[str, Any]
    done: list[str] = field(default_factory=list)  # what changes, in words
    first: bool = True  # no install recorded for this file yet: back it up before changing it

    def __post_init__(self) -> None:
        self.first = load_manifest(self.path) is None

    @property
    def writes_backup(self) -> bool:
        return self.first and self.before is not None and self.after is not None

    @property
    def backup(self) -> Path:
        return self.path.with_name(self.path.name + BACKUP_SUFFIX)


@dataclass
class Plan:
    host: str
    edits: list[Edit]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # said after the changes (what the user may do next)

    @property
    def changed(self) -> bool:
        return any(e.after is not None for e in self.edits)

    def as_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "files": [{"path": str(e.path), "changes": e.done, "changed": e.after is not None} for e in self.edits],
            "warnings": self.warnings,
            "notes": self.notes,
            "changed": self.changed,
        }


# ---- the hook and server entries -----------------------------------------------------------------


def interpreter() -> PurePath:
    exe = os.path.abspath(sys.executable) if sys.executable else ""
    return PureWindowsPath(exe) if os.name == "nt" else PurePath(exe)


def flavour(host: str, python: PurePath) -> str:
    """The shell the host runs a hook command with: bash/sh on POSIX; on Windows PowerShell (Gemini) or cmd (Codex)."""
    if not isinstance(python, PureWindowsPath):
        return "posix"
    return "powershell" if host == spec.GEMINI else "cmd"


def hook_entries(host: str, python: PurePath, hooks_dir: PurePath) -> dict[str, dict[str, Any]]:
    """Our group per host event: one shell string (both hosts ignore `args`) running the host launcher."""
    known = spec.HOSTS[host]
    launcher = str(hooks_dir / f"{spec.LAUNCHER}.py")
    entries: dict[str, dict[str, Any]] = {}
    for event in known.events:
        handler: dict[str, Any] = {"type": "command"}
        if host == spec.GEMINI:
            handler["name"] = f"memvault-{event.name}"
        handler["command"] = spec.shell_command(
            [str(python), *cs.INTERPRETER_FLAGS, launcher, host, event.name], flavour(host, python)
        )
        handler["timeout"] = known.timeout(event)
        group: dict[str, Any] = {"matcher": event.matcher} if event.matcher else {}
        group["hooks"] = [handler]
        entries[event.name] = group
    return entries


PASSED_ENV = ("MEMVAULT_HOME", "MEMVAULT_CONFIG")  # where memvault's config lives, when not in the default place


def server_entry(python: PurePath) -> dict[str, Any]:
    """`memvault mcp` over stdio, run by this Python (no PATH lookup, no shell). Clients start servers with a
    reduced environment (Codex does not pass MEMVAULT_HOME on), so a config location set here goes along."""
    entry: dict[str, Any] = {"command": str(python), "args": ["-m", "memvault", "mcp"]}
    env = {k: os.environ[k] for k in PASSED_ENV if os.environ.get(k)}
    if env:
        entry["env"] = env
    return entry


def is_our_server(entry: Any) -> bool:
    args = entry.get("args") if isinstance(entry, dict) else None
    return isinstance(args, list) and args[-3:] == ["-m", "memvault", "mcp"]


# ---- planning ------------------------------------------------------------------------------------


def plan_hooks(
    host: str,
    *,
    trust: bool = False,
    enable: bool = False,
    python: PurePath | None = None,
    hooks_dir: PurePath | None = None,
) -> Plan:
    """Merge our hooks into the host's config. Codex: hooks.json; with the user's consent also config.toml,
    `trust` (memvault's trust entries) and `enable` (turn `[features] hooks` back on where it is set false)."""
    python, hooks_dir = python or interpreter(), hooks_dir or HOOKS_DIR
    cs.check_interpreter(python)
    entries = hook_entries(host, python, hooks_dir)
    if host == spec.GEMINI:
        target = places.gemini_dir() / "settings.json"
        plan = Plan(host, [_merge_hooks(target, entries, f"{host}-settings")])
        plan.notes.append("Gemini CLI runs user hooks without a trust step; new sessions pick them up")
        return plan
    if host != spec.CODEX:
        raise MemvaultError(f"unknown host {host!r}: codex or gemini", code="usage")
    home = places.codex_home()
    hooks_edit = _merge_hooks(home / "hooks.json", entries, "codex-hooks")
    plan = Plan(host, [hooks_edit])
    merged = json.loads(hooks_edit.after) if hooks_edit.after is not None else _json_data(hooks_edit.before)
    config = home / "config.toml"
    before = read_bytes(config)
    text = decode(before)
    data = codex_toml.parse(text, str(config))
    new, done = text, []
    if codex_toml.hooks_disabled(data):
        if enable:
            new = codex_toml.enable_hooks(new)
            done.append("switch [features] hooks back on")
        else:
            plan.warnings.append(
                f"hooks are switched off in {config} ([features] hooks = false): Codex runs no hooks, memvault's "
                "included; `--enable-hooks` sets it to true (or edit the file)"
            )
    outside = codex_toml.parse(codex_toml.without_block(text, TRUST_BLOCK), str(config))  # what the user trusted
    tables, trusted = _trust_tables(str(os.path.abspath(home / "hooks.json")), merged, outside)
    if trust or codex_toml.block_span(text, TRUST_BLOCK) is not None:  # consent given now, or at an earlier install
        new = codex_toml.with_block(new, TRUST_BLOCK, tables) if tables else codex_toml.without_block(new, TRUST_BLOCK)
        done.append("mark memvault's hooks as trusted")
    if new != text:
        plan.edits.append(_text_edit(config, before, new, "codex-config", " and ".join(done)))
    if not trusted and not trust and codex_toml.block_span(text, TRUST_BLOCK) is None:
        plan.notes.append(
            "Codex CLI skips hooks until they are trusted: run `memvault install --host codex --trust-hooks` to "
            "mark memvault's hooks trusted in config.toml, or review them in Codex's /hooks"
        )
    return plan


def codex_hooks_disabled() -> bool:
    """Whether Codex's config.toml switches hooks off (an unreadable file counts as not: planning will say why)."""
    raw = read_bytes(places.codex_home() / "config.toml")
    try:
        return raw is not None and codex_toml.hooks_disabled(codex_toml.parse(decode(raw), "config.toml"))
    except MemvaultError:
        return False


def trusted_before() -> bool:
    """Whether an earlier install wrote memvault's hook-trust block into Codex's config.toml."""
    raw = read_bytes(places.codex_home() / "config.toml")
    return raw is not None and codex_toml.block_span(decode(raw), TRUST_BLOCK) is not None


def _trust_tables(hooks_file: str, hooks_data: dict[str, Any], config: dict[str, Any]) -> tuple[str, bool]:
    """The `[hooks.state]` tables that trust our handlers (those not trusted already outside our block)."""
    state = config.get("hooks", {}).get("state", {}) if isinstance(config.get("hooks"), dict) else {}
    lines, all_trusted = [], True
    for event, groups in (hooks_data.get("hooks") or {}).items():
        for gi, group in enumerate(groups if isinstance(groups, list) else []):
            for hi, handler in enumerate(group.get("hooks") or [] if isinstance(group, dict) else []):
                if not spec.our_hook(handler):
                    continue
                key, digest = (
                    codex_toml.trust_key(hooks_file, event, gi, hi),
                    codex_toml.trust_hash(event, group, handler),
                )
                known = state.get(key) if isinstance(state, dict) else None
                if isinstance(known, dict) and known.get("trusted_hash") == digest:
                    continue  # the user trusted it already (in Codex's /hooks): nothing to add
                all_trusted = False
                lines += [f"[hooks.state.{codex_toml.string(key)}]", f"trusted_hash = {codex_toml.string(digest)}", ""]
    return "\n".join(lines), all_trusted


def plan_mcp(client: str, *, approve: bool | None = None, python: PurePath | None = None) -> Plan:
    """Register `memvault mcp` with one MCP client that reads a config file.

    `approve`: tool calls run without a confirmation (Codex, Gemini); None keeps what an earlier install chose.
    """
    if client not in MCP_CLIENTS:
        raise MemvaultError(f"unknown MCP client {client!r}: {', '.join(MCP_CLIENTS)}", code="usage")
    python = python or interpreter()
    cs.check_interpreter(python)
    target = MCP_CLIENTS[client]()
    plan = Plan(f"mcp:{client}", [])
    if client == "codex":
        before = read_bytes(target)
        text = decode(before)
        outside = codex_toml.parse(codex_toml.without_block(text, MCP_BLOCK), str(target))
        if SERVER in (outside.get("mcp_servers") or {}):
            raise MemvaultError(
                f"{target} already has an MCP server named {SERVER!r} that memvault did not write", code="install"
            )
        if approve is None:
            approve = "default_tools_approval_mode" in text[slice(*(codex_toml.block_span(text, MCP_BLOCK) or (0, 0)))]
        entry = server_entry(python)
        body = [f"[mcp_servers.{SERVER}]", f"command = {codex_toml.string(entry['command'])}",
                "args = [" + ", ".join(codex_toml.string(a) for a in entry["args"]) + "]",
                "startup_timeout_sec = 30", "tool_timeout_sec = 60"]  # fmt: skip
        if entry.get("env"):
            pairs = ", ".join(f"{k} = {codex_toml.string(v)}" for k, v in entry["env"].items())
            body.append(f"env = {{ {pairs} }}")
        if approve:
            body.append('default_tools_approval_mode = "approve"')
        new = codex_toml.with_block(text, MCP_BLOCK, "\n".join(body))
        plan.edits.append(_text_edit(target, before, new, "mcp-codex", f"register the MCP server {SERVER!r}"))
    else:
        entry = server_entry(python)
        if client == "gemini":
            entry["timeout"] = 60000
            if approve is None:
                servers = _json_data(read_bytes(target)).get("mcpServers")
                earlier = servers.get(SERVER) if isinstance(servers, dict) else None
                approve = isinstance(earlier, dict) and earlier.get("trust") is True
            if approve:
                entry["trust"] = True  # tool calls run without a confirmation prompt
        plan.edits.append(_merge_server(target, entry, f"mcp-{client}"))
    if approve is False and client in ("codex", "gemini"):
        plan.notes.append(
            f"{client} asks before each memvault tool call; `--approve-tools` lets them run without asking "
            f"(needed for headless runs such as `{'codex exec' if client == 'codex' else 'gemini -p'}`)"
        )
    return plan


def _merge_hooks(target: Path, entries: dict[str, dict[str, Any]], label: str) -> Edit:
    before = read_bytes(target)
    text = decode(before)
    current = cs.parse(text, str(target))
    merged = cs.merge(current, entries, ours=spec.our_hook)
    after = cs.dump(merged.data, like=text) if merged.changed else None
    hooks = current.get("hooks") if isinstance(current.get("hooks"), dict) else None
    created = {
        "created_hooks_key": hooks is None,
        "created_events": [e for e in merged.added if hooks is None or e not in hooks],
    }
    edit = Edit(target, before, after, _manifest(target, label, before, created))
    edit.done = [f"add hook {e}" for e in merged.added] + [f"update hook {e}" for e in merged.updated]
    return edit


def _merge_server(target: Path, entry: dict[str, Any], label: str) -> Edit:
    before = read_bytes(target)
    text = decode(before)
    current = cs.parse(text, str(target))
    servers = current.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise MemvaultError(f'{target}: "mcpServers" must be an object; nothing was written', code="install")
    existing = (servers or {}).get(SERVER)
    if existing is not None and not is_our_server(existing):
        raise MemvaultError(
            f"{target} already has an MCP server named {SERVER!r} that memvault did not write", code="install"
        )
    data = copy.deepcopy(current)
    data.setdefault("mcpServers", {})
    if not isinstance(data["mcpServers"], dict):
        data["mcpServers"] = {}
    data["mcpServers"][SERVER] = entry
    after = cs.dump(data, like=text) if data != current else None
    edit = Edit(target, before, after, _manifest(target, label, before, {"created_servers_key": servers is None}))
    edit.done = [f"register the MCP server {SERVER!r}"] if after is not None else []
    return edit


def _text_edit(target: Path, before: bytes | None, new: str, label: str, what: str) -> Edit:
    old = decode(before)
    after = new if new != old else None
    outside = codex_toml.outside_blocks(new, TRUST_BLOCK, MCP_BLOCK)
    extra = {"outside_sha256": hashlib.sha256(outside.encode("utf-8")).hexdigest()}
    return Edit(target, before, after, _manifest(target, label, before, extra), [what] if after is not None else [])


def _manifest(target: Path, label: str, before: bytes | None, created: dict[str, Any]) -> dict[str, Any]:
    """The file's install record: its state before the first install is kept across re-installs."""
    old = load_manifest(target)
    if old is None:
        base: dict[str, Any] = {"existed": before is not None, **created}
    else:
        base = {k: v for k, v in old.items() if k not in ("version", "file", "labels", "outside_sha256")}
        for key, value in created.items():
            if key == "created_events":
                base[key] = sorted(set(base.get(key) or []) | set(value))
            elif key != "outside_sha256":
                base.setdefault(key, value)
    labels = sorted(set((old or {}).get("labels") or []) | {label})
    extra = {"outside_sha256": created["outside_sha256"]} if "outside_sha256" in created else {}
    return {"version": 1, "file": str(target), "labels": labels, **base, **extra}


# ---- applying ------------------------------------------------------------------------------------


def apply(plan: Plan) -> None:
    """Write the plan: per file the backup (before its first change), the new text, the manifest."""
    for edit in plan.edits:
        if edit.after is None:
            continue
        if read_bytes(edit.path) != edit.before:
            raise MemvaultError(f"{edit.path} changed while installing; run the command again", code="install")
        if edit.writes_backup and edit.before is not None:
            disk.atomic_write(edit.backup, edit.before)
        edit.path.parent.mkdir(parents=True, exist_ok=True)
        disk.atomic_write(real_path(edit.path), edit.after.encode("utf-8"))
        write_manifest(edit.path, edit.manifest)


# ---- manifests and small helpers -----------------------------------------------------------------


def manifest_path(target: Path) -> Path:
    digest = hashlib.sha256(str(target).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return paths.state_dir() / "installs" / f"{target.name}-{digest}.json"


def load_manifest(target: Path) -> dict[str, Any] | None:
    raw = read_bytes(manifest_path(target))
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        return None
    return data if isinstance(data, dict) and data.get("file") == str(target) else None


def write_manifest(target: Path, data: dict[str, Any]) -> None:
    path = manifest_path(target)
    paths.ensure_private_dir(path.parent)
    clean = {k: v for k, v in data.items() if not k.startswith("_")}
    disk.atomic_write(path, (json.dumps(clean, indent=2) + "\n").encode("utf-8"), private=True)


def decode(raw: bytes | None) -> str:
    return raw.decode("utf-8-sig") if raw is not None else ""


def _json_data(raw: bytes | None) -> dict[str, Any]:
    return cs.parse(decode(raw), "hooks.json")
